"""Fault injection: nothing lost, nothing deleted, every bad input a clear error (issue 21).

Each test breaks one thing on purpose (a damaged ledger, a read-only or occupied folder, Ctrl-C or SIGKILL in the middle
of a run, two runs in the same microsecond, a bad settings.ini, bad input through the CLI, papermill and the API) and
checks the outcome: a one-line error naming the thing and what is allowed (exit 2) before any kernel starts, or a run
that is recorded and kept. Corpus sizes are counted by `test_corpus_sizes` for the issue's note."""
from __future__ import annotations

import json, math, os, shutil, signal, sqlite3, subprocess, sys, threading, time
from pathlib import Path

import numpy as np
import pytest
from conftest import stand_in_notebook

from iclrbench.core import load_paper, resolve_params
from iclrbench.core.records import SEED_MAX, derived_seed, validate_seed
from iclrbench.core.registry import paper_card
from iclrbench.core.settings import load_settings
from iclrbench.run import cli
from iclrbench.run.ledger import RUN_MARKER, Ledger, LedgerError, ledger_problem, repair_ledger
from iclrbench.run.runner import export_html, new_run_folder

ROOT = Path(__file__).resolve().parents[1]
CLI = [str(Path(sys.executable).parent / "iclrbench")]
PAPERMILL = str(Path(sys.executable).parent / "papermill")
CHEAP = "rawlsian_policies"            # the cheapest paper notebook to start


def _ini(tmp: Path, extra: str = "", nbs: Path | None = None) -> Path:
    ini = tmp / "settings.ini"
    ini.write_text(f"[run]\noutput_dir = {tmp / 'runs'}\nledger = {tmp / 'runs' / 'ledger.sqlite'}\n"
                   f"nbs_path = {nbs or ROOT / 'nbs' / 'papers'}\n{extra}")
    return ini


def _main(args, capsys) -> tuple[int, list[str], str]:
    "Run the CLI in this process: exit status, non-empty stderr lines, stdout."
    rc = cli.main(list(args))
    out = capsys.readouterr()
    return rc, [l for l in out.err.splitlines() if l.strip()], out.out


def _one_line_error(rc, err, *needles):
    assert rc == 2, (rc, err)
    assert len(err) == 1 and err[0].startswith("iclrbench: error:"), err
    for n in needles: assert n in err[0], (n, err[0])


def _no_run_folders(tmp: Path) -> bool:
    runs = tmp / "runs"
    return not runs.exists() or not any(runs.rglob(RUN_MARKER))


# ---------------------------------------------------------------------------------------------- 1. docs --out
def _checkout_like(tmp: Path) -> Path:
    repo = tmp / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    (repo / "notes.txt").write_text("uncommitted work")
    (repo / "runs").mkdir()
    (repo / "runs" / "ledger.sqlite").write_bytes(b"")
    return repo


DOCS_OUT = ["dot", "parent", "checkout", "foreign", "runs", "ledger_folder", "notebooks", "home", "file"]


@pytest.mark.parametrize("case", DOCS_OUT)
def test_docs_out_never_deletes_what_it_did_not_make(tmp_path, capsys, monkeypatch, case):
    repo = _checkout_like(tmp_path)
    ini = _ini(tmp_path)
    foreign = tmp_path / "photos"; foreign.mkdir(); (foreign / "cat.jpg").write_bytes(b"\xff\xd8 a cat")
    (tmp_path / "a_file.txt").write_text("keep me")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("HOME", str(tmp_path / "home")); (tmp_path / "home").mkdir(); (tmp_path / "home" / "x").write_text("x")
    out = {"dot": ".", "parent": "..", "checkout": str(repo), "foreign": str(foreign), "runs": str(tmp_path / "runs"),
           "ledger_folder": str(tmp_path), "notebooks": str(ROOT / "nbs"), "home": str(tmp_path / "home"),
           "file": str(tmp_path / "a_file.txt")}[case]
    (tmp_path / "runs").mkdir(exist_ok=True); Ledger(tmp_path / "runs" / "ledger.sqlite")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    rc, err, _ = _main(["--settings", str(ini), "docs", "--offline-html", "--out", out], capsys)
    _one_line_error(rc, err, "refusing to build the docs site", "nothing was deleted")
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before          # not one file touched
    assert (repo / "notes.txt").read_text() == "uncommitted work" and (foreign / "cat.jpg").exists()


