"""Library tests of the shared core: records, parameter validation, settings, ledger, claims tables."""
from __future__ import annotations

import configparser, json, os, sqlite3, subprocess, sys
from pathlib import Path

import pytest

from iclrbench.core import (CHECK_ERROR, HELD, NOT_AT_SCALE, NOT_HELD, NOT_MEASURED, OFFLINE, Claim, ClaimsNotHeld, Paper, Param,
                            Result, assert_claims_hold, evaluate_claims, make_result, paper_slugs, resolve_params,
                            seed_everything, validate_seed)
from iclrbench.run.ledger import Ledger, write_json_atomic
from iclrbench.core.settings import DEFAULTS, load_settings

PARAMS = [Param("n", "int", "count", low=1, high=10), Param("lr", "float", "step", low=0.0, high=1.0),
          Param("mode", "str", "mode", choices=("a", "b")), Param("flag", "bool", "flag")]
SCALES = {"smoke": dict(n=2, lr=0.1, mode="a", flag=False), "full": dict(n=10, lr=0.1, mode="b", flag=True)}


@pytest.mark.parametrize("over, word", [({"n": 0}, "'n'"), ({"n": 11}, "'n'"), ({"n": 2.5}, "'n'"), ({"n": "3"}, "'n'"),
                                        ({"lr": float("nan")}, "'lr'"), ({"lr": 2.0}, "'lr'"), ({"mode": "c"}, "'mode'"),
                                        ({"flag": 1}, "'flag'"), ({"bogus": 1}, "'bogus'")])
def test_bad_parameters_raise_naming_parameter_and_range(over, word):
    with pytest.raises(ValueError) as e:
        resolve_params(PARAMS, SCALES, "smoke", over)
    assert word in str(e.value)
    assert "[" in str(e.value) or "one of" in str(e.value) or "true or false" in str(e.value)


def test_resolve_params_merges_scale_and_overrides():
    assert resolve_params(PARAMS, SCALES, "full", {"n": 3}) == dict(n=3, lr=0.1, mode="b", flag=True)
    with pytest.raises(ValueError, match="'scale'"):
        resolve_params(PARAMS, SCALES, "nope", {})


def test_param_parse_from_cli_strings():
    assert PARAMS[0].parse("7") == 7 and PARAMS[1].parse("0.5") == 0.5 and PARAMS[3].parse("true") is True
    with pytest.raises(ValueError, match="'n'"):
        PARAMS[0].parse("seven")


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True, 2**32])
def test_bad_seed(seed):
    with pytest.raises(ValueError, match="'seed'"):
        validate_seed(seed)


def test_seed_everything_is_reproducible():
    import numpy as np
    a = seed_everything(11).normal(size=5)
    b = seed_everything(11).normal(size=5)
    assert np.array_equal(a, b)


def test_claim_outcomes_cover_every_status():
    claims = [Claim("ok", "s", "p", "m", lambda m: (m["a"] > m["b"], "a>b")),
              Claim("bad", "s", "p", "m", lambda m: (m["a"] < m["b"], "a<b")),
              Claim("off", "s", "p", "m", None, note="needs a hub model"),
              Claim("full", "s", "p", "m", lambda m: (True, ""), scales=("full",)),
              Claim("err", "s", "p", "m", lambda m: (m["missing"] > 0, "")),
              Claim("off-in-run", "s", "p", "m", lambda m: (None, "sweep not run (sweep=False)"))]
    outcomes = evaluate_claims(claims, {"a": 2, "b": 1}, "smoke")
    assert [o.status for o in outcomes] == [HELD, NOT_HELD, OFFLINE, NOT_AT_SCALE, CHECK_ERROR, NOT_MEASURED]
    assert outcomes[-1].measured == "sweep not run (sweep=False)" and not outcomes[-1].held


