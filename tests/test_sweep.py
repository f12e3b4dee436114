"""`iclrbench sweep`: a grid × seeds on Dask — a local cluster, a running scheduler reached by its address, resuming,
failures that never stop the sweep, and bad specs refused before anything is scheduled (issue 23).

The runs execute a stand-in notebook for the cheapest paper (its parameters cell, then a result whose metric depends
on the parameters), so these tests time the sweep machinery — papermill, the ledger, Dask — not a paper."""
from __future__ import annotations

import json, os, shutil, socket, subprocess, sys, time
from pathlib import Path

import pytest
from conftest import stand_in_notebook

from iclrbench.run import cli
from iclrbench.run.ledger import Ledger
from iclrbench.run.sweep import claims_over_seeds, sweep, sweep_points

ROOT = Path(__file__).resolve().parents[1]
SLUG = "rawlsian_policies"
BIN = Path(sys.executable).parent


def _stand_in(tmp: Path) -> Path:
    "Settings whose notebook folder holds a fast stand-in: metric m = seed + n_seeds; claim c holds on even seeds; seed 13 raises."
    nbs = stand_in_notebook(tmp / "nbs", SLUG, (
        "import os\n"
        "from iclrbench.core import Result, ClaimOutcome\n"
        "if seed == 13: raise RuntimeError('deliberate failure on seed 13')\n"
        "k = n_seeds or 1\n"
        "c = ClaimOutcome('c', 's', '', 'm', 'held' if seed % 2 == 0 else 'not held', str(seed))\n"
        f"Result(slug={SLUG!r}, scale=scale, seed=seed, params={{'n_seeds': k}}, metrics={{'m': float(seed + k), 'per_seed': [1.0, 3.0]}},\n"
        "       claims=[c]).to_json(os.environ['ICLRBENCH_RESULT_PATH'])\n"))
    ini = tmp / "settings.ini"
    ini.write_text(f"[run]\noutput_dir = {tmp / 'runs'}\nledger = {tmp / 'runs' / 'ledger.sqlite'}\nnbs_path = {nbs}\n")
    return ini


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    ini = _stand_in(tmp)
    from iclrbench.core.settings import load_settings
    df = sweep(SLUG, {"n_seeds": "1,2"}, "0-1", settings=load_settings(ini), workers=2, progress=False)
    return tmp, ini, df


@pytest.mark.slow
def test_a_grid_on_a_local_cluster_lands_in_the_ledger_with_a_report(local_sweep):
    tmp, ini, df = local_sweep
    assert list(df["n_seeds"]) == [1, 1, 2, 2] and list(df["seed"]) == [0, 1, 0, 1]
    assert list(df["status"]) == ["ok"] * 4 and list(df["m"]) == [1.0, 2.0, 2.0, 3.0] and list(df["per_seed"]) == [2.0] * 4
    assert list(df["claim:c"]) == ["held", "not held"] * 2 and not df["resumed"].any()
    rows = Ledger(tmp / "runs" / "ledger.sqlite").rows()
    assert len(rows) == 4 and {r["sweep"] for r in rows} == {df.attrs["sweep"]}
    report = Path(df.attrs["report"]).read_text()
    assert "held rate" in report and "Plotly" in report and "cdn.plot.ly/plotly" not in report.split("<body>")[1][:200]
    assert (Path(df.attrs["report"]).parent / "runs.csv").exists()


@pytest.mark.slow
def test_a_resumed_sweep_runs_only_what_is_missing_and_a_failure_is_not_fatal(local_sweep):
    tmp, ini, _ = local_sweep
    from iclrbench.core.settings import load_settings
    df = sweep(SLUG, {"n_seeds": "1,2"}, "0,1,13", settings=load_settings(ini), workers=2, progress=False)
    assert len(df) == 6 and int(df["resumed"].sum()) == 4                       # only the two seed-13 points ran
    bad = df[df["status"] != "ok"]
    assert list(bad["seed"]) == [13, 13] and all("deliberate failure" in e for e in bad["error"])
    assert len(Ledger(tmp / "runs" / "ledger.sqlite").rows()) == 6             # the failures are recorded too
    table = claims_over_seeds(SLUG, "0-1", settings=load_settings(ini))        # these runs set n_seeds: not the card's setting
    assert table["runs"].tolist() == [0] * len(table)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