def test_docs_build_replaces_only_its_own_site_and_an_interrupted_build_keeps_the_old_one(tmp_path, monkeypatch):
    from iclrbench.site import builder
    ini = _ini(tmp_path)
    settings = load_settings(ini)
    runs = {CHEAP: builder.SiteRun(CHEAP, "missing")}
    site = tmp_path / "site"
    rep = builder.build_site(site, slugs=[CHEAP], settings=settings, vendor=False, runs=runs, log=lambda m: None)
    assert rep.out == site.resolve() and (site / builder.SITE_MARKER).is_file() and (site / "index.html").is_file()
    (site / "index.html").write_text("OLD SITE")
    def boom(*a, **k): raise KeyboardInterrupt
    monkeypatch.setattr(builder, "site_claim_rows", boom)                    # Ctrl-C half-way through the build
    with pytest.raises(KeyboardInterrupt):
        builder.build_site(site, slugs=[CHEAP], settings=settings, vendor=False, runs=runs, log=lambda m: None)
    assert (site / "index.html").read_text() == "OLD SITE"                   # the old site is intact
    assert [p.name for p in tmp_path.iterdir() if ".building-" in p.name or ".old-" in p.name] == []
    monkeypatch.undo()
    builder.build_site(site, slugs=[CHEAP], settings=settings, vendor=False, runs=runs, log=lambda m: None)
    assert (site / "index.html").read_text() != "OLD SITE"                   # a finished build replaces it


# ------------------------------------------------------------------------------ 2. ledger and file-system faults
def _valid_ledger_bytes(tmp: Path) -> bytes:
    p = tmp / "valid.sqlite"
    Ledger(p).record(run_id="r", slug=CHEAP, scale="smoke", seed=0, status="ok", params={})
    return p.read_bytes()


def _corrupt(kind: str, path: Path, tmp: Path) -> None:
    good = _valid_ledger_bytes(tmp)
    if kind == "garbage": path.write_bytes(os.urandom(4096))
    elif kind == "text": path.write_text("this is not a database\n" * 100)
    elif kind == "truncated": path.write_bytes(good[:1500])
    elif kind == "header_only": path.write_bytes(good[:100])
    elif kind == "zeroed_pages": path.write_bytes(good[:100] + b"\x00" * (len(good) - 100))
    elif kind == "wrong_schema":
        con = sqlite3.connect(path); con.execute("CREATE TABLE runs (a INTEGER, b TEXT)"); con.commit(); con.close()
    elif kind == "other_database":
        con = sqlite3.connect(path); con.execute("CREATE TABLE photos (id INTEGER, name TEXT)"); con.commit(); con.close()
    elif kind == "folder": path.mkdir()
    else: raise ValueError(kind)


CORRUPT = ["garbage", "text", "truncated", "header_only", "zeroed_pages", "wrong_schema", "other_database", "folder"]