def test_a_part_switched_off_is_not_measured_never_not_held():
    "A claim whose part the run's parameters switched off neither fails `assert_claims_hold` nor shows as not held."
    paper = Paper("demo", "Demo", "A. Author", "demo")
    claims = [Claim("c", "s", "p", "m", lambda m: (None, "not run (x=0)") if m["x"] == 0 else (m["x"] > 1, ""))]
    r = make_result(paper, claims, "smoke", 0, {}, {"x": 0})
    assert r.claims[0].status == NOT_MEASURED
    assert_claims_hold(r)                      # nothing was measured, so nothing failed
    from iclrbench.run.claims import STATUS_MARK, outcomes_markdown
    assert STATUS_MARK[NOT_MEASURED] in outcomes_markdown(r.claims) and "not held" not in outcomes_markdown(r.claims)
    r2 = make_result(paper, claims, "smoke", 0, {}, {"x": 0.5})
    with pytest.raises(ClaimsNotHeld):           # the same check can still fail when its part runs
        assert_claims_hold(r2)


def test_result_json_round_trip_and_assertion(tmp_path):
    import numpy as np
    paper = Paper("demo", "Demo", "A. Author", "demo")
    claims = [Claim("c", "s", "p", "m", lambda m: (m["x"] > 1, f"x={m['x']}"))]
    r = make_result(paper, claims, "smoke", 0, {"n": 1}, {"x": np.float64(0.5)}, {"arr": np.arange(3)}, {"t": 0.1})
    path = r.to_json(tmp_path / "r.json")
    back = Result.from_json(path)
    assert back.metrics == {"x": 0.5} and back.artefacts == {"arr": [0, 1, 2]} and back.claims[0].status == NOT_HELD
    with pytest.raises(ClaimsNotHeld, match="x=0.5"):
        assert_claims_hold(r)
    r.scale = "full"
    assert_claims_hold(r)  # assertions apply to smoke runs only


def test_settings_defaults_match_repository_file(root):
    cp = configparser.ConfigParser()
    cp.read(root / "settings.ini")
    assert {s: dict(cp[s]) for s in cp.sections()} == DEFAULTS
    s = load_settings()
    assert s.source == root / "settings.ini" and s.output_dir == root / "runs" and s.kernel == "python3"
    assert s.budget("mixmax", "smoke") == 60 and s.budget("x", "full") == 900


def test_settings_env_override(tmp_path, monkeypatch):
    f = tmp_path / "s.ini"
    f.write_text("[run]\noutput_dir = elsewhere\n[budgets]\nmixmax.smoke = 30\n")
    monkeypatch.setenv("ICLRBENCH_SETTINGS", str(f))
    s = load_settings()
    assert s.output_dir == tmp_path / "elsewhere" and s.budget("mixmax", "smoke") == 30 and s.budget("x", "smoke") == 60
    monkeypatch.setenv("ICLRBENCH_SETTINGS", str(tmp_path / "missing.ini"))
    with pytest.raises(ValueError, match="does not exist"):
        load_settings()