@pytest.mark.slow
def test_an_existing_cluster_by_its_scheduler_address(tmp_path):
    ini = _stand_in(tmp_path)
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        time.sleep(2)
        procs.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        out = subprocess.run([str(BIN / "iclrbench"), "--settings", str(ini), "sweep", SLUG, "--seeds", "2", "--scheduler", address],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert "1 runs (0 from earlier), 0 not ok" in out.stdout
        assert [r["seed"] for r in Ledger(tmp_path / "runs" / "ledger.sqlite").rows()] == [2]
        # a default-parameter run (no grid): the claims-over-seeds table counts it for seed 2 and misses 0, 1, 3
        from iclrbench.core.settings import load_settings
        table = claims_over_seeds(SLUG, "0-3", settings=load_settings(ini))
        assert set(table["runs"]) == {1} and set(table["missing_seeds"]) == {3}
    finally:
        for p in procs: p.terminate()
        for p in procs: p.wait(timeout=30)


BAD = [
    (["-p", "no_such", "1,2"], "unknown parameter 'no_such'"),
    (["-p", "n_seeds", "1,0"], "'n_seeds'"),
    (["-p", "n_seeds", ""], "empty value"),
    (["-p", "n_seeds", "1,,2"], "empty value"),
    (["-p", "n_seeds", "1,1"], "repeats a value"),
    (["-p", "n_seeds", "1", "-p", "n_seeds", "2"], "given twice"),
    (["-p", "seed", "1,2"], "--seeds"),
    (["--seeds", "a-b"], "'seeds'"),
    (["--seeds", "3-1"], "'seeds' is empty"),
    (["--seeds", "-1"], "'seeds'"),
    (["--seeds", "0,0"], "repeats a seed"),
    (["--seeds", str(2**32)], "'seeds'"),
    (["--workers", "0"], "'workers'"),
    (["--workers", str(10**20)], "'workers'"),
    (["--scale", "gigantic"], "'--scale'"),   # not "paper": a paper may define that scale
    (["--scheduler", "tcp://127.0.0.1:1"], "cannot reach the Dask scheduler"),
]


@pytest.mark.parametrize("args, needle", BAD, ids=[" ".join(a)[:40] for a, _ in BAD])
def test_bad_sweep_specs_are_one_line_before_anything_is_scheduled(tmp_path, capsys, args, needle):
    ini = _stand_in(tmp_path)
    rc = cli.main(["--settings", str(ini), "sweep", SLUG, *args])
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert rc == 2 and len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.ipynb"))


def test_points_are_validated_as_run_requests():
    pts = sweep_points("mixmax", {"smoothing": [0.5, 1], "n_seeds": "1"}, [0, 5])
    assert len(pts) == 4 and pts[0].request == {"smoothing": 0.5, "n_seeds": 1, "seed": 0, "scale": "smoke"}
    with pytest.raises(ValueError, match="'seed'"):
        sweep_points("mixmax", {"n_seeds": "3"}, [2**32 - 2])                # its last seed would be out of range


def test_measured_spread_ranges_only_the_numbers_that_change():
    """The spread of a claim's measurement over seeds: numbers that differ become smallest…largest (compared as numbers,
    not strings; a minus sign counts), constants such as the threshold stay, and texts of another form are counted out."""
    from iclrbench.run.sweep import measured_spread
    texts = ["ratio 0.61 vs 10.5 (threshold ≤ 0.85)", "ratio 0.9 vs 9.5 (threshold ≤ 0.85)", "ratio −0.2 vs 11 (threshold ≤ 0.85)"]
    assert measured_spread(texts) == "ratio −0.2…0.9 vs 9.5…11 (threshold ≤ 0.85)"
    assert measured_spread(texts + ["not measured: no model"]) == "ratio −0.2…0.9 vs 9.5…11 (threshold ≤ 0.85) [form shared by 3 of 4 seeds]"
    assert measured_spread(["gap 0.1", "gap 0.1"]) == "gap 0.1" and measured_spread(["", None]) is None
