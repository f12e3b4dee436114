"""The docs site, built once per test process for a few papers (shared by test_site.py and test_browser.py).

`ICLRBENCH_SITE_TEST_PAPERS=slug1,slug2` chooses the papers (default: two quick ones); the notebooks run through
the runner into a temporary folder, two kernels at a time, as `iclrbench docs --jobs 2` would run them.
`ICLRBENCH_SITE_DIR=_site` checks a site that `iclrbench docs` already built instead (CI builds the whole site with
the command, then runs the browser tests against it), and its papers are every paper with a page there.
`ICLRBENCH_CI_SETTINGS` (set by .ci/run) builds the test site from the CI pass's stored notebook runs instead."""
from __future__ import annotations

import atexit, functools, os, shutil, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def site_papers() -> list[str]:
    from iclrbench.core import paper_slugs
    slugs = paper_slugs()
    if os.environ.get("ICLRBENCH_SITE_DIR"):
        pages = Path(os.environ["ICLRBENCH_SITE_DIR"]) / "papers"
        return [s for s in slugs if (pages / f"{s}.html").is_file()]
    env = [s.strip() for s in os.environ.get("ICLRBENCH_SITE_TEST_PAPERS", "").split(",") if s.strip()]
    if env:
        unknown = [s for s in env if s not in slugs]
        if unknown: raise ValueError(f"ICLRBENCH_SITE_TEST_PAPERS names unknown papers {unknown}; available: {slugs}")
        return env
    quick = [s for s in ("rawlsian_policies", "mixmax") if s in slugs]
    return quick or slugs[:2]


@functools.lru_cache(maxsize=None)
def built_site():
    """`SiteReport` of a site built from fresh smoke runs of `site_papers()` (once per process)."""
    from iclrbench.core.settings import load_settings
    from iclrbench.site.builder import SiteReport, build_site
    given = os.environ.get("ICLRBENCH_SITE_DIR")
    if given:
        out = Path(given).resolve()
        if not (out / "index.html").is_file():
            raise FileNotFoundError(f"ICLRBENCH_SITE_DIR={given!r} holds no index.html: build it with `iclrbench docs --out {given}`")
        pages = sorted(out.rglob("*.html"))
        return SiteReport(out=out, pages=pages, size_bytes=sum(p.stat().st_size for p in out.rglob("*") if p.is_file()))
    tmp = Path(tempfile.mkdtemp(prefix="iclrbench-site-test-"))
    atexit.register(shutil.rmtree, tmp, True)
    ci = os.environ.get("ICLRBENCH_CI_SETTINGS")
    if ci:   # .ci/run has executed every notebook once (widget state kept): build from those runs, run nothing again
        t0 = time.perf_counter()
        report = build_site(tmp / "_site", slugs=site_papers(), jobs=2, settings=load_settings(ci), reuse=True, log=print)   # benchmarks: what .ci/run's quick `iclrbench bench` stored
        print(f"{report.summary()} (test build from the CI notebook pass, {time.perf_counter() - t0:.1f} s)")
        return report
    ini = tmp / "settings.ini"
    ini.write_text(f"[run]\noutput_dir = {tmp / 'runs'}\nledger = {tmp / 'runs' / 'ledger.sqlite'}\n"
                   f"nbs_path = {ROOT / 'nbs' / 'papers'}\n")
    t0 = time.perf_counter()
    report = build_site(tmp / "_site", slugs=site_papers(), jobs=2, settings=load_settings(ini), log=print)
    print(f"{report.summary()} (test build, {time.perf_counter() - t0:.1f} s)")
    return report