def test_ledger_rows_and_atomic_insert(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.record(run_id="a", slug="p", scale="smoke", seed=0, status="ok", params={"x": 1}, metrics={"m": 1.0},
               claims=[{"id": "c", "status": "held"}])
    # a row that cannot be encoded fails before anything is written: the ledger keeps its one row
    with pytest.raises(Exception):
        led.record(run_id="b", slug="p", scale="smoke", seed=1, status="ok", params={"x": object()}, metrics=None,
                   started=object())
    rows = led.rows()
    assert len(rows) == 1 and rows[0]["metrics"] == {"m": 1.0} and rows[0]["claims"][0]["status"] == "held"
    con = sqlite3.connect(tmp_path / "l.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_ledger_survives_a_killed_writer(tmp_path):
    """A process killed in the middle of its transaction leaves the ledger as it was."""
    path = tmp_path / "l.sqlite"
    Ledger(path).record(run_id="first", slug="p", scale="smoke", seed=0, status="ok", params={})
    code = f"""
import sqlite3, os
con = sqlite3.connect({str(path)!r})
con.execute("BEGIN")
con.execute("INSERT INTO runs (run_id, slug, scale, status, params, metrics, claims, timings, started, finished) VALUES ('half','p','smoke','ok','{{}}','{{}}','[]','{{}}','x','x')")
os._exit(9)  # die before COMMIT
"""
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    assert [r["run_id"] for r in Ledger(path).rows()] == ["first"]


def test_json_written_atomically(tmp_path, monkeypatch):
    """A crash while writing leaves the previous file intact and no temporary file behind."""
    import iclrbench.run.ledger as ledger
    p = write_json_atomic(tmp_path / "a" / "r.json", {"v": [1, 2]})
    assert json.loads(p.read_text()) == {"v": [1, 2]}

    def dies_halfway(obj, f, **kw):
        f.write('{"v": [3')
        raise KeyboardInterrupt

    monkeypatch.setattr(ledger.json, "dump", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(p, {"v": [3, 4]})
    monkeypatch.undo()
    assert json.loads(p.read_text()) == {"v": [1, 2]}
    assert not [f for f in p.parent.iterdir() if f.name.endswith(".tmp")]


def test_registry_lists_papers():
    slugs = paper_slugs()
    assert "mixmax" in slugs and "rawlsian_policies" in slugs


def test_claims_tables_render():
    from iclrbench.run.claims import claim_rows, rows_html, rows_markdown, rows_text
    rows = claim_rows([dict(slug="p", scale="smoke", seed=0, status="ok",
                            claims=[dict(id="c", statement="a | b", paper_value="T1", metric="m", status="held", measured="1 > 0")]),
                       dict(slug="q", scale="smoke", seed=0, status="failed", claims=[], error="ValueError: boom")])
    md = rows_markdown(rows)
    assert "a \\| b" in md and "run failed" in md and "held" in md
    assert "<table>" in rows_html(rows) and "boom" in rows_text(rows)


def test_device_choice_never_assumes_cuda():
    torch = pytest.importorskip("torch")
    from iclrbench.core import get_device, torch_threads
    assert get_device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        assert get_device().type in ("cpu", "mps")
        with pytest.raises(ValueError, match="'device'"):
            get_device("cuda")
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def _tensor_out(job):
    i, model = job
    import torch
    return {"i": i, "sum": float(model.weight.detach().sum()), "w": torch.full((64,), float(i)), "parts": [torch.arange(3) + i for _ in range(10)]}


def test_parallel_map_returns_tensors_by_value_holding_no_descriptors():
    """`RunContext.map` in worker processes: same outputs, same order, as in this process — and tensors (a model in,
    tensors out) cross as plain copies: sent the default way each storage keeps a /dev/shm descriptor open while the output lives, which
    took a test session holding many results past 1,024 descriptors."""
    import torch
    from iclrbench.core.experiment import RunContext
    ctx = RunContext(params={}, seed=0, seeds=[0], show_progress=False)
    n_fd = lambda: len(os.listdir("/proc/self/fd"))
    model = torch.nn.Linear(8, 8)
    before = n_fd()
    outs = ctx.map(_tensor_out, [(i, model) for i in range(6)], workers=2)
    assert [o["i"] for o in outs] == list(range(6)) and outs[0]["sum"] == pytest.approx(float(model.weight.detach().sum()))
    assert not model.weight.is_shared(), "sending the model to the workers moved this process's copy into /dev/shm"
    assert all(torch.equal(o["w"], torch.full((64,), float(i))) for i, o in enumerate(outs))
    assert n_fd() <= before + 2, f"{n_fd() - before} descriptors held by 66 tensors from worker processes"
    assert ctx.map(_tensor_out, [(0, model), (1, model)], workers=1)[1]["i"] == 1