@pytest.mark.parametrize("kind", CORRUPT)
def test_a_damaged_ledger_is_one_line_before_any_kernel_and_repair_keeps_everything(tmp_path, capsys, kind):
    ini = _ini(tmp_path)
    (tmp_path / "runs").mkdir()
    ledger = tmp_path / "runs" / "ledger.sqlite"
    _corrupt(kind, ledger, tmp_path)
    snapshot = ledger.read_bytes() if ledger.is_file() else None
    # a finished run's folder that the repair must index
    done = tmp_path / "runs" / CHEAP / "done-run"; done.mkdir(parents=True)
    (done / RUN_MARKER).write_text(json.dumps({"run_id": "done-run", "slug": CHEAP, "scale": "smoke", "seed": 3}))
    (done / "result.json").write_text(json.dumps({"slug": CHEAP, "scale": "smoke", "seed": 3, "params": {},
                                                  "metrics": {"m": 1.5}, "timings": {},
                                                  "claims": [{"id": "c", "statement": "s", "paper_value": "", "metric": "m",
                                                              "status": "held", "measured": "1.5"}]}))
    for cmd in (["claims"], ["run", CHEAP], ["reproduce", "--only", CHEAP], ["runs", "list"], ["ledger", "check"]):
        rc, err, _ = _main(["--settings", str(ini), *cmd], capsys)
        _one_line_error(rc, err, str(ledger), "ledger repair")
    assert sorted(p.name for p in (tmp_path / "runs" / CHEAP).iterdir()) == ["done-run"]      # nothing ran
    # repair needs consent: without --yes (and no terminal) the file stays exactly as it was
    rc, err, _ = _main(["--settings", str(ini), "ledger", "repair"], capsys)
    _one_line_error(rc, err, "--yes")
    assert (ledger.read_bytes() == snapshot) if snapshot is not None else ledger.is_dir()
    rc, err, out = _main(["--settings", str(ini), "ledger", "repair", "--yes"], capsys)
    assert rc == 0 and "1 run(s) re-indexed" in out, (out, err)
    moved = [p for p in (tmp_path / "runs").iterdir() if p.name.startswith("ledger.sqlite.corrupt-")]
    assert len(moved) == 1 and ((moved[0].read_bytes() == snapshot) if snapshot is not None else moved[0].is_dir())
    rows = Ledger(ledger).rows()
    assert [(r["run_id"], r["status"], r["metrics"]) for r in rows] == [("done-run", "ok", {"m": 1.5})]
    rc, err, out = _main(["--settings", str(ini), "claims"], capsys)
    assert rc == 0 and CHEAP in out


