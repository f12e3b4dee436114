"""Run every torch paper's smoke miniature on a GPU and compare it with the CPU (issue 23).

    .venv/bin/python scripts/gpu_check.py [--device cuda] [--out gpu_check.json] [SLUG ...]

For each paper with a `device` parameter: the smoke run on `--device` (seed 0), its wall time, and each claim's
outcome beside the CPU outcome recorded in tests/expected_smoke_outcomes.json. GPU numbers differ from CPU ones in
the last bits (other kernels, other random streams for generators on the GPU), so an outcome may flip where a claim
sits on its threshold: the table says where. A failing paper is reported and the next one runs. Needs a GPU; CI
never runs it."""
from __future__ import annotations

import argparse, json, time, traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slugs", nargs="*", help="papers (default: every paper with a device parameter)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="gpu_check.json")
    a = ap.parse_args(argv)
    from iclrbench.core import load_paper, paper_slugs
    from iclrbench.core.runtime import get_device
    get_device(a.device)                                    # a clear error when the device is missing
    expected = json.loads((ROOT / "tests" / "expected_smoke_outcomes.json").read_text())
    report = {}
    for slug in a.slugs or paper_slugs():
        mod = load_paper(slug)
        if "device" not in {p.name for p in mod.PARAMS}: continue
        t0 = time.perf_counter()
        try:
            r = mod.run("smoke", seed=0, progress=False, device=a.device)
            rows = {c.id: {"gpu": c.status, "cpu": expected.get(slug, {}).get(c.id), "measured": c.measured} for c in r.claims}
            report[slug] = {"wall_s": round(time.perf_counter() - t0, 1), "claims": rows}
            flips = [k for k, v in rows.items() if v["gpu"] != v["cpu"]]
            print(f"{slug:28s} {report[slug]['wall_s']:7.1f} s  {'same outcomes as CPU' if not flips else 'differs: ' + ', '.join(flips)}", flush=True)
        except Exception as e:
            report[slug] = {"wall_s": round(time.perf_counter() - t0, 1), "error": f"{type(e).__name__}: {e}",
                            "traceback": traceback.format_exc()}
            print(f"{slug:28s} FAILED: {type(e).__name__}: {e}", flush=True)
        Path(a.out).write_text(json.dumps(report, indent=1))
    return 1 if any("error" in v for v in report.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