def test_rows_with_damaged_json_still_read(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.record(run_id="r", slug="p", scale="smoke", seed=0, status="ok", params={}, metrics={"m": 1})
    con = sqlite3.connect(tmp_path / "l.sqlite"); con.execute("UPDATE runs SET metrics = '{not json', claims = 'x'"); con.commit()
    assert [(r["metrics"], r["claims"]) for r in led.rows()] == [({}, [])]


def test_unwritable_output_folder_or_ledger_is_one_line_before_any_kernel(tmp_path, capsys):
    blocker = tmp_path / "blocker"; blocker.write_text("a file where a folder should be")
    for extra, needle in ((f"output_dir = {blocker}/runs\nledger = {tmp_path}/l.sqlite\n", "cannot write runs to"),
                          (f"output_dir = {tmp_path}/runs\nledger = {blocker}/ledger.sqlite\n", "ledger")):
        ini = tmp_path / "s.ini"
        ini.write_text(f"[run]\n{extra}nbs_path = {ROOT / 'nbs' / 'papers'}\n")
        rc, err, _ = _main(["--settings", str(ini), "run", CHEAP], capsys)
        _one_line_error(rc, err, needle, str(blocker))


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into read-only folders")
def test_read_only_runs_folder_is_one_line(tmp_path, capsys):
    ini = _ini(tmp_path)
    (tmp_path / "runs").mkdir(); Ledger(tmp_path / "runs" / "ledger.sqlite")
    os.chmod(tmp_path / "runs" / "ledger.sqlite", 0o444); os.chmod(tmp_path / "runs", 0o555)
    try:
        rc, err, _ = _main(["--settings", str(ini), "run", CHEAP], capsys)
        _one_line_error(rc, err, str(tmp_path / "runs"))
    finally: os.chmod(tmp_path / "runs", 0o755)


def test_a_ledger_that_breaks_after_the_run_keeps_the_run(tmp_path, monkeypatch):
    """The run finished but its row cannot be completed: its folder and result stay, and repair indexes it."""
    from iclrbench.run import runner
    nbs = _sleepy_notebooks(tmp_path, seconds=0)
    settings = load_settings(_ini(tmp_path, nbs=nbs))
    def broken(self, *a, **k): raise LedgerError("the disk is full")
    monkeypatch.setattr(runner.Ledger, "finish", broken)
    rec = runner.run_paper(CHEAP, {}, settings=settings, html=False)
    assert rec.status == "ok" and rec.ledger_error == "the disk is full" and (rec.run_dir / "result.json").exists()
    monkeypatch.undo()
    assert repair_ledger(settings.ledger_path, settings.output_dir).already == 1   # its row exists (running → interrupted)


# ------------------------------------------------------------------------------------- 3. interrupted runs
def _sleepy_notebooks(tmp: Path, seconds: float) -> Path:
    "A stand-in for the cheap paper's notebook: its parameters cell, then a result, a 'started' file and a sleep."
    return stand_in_notebook(tmp / "nbs", CHEAP, (
        "import os, time\n"
        "from iclrbench.core import Result\n"
        f"Result(slug={CHEAP!r}, scale=scale, seed=seed, params={{}}, metrics={{'m': 1.0}}).to_json(os.environ['ICLRBENCH_RESULT_PATH'])\n"
        "open('started', 'w').close()\n"
        f"time.sleep({seconds})\n"))


def _kernels_using(folder: str) -> list[int]:
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit(): continue
        try: cmd = (p / "cmdline").read_bytes().decode(errors="replace")
        except OSError: continue
        if folder in cmd: pids.append(int(p.name))
    return pids


def _start_sleepy_run(tmp: Path) -> tuple[subprocess.Popen, Path]:
    nbs = _sleepy_notebooks(tmp, seconds=120)
    env = {**os.environ, "ICLRBENCH_SETTINGS": str(_ini(tmp, nbs=nbs))}
    env.pop("ICLRBENCH_RESULT_PATH", None)
    proc = subprocess.Popen(CLI + ["run", CHEAP, "--no-html"], env=env, cwd=tmp, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        started = list((tmp / "runs").rglob("started")) if (tmp / "runs").exists() else []
        if started: return proc, started[0].parent
        if proc.poll() is not None: pytest.fail(f"the run ended early: {proc.communicate()}")
        time.sleep(0.2)
    proc.kill(); pytest.fail("the sleepy notebook never started")


@pytest.mark.slow
def test_ctrl_c_prints_one_line_records_interrupted_and_cleans_up_the_kernel(tmp_path):
    proc, run_dir = _start_sleepy_run(tmp_path)
    kernel_dir = json.loads((run_dir / RUN_MARKER).read_text())["kernel_dir"]
    assert Path(kernel_dir).is_dir() and _kernels_using(kernel_dir)
    rows = Ledger(tmp_path / "runs" / "ledger.sqlite").rows()
    assert [r["status"] for r in rows] == ["running"]                    # a started run is in the ledger
    os.killpg(proc.pid, signal.SIGINT)                                    # Ctrl-C in a terminal: the whole group
    out, err = proc.communicate(timeout=60)
    lines = [l for l in err.splitlines() if l.strip()]
    assert proc.returncode == 130 and len(lines) == 1 and lines[0].startswith("iclrbench: interrupted"), err
    assert "Traceback" not in out + err
    rows = Ledger(tmp_path / "runs" / "ledger.sqlite").rows()
    assert [r["status"] for r in rows] == ["interrupted"] and rows[0]["finished"]
    assert (run_dir / "result.json").exists()                             # what it wrote is kept
    assert not Path(kernel_dir).exists()                                   # connection file and IPC sockets gone
    time.sleep(0.5)
    assert _kernels_using(kernel_dir) == []                                # and no kernel left running


@pytest.mark.slow
def test_a_killed_run_reads_as_interrupted_and_repair_does_not_duplicate_it(tmp_path, capsys):
    proc, run_dir = _start_sleepy_run(tmp_path)
    kernel_dir = json.loads((run_dir / RUN_MARKER).read_text())["kernel_dir"]
    os.kill(proc.pid, signal.SIGKILL)                                     # kill -9 the CLI process only
    proc.communicate(timeout=30)
    try:
        led = Ledger(tmp_path / "runs" / "ledger.sqlite")
        rows = led.rows()
        assert [r["status"] for r in rows] == ["interrupted"] and "process ended" in rows[0]["error"]
        rc, err, out = _main(["--settings", str(tmp_path / "settings.ini"), "claims"], capsys)
        assert rc == 0 and "interrupted" in out
        assert repair_ledger(led.path, tmp_path / "runs").added == [] and len(led.rows()) == 1
    finally:
        for pid in _kernels_using(kernel_dir):                            # the orphaned kernel of the killed run
            with __import__("contextlib").suppress(OSError): os.kill(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- 4. run folders never collide
def test_runs_in_the_same_microsecond_get_their_own_folders(tmp_path, monkeypatch):
    import datetime as dt
    from iclrbench.run import runner
    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz=None): return dt.datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=tz)
    monkeypatch.setattr(runner._dt, "datetime", Frozen)
    made: list[Path] = []
    def make():
        for _ in range(25): made.append(new_run_folder(tmp_path / "p", "p", "smoke", 0)[1])
    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert len(made) == 100 and len(set(made)) == 100 and all(p.is_dir() for p in made)


def test_concurrent_processes_never_share_a_run_folder(tmp_path):
    code = ("import sys; from pathlib import Path; from iclrbench.run.runner import new_run_folder\n"
            "print('\\n'.join(str(new_run_folder(Path(sys.argv[1]), 'p', 'smoke', 0)[1]) for _ in range(30)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True) for _ in range(3)]
    folders = [l for p in procs for l in p.communicate()[0].split()]
    assert len(folders) == 90 and len(set(folders)) == 90


# --------------------------------------------------------------------------------------- 5. bad settings.ini
BAD_SETTINGS = [
    ("[budgets]\nsmoke = abc\n", "[budgets] smoke"),
    ("[budgets]\nmixmax.smoke = -5\n", "[budgets] mixmax.smoke"),
    ("[budgets]\nmixmax.huge = 5\n", "mixmax.huge"),
    ("[run]\njobs = abc\n", "[run] jobs"),
    ("[run]\njobs = 0\n", "[run] jobs"),
    ("[run]\njobs = 100000000000000000000000000000\n", "[run] jobs"),
    ("jobs = 2\n", "section header"),
    ("[run]\ndefault_seed = abc\n", "[run] default_seed"),
    ("[run]\ndefault_seed = -1\n", "[run] default_seed"),
    ("[run]\ndefault_scale = huge\n", "[run] default_scale"),
    ("[run]\nstore_widget_state = maybe\n", "[run] store_widget_state"),
    ("[run]\njbos = 2\n", "'jbos'"),
    ("[runs]\njobs = 2\n", "[runs]"),
    ("[run]\n[run]\n", "already exists"),
    ("[run]\nkernel =\n", "[run] kernel"),
]


@pytest.mark.parametrize("text, needle", BAD_SETTINGS, ids=[t.replace("\n", " ")[:40] for t, _ in BAD_SETTINGS])
def test_bad_settings_name_file_section_key_and_allowed_values(tmp_path, capsys, text, needle):
    ini = tmp_path / "settings.ini"
    ini.write_text(text)
    for cmd in (["run", CHEAP], ["reproduce"], ["claims"], ["list"]):
        rc, err, _ = _main(["--settings", str(ini), *cmd], capsys)
        _one_line_error(rc, err, str(ini), needle)
    assert not (tmp_path / "runs").exists() and not (ROOT / "runs" / "settings.ini").exists()


def test_bad_bytes_in_settings(tmp_path, capsys):
    ini = tmp_path / "settings.ini"
    ini.write_bytes(b"\xff\xfe[run]\x00")
    rc, err, _ = _main(["--settings", str(ini), "list"], capsys)
    _one_line_error(rc, err, str(ini), "not a valid settings file")


# ------------------------------------------------------------------------------------ 6. bad-input corpus
BAD_CLI = [
    (["run", "no_such_paper"], "unknown paper"),
    (["run", "mixmax", "-p", "no_such", "1"], "unknown parameter 'no_such'"),
    (["run", "mixmax", "-p", "seed", "abc"], "'seed'"),
    (["run", "mixmax", "-p", "seed", "-1"], "'seed'"),
    (["run", "mixmax", "-p", "seed", "1.5"], "'seed'"),
    (["run", "mixmax", "-p", "seed", str(2**32)], "'seed'"),
    (["run", "mixmax", "-p", "seed", str(SEED_MAX)], "'seed'"),              # valid alone, not with 3 seeds
    (["run", "mixmax", "-p", "seed", "1e400"], "'seed'"),
    (["run", "mixmax", "-p", "n_seeds", "0"], "'n_seeds'"),
    (["run", "mixmax", "-p", "n_seeds", "inf"], "'n_seeds'"),
    (["run", "mixmax", "-p", "n_seeds", "nan"], "'n_seeds'"),
    (["run", "mixmax", "-p", "n_seeds", "2.5"], "'n_seeds'"),
    (["run", "mixmax", "-p", "n_seeds", str(10**30)], "'n_seeds'"),
    (["run", "mixmax", "-p", "smoothing", "-inf"], "'smoothing'"),
    (["run", "mixmax", "-p", "smoothing", "inf"], "'smoothing'"),
    (["run", "mixmax", "-p", "smoothing", "nan"], "'smoothing'"),
    (["run", "mixmax", "-p", "smoothing", "-0.5"], "'smoothing'"),
    (["run", "mixmax", "-p", "smoothing", ""], "'smoothing'"),
    (["run", "mixmax", "-p", "estimator", "nope"], "'estimator'"),
    (["run", "mixmax", "--scale", "gigantic"], "'scale'"),
    (["run", "mixmax", "--scale", "paper"], "'scale'"),
    (["run", "mixmax", "-p", "scale", "huge"], "'scale'"),
    (["run", "mixmax", "--scale", "smoke", "-p", "scale", "full"], "scale given twice"),
    (["run", "mixmax", "-p"], "expected 2 arguments"),
    (["run", "mixmax", "-p", "seed"], "expected 2 arguments"),
    (["reproduce", "--only", "nope"], "unknown paper"),
    (["reproduce", "--jobs", "0"], "'--jobs'"),
    (["reproduce", "--jobs", str(10**30)], "'--jobs'"),
    (["reproduce", "--jobs", "-3"], "'--jobs'"),
    (["reproduce", "--jobs", "two"], "invalid int value"),
    (["reproduce", "--scale", "gigantic"], "'--scale'"),   # not "paper": a paper may define that scale
    (["reproduce", "--scale", "huge"], "'--scale'"),
    (["docs", "--offline-html", "--jobs", str(10**30)], "'--jobs'"),
    (["docs", "--offline-html", "--scale", "gigantic"], "'--scale'"),
    (["claims", "--scale", "huge"], "'--scale'"),
    (["claims", "--format", "pdf"], "invalid choice"),
    (["runs", "prune"], "--keep"),
    (["runs", "prune", "--keep", "-1"], "'keep'"),
    (["ledger", "fix"], "invalid choice"),
    (["list", "-p", "seed", "1"], "-p/--param is an option of `iclrbench run`"),
    (["bogus-command"], "invalid choice"),
]


def test_bad_cli_input_is_one_line_exit_2_and_nothing_runs(tmp_path, capsys):
    ini = _ini(tmp_path)
    for args, needle in BAD_CLI:
        try: rc = cli.main(["--settings", str(ini), *args])
        except SystemExit as e: rc = e.code                     # argparse's own errors exit from inside parse_args
        err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
        _one_line_error(rc, err, needle)
    assert _no_run_folders(tmp_path)


def test_a_few_bad_inputs_through_the_console_script(tmp_path):
    env = {**os.environ, "ICLRBENCH_SETTINGS": str(_ini(tmp_path))}
    for args, needle in (BAD_CLI[13], BAD_CLI[27], BAD_CLI[34]):
        out = subprocess.run(CLI + args, capture_output=True, text=True, env=env, timeout=120)
        lines = [l for l in out.stderr.splitlines() if l.strip()]
        assert out.returncode == 2 and len(lines) == 1 and needle in lines[0], out.stderr


BAD_API = [
    dict(n_seeds=float("inf")), dict(n_seeds=float("nan")), dict(n_seeds=2.5), dict(n_seeds="3"), dict(n_seeds=True),
    dict(n_seeds=None), dict(n_seeds=[1]), dict(n_seeds={}), dict(n_seeds=10**30), dict(n_seeds=np.float64("inf")),
    dict(n_seeds=1 + 0j), dict(smoothing=float("-inf")), dict(smoothing="0.1"), dict(smoothing=np.nan),
    dict(estimator=3), dict(estimator=["table"]), dict(estimator=None), dict(no_such=1),
]


@pytest.mark.parametrize("over", BAD_API, ids=[repr(o)[:40] for o in BAD_API])
def test_bad_api_values_are_value_errors_naming_the_parameter(over):
    mm = load_paper("mixmax")
    name = next(iter(over))
    with pytest.raises(ValueError, match=f"'{name}'"):
        mm.run("smoke", 0, progress=False, **over)


@pytest.mark.parametrize("seed", [-1, 2**32, SEED_MAX, 1.0, "0", None, True, np.float64(1), [0]])
def test_bad_api_seeds_are_value_errors(seed):
    with pytest.raises(ValueError, match="'seed'"):
        load_paper("mixmax").run("smoke", seed, progress=False)    # mixmax's smoke runs 3 seeds: SEED_MAX is too high


@pytest.mark.parametrize("scale", [None, 3, "huge", "paper", ["smoke"]])
def test_bad_api_scales_are_value_errors(scale):
    with pytest.raises(ValueError, match="'scale'"):
        load_paper("mixmax").run(scale, 0, progress=False)


def test_numpy_numbers_are_accepted_like_python_ones():
    card = paper_card("mixmax")
    p = resolve_params(card.params, card.scales, "smoke", dict(n_seeds=np.int64(2), smoothing=np.float32(0.5)))
    assert p["n_seeds"] == 2 and type(p["n_seeds"]) is int and type(p["smoothing"]) is float
    assert validate_seed(np.int64(7)) == 7 and validate_seed(SEED_MAX - 2, 3) == SEED_MAX - 2


def test_seed_arithmetic_inside_papers_stays_in_range():
    """Papers derive sub-seeds as seed·1000 + k: unchanged for old seeds, and valid for the largest seed."""
    assert derived_seed(7, 3) == 7003
    assert 0 <= derived_seed(SEED_MAX, 999) <= SEED_MAX and 0 <= derived_seed(5_000_000, 2) <= SEED_MAX
    hr = load_paper("hybrid_regularization")
    assert 0 <= hr.solver_seed(5_000_000, 5_000_002) <= SEED_MAX


def test_papermill_typos_fail_in_the_notebook_with_the_cli_message(tmp_path):
    """`papermill nb out -p no_such 1` (papermill only warns) fails in the run cell with the CLI's message."""
    from iclrbench.core.records import injected_parameter_names, overrides_from
    params = paper_card("mixmax").params
    ns = {"In": ["", "# Parameters\nno_such = 1\nseed = 5\n"], "seed": 5, "no_such": 1}
    assert injected_parameter_names(ns) == ["no_such", "seed"]
    with pytest.raises(ValueError, match="unknown parameter 'no_such'; the notebook declares: "):
        overrides_from(ns, params)
    assert overrides_from({"In": ["# Parameters\nseed = 5\nn_seeds = 2\n"], "n_seeds": 2}, params) == {"n_seeds": 2}
    # and through papermill itself, on the cheapest notebook
    nb = _sleepy_notebooks(tmp_path, 0)
    nb = json.loads((nb / f"{CHEAP}.ipynb").read_text())
    nb["cells"].insert(1, {"cell_type": "code", "id": "overrides", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": ["from iclrbench.core import load_paper, overrides_from\n",
                                      f"overrides_from(globals(), load_paper({CHEAP!r}).PARAMS)\n"]})
    src = tmp_path / "typo.ipynb"; src.write_text(json.dumps(nb))
    env = {**os.environ, "ICLRBENCH_RESULT_PATH": str(tmp_path / "r.json")}
    out = subprocess.run([PAPERMILL, str(src), str(tmp_path / "out.ipynb"), "-p", "no_such", "1", "--cwd", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode != 0 and "unknown parameter 'no_such'" in out.stderr, out.stderr[-2000:]
    assert not (tmp_path / "started").exists()                               # it stopped before the work


def test_every_paper_notebook_checks_injected_names():
    "Each paper notebook's run cell calls `overrides_from(globals(), PARAMS)`, where the typo check lives."
    from iclrbench.core import paper_slugs
    for slug in paper_slugs():
        text = (ROOT / "nbs" / "papers" / f"{slug}.ipynb").read_text()
        assert "overrides_from(globals(), PARAMS)" in text, slug


# --------------------------------------------------------------------------- 7. offline HTML copies, runs prune
def test_per_run_html_copies_load_nothing_from_the_network(tmp_path):
    import nbformat
    import plotly.graph_objects as go
    import plotly.io as pio
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Equation $e^{i\\pi} + 1 = 0$"),
                nbformat.v4.new_code_cell("fig", outputs=[nbformat.v4.new_output(
                    "display_data", data={"text/html": pio.to_html(go.Figure(go.Scatter(y=[1, 2])), include_plotlyjs=True,
                                                                    full_html=False, include_mathjax="cdn")})])]
    nbformat.write(nb, tmp_path / "nb.ipynb")
    html = export_html(tmp_path / "nb.ipynb", tmp_path / "nb.html").read_text()
    import re
    assert not re.search(r'<script\b[^>]*src="https?://', html) and not re.search(r'<link\b[^>]*href="https?://', html)
    assert "Plotly.newPlot" in html and "e^{i\\pi}" in html


def _fake_runs(tmp: Path, n: int, slug: str = "p") -> Ledger:
    led = Ledger(tmp / "runs" / "ledger.sqlite")
    for i in range(n):
        f = tmp / "runs" / slug / f"{slug}-r{i}"; f.mkdir(parents=True)
        (f / RUN_MARKER).write_text(json.dumps({"run_id": f"{slug}-r{i}", "slug": slug, "started": f"2026-01-{i + 1:02d}"}))
        (f / f"{slug}.ipynb").write_bytes(b"x" * 100_000)
        led.record(run_id=f"{slug}-r{i}", slug=slug, scale="smoke", seed=0, status="ok", params={},
                   started=f"2026-01-{i + 1:02d}", notebook=str(f / f"{slug}.ipynb"))
    return led


def test_runs_list_and_prune_keep_the_newest_and_whatever_is_referenced(tmp_path, capsys):
    ini = _ini(tmp_path)
    led = _fake_runs(tmp_path, 5)
    (tmp_path / "runs" / "user-notes.txt").write_text("mine")          # not a run folder: never touched
    (tmp_path / "runs" / "p" / "not-a-run").mkdir()
    rc, err, out = _main(["--settings", str(ini), "runs", "list"], capsys)
    assert rc == 0 and "5 run folder(s)" in out and "claims table" in out
    rc, err, out = _main(["--settings", str(ini), "runs", "prune", "--keep", "2"], capsys)     # a plan, no deletion
    assert rc == 0 and "pass --yes" in out and len(list((tmp_path / "runs" / "p").iterdir())) == 6
    rc, err, out = _main(["--settings", str(ini), "runs", "prune", "--keep", "2", "--yes"], capsys)
    assert rc == 0 and "deleted 3 run folder(s)" in out
    assert sorted(p.name for p in (tmp_path / "runs" / "p").iterdir()) == ["not-a-run", "p-r3", "p-r4"]
    assert (tmp_path / "runs" / "user-notes.txt").read_text() == "mine"
    rows = led.rows()
    assert len(rows) == 5 and [bool(r["pruned"]) for r in rows] == [True, True, True, False, False]
    rc, err, out = _main(["--settings", str(ini), "runs", "prune", "--keep", "0", "--yes"], capsys)
    assert (tmp_path / "runs" / "p" / "p-r4").is_dir()                  # the claims table's run survives --keep 0


def test_corpus_sizes():
    "The issue's note counts the inputs tried; keep this in step with the corpora above."
    n = (len(DOCS_OUT) + len(CORRUPT) * 6 + 2 + len(BAD_SETTINGS) * 4 + 1 + len(BAD_CLI) + len(BAD_API) + 9 + 5 + 1)
    assert n > 150
