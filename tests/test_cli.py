"""The `iclrbench` command: paper notebooks run through papermill, and bad input fails fast and clearly."""
from __future__ import annotations

import json, os, shutil, subprocess, sys, time
from pathlib import Path

import pytest

from iclrbench.core import paper_slugs
from iclrbench.run.ledger import Ledger

ROOT = Path(__file__).resolve().parents[1]
CLI = [str(Path(sys.executable).parent / "iclrbench")]  # the console script the package installs


def _settings(tmp: Path, nbs: Path | None = None) -> dict:
    ini = tmp / "settings.ini"
    ini.write_text(f"[run]\noutput_dir = {tmp / 'runs'}\nledger = {tmp / 'runs' / 'ledger.sqlite'}\n"
                   f"nbs_path = {nbs or ROOT / 'nbs' / 'papers'}\n")
    return {**os.environ, "ICLRBENCH_SETTINGS": str(ini)}


def _cli(args, env, timeout=300):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)


def test_console_script_is_installed():
    assert Path(CLI[0]).exists(), "pip install -e . installs the `iclrbench` console script"


def test_list_shows_every_paper_and_claim(tmp_path):
    out = _cli(["list"], _settings(tmp_path))
    assert out.returncode == 0, out.stderr
    for slug in paper_slugs():
        assert slug in out.stdout
    assert "[" in out.stdout  # claim ids


BAD = [
    (["run", "no_such_paper"], "unknown paper 'no_such_paper'"),
    (["run", "mixmax", "-p", "no_such_knob", "1"], "unknown parameter 'no_such_knob'"),
    (["run", "mixmax", "-p", "seed", "abc"], "'seed'"),
    (["run", "mixmax", "-p", "seed", "-1"], "'seed'"),
    (["run", "mixmax", "--scale", "gigantic"], "'scale'"),
    (["run", "rawlsian_policies", "-p", "scale", "huge"], "'scale'"),
    (["reproduce", "--only", "nope"], "unknown paper 'nope'"),
    (["bogus-command"], "invalid choice"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_exit_2_before_any_kernel(tmp_path, args, message):
    t0 = time.perf_counter()
    out = _cli(args, _settings(tmp_path))
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert lines[0].startswith("iclrbench: error:")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.ipynb"))
    assert time.perf_counter() - t0 < 30


@pytest.mark.parametrize("slug", paper_slugs())
def test_wrong_type_and_out_of_range_values(tmp_path, slug):
    from iclrbench.core import load_paper
    mod = load_paper(slug)
    env = _settings(tmp_path)
    checked = 0
    for p in mod.PARAMS:
        if p.kind in ("int", "float") and p.high is not None:
            for bad in ("not-a-number", repr(p.high * 10 + 1)):
                out = _cli(["run", slug, "-p", p.name, bad], env)
                assert out.returncode == 2 and f"'{p.name}'" in out.stderr and "[" in out.stderr, out.stderr
            checked += 1
            if checked == 2:
                break


def _assert_run_dir(run_dir: Path, slug: str):
    assert (run_dir / f"{slug}.ipynb").exists() and (run_dir / f"{slug}.html").exists()
    res = json.loads((run_dir / "result.json").read_text())
    assert res["slug"] == slug and res["claims"]
    # a not-held claim is a verdict, not a traceback: no cell of the executed notebook ends in an error
    nb = json.loads((run_dir / f"{slug}.ipynb").read_text())
    errors = [o.get("ename") for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{slug}: the executed notebook shows tracebacks: {errors}"
    return res


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("slug", paper_slugs())
def test_run_executes_notebook_within_budget(tmp_path, slug):
    """`iclrbench run SLUG -p seed 1`: executed notebook, HTML and result JSON, a ledger row, the claims printed.

    In CI every notebook has already run once, alone, through `iclrbench reproduce` (.ci/run's first stage); this test
    then checks that run (its budget, its files, its claims) instead of executing the notebook a second time."""
    from iclrbench.core.settings import load_settings
    from conftest import machine_slowness, stored_notebook_run
    row = stored_notebook_run(slug)
    if row is not None:
        assert row["status"] == "ok", f"the notebook failed in the CI pass: {row.get('error')}"
        err = row["error"]
        assert err is None, f"the notebook failed: {err}"
        nb = Path(row["notebook"])
        res = _assert_run_dir(nb.parent, slug)
        from iclrbench.core import CHECK_ERROR
        assert not [c for c in res["claims"] if c.get("status") == CHECK_ERROR], "claim checks raised"
        budget, slowness = load_settings().budget(slug, "smoke"), machine_slowness()
        print(f"{slug}: smoke notebook via CLI {row['wall_s']:.1f} s (budget {budget:.0f} s x machine slowness "
              f"{slowness:.2f}; CI notebook pass)")
        assert row["wall_s"] < budget * slowness, \
            f"{slug} smoke notebook took {row['wall_s']:.1f} s > budget {budget} s x machine slowness {slowness:.2f}"
        return
    env = _settings(tmp_path)
    t0 = time.perf_counter()
    out = _cli(["run", slug, "-p", "seed", "1"], env, timeout=600)
    wall = time.perf_counter() - t0
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    runs = list((tmp_path / "runs" / slug).iterdir())
    assert len(runs) == 1
    res = _assert_run_dir(runs[0], slug)
    assert res["seed"] == 1 and res["scale"] == "smoke"
    assert "held" in out.stdout  # the run's claims table is printed
    rows = Ledger(tmp_path / "runs" / "ledger.sqlite").rows()
    assert len(rows) == 1 and rows[0]["slug"] == slug and rows[0]["status"] == "ok" and rows[0]["seed"] == 1
    # A claim that does not hold at smoke scale is a result, reported in the table and the notebook's verdict (never a
    # raised error); any error — or a claim check that crashed — is a failure.
    err = rows[0]["error"]
    assert err is None, f"the notebook failed: {err}"
    from iclrbench.core import CHECK_ERROR
    crashed = [c for c in res["claims"] if c.get("status") == CHECK_ERROR]
    assert not crashed, f"claim checks raised: {crashed}"
    budget, slowness = load_settings(Path(env["ICLRBENCH_SETTINGS"])).budget(slug, "smoke"), machine_slowness()
    print(f"{slug}: smoke notebook via CLI {wall:.1f} s (budget {budget:.0f} s x machine slowness {slowness:.2f})")
    assert rows[0]["wall_s"] < budget * slowness, \
        f"{slug} smoke notebook took {rows[0]['wall_s']:.1f} s > budget {budget} s x machine slowness {slowness:.2f}"
    # the claims command reads the ledger
    claims = _cli(["claims", "--format", "markdown"], env)
    assert claims.returncode == 0 and f"| {slug} |" in claims.stdout


@pytest.mark.slow
def test_reproduce_reports_a_failing_paper_and_goes_on(tmp_path):
    """One paper's notebook raises: it shows as failed in the table and the next paper still runs."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    good = "rawlsian_policies"
    shutil.copy(ROOT / "nbs" / "papers" / f"{good}.ipynb", nbs / f"{good}.ipynb")
    broken = json.loads((ROOT / "nbs" / "papers" / "mixmax.ipynb").read_text())
    params = next(c for c in broken["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    broken["cells"] = [params, {"cell_type": "code", "id": "boom", "metadata": {}, "execution_count": None, "outputs": [],
                                "source": ["raise RuntimeError('deliberate failure for the test')"]}]
    (nbs / "mixmax.ipynb").write_text(json.dumps(broken))
    env = _settings(tmp_path, nbs)
    out = _cli(["reproduce", "--only", "mixmax", good, "--jobs", "2"], env, timeout=600)  # two kernels at once
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-2000:]
    assert "deliberate failure" in out.stdout and "run failed" in out.stdout
    md = (tmp_path / "runs" / "claims-smoke.md").read_text()
    assert "| mixmax |" in md and f"| {good} |" in md and "held" in md
    assert (tmp_path / "runs" / "claims-smoke.html").exists()
    statuses = {r["slug"]: r["status"] for r in Ledger(tmp_path / "runs" / "ledger.sqlite").rows()}
    assert statuses == {"mixmax": "failed", good: "ok"}


@pytest.mark.slow
def test_plain_papermill_needs_no_extra_flags(tmp_path):
    """`papermill nbs/papers/mixmax.ipynb out.ipynb -p seed 5` works as is (parameters tag + kernelspec)."""
    papermill = str(Path(sys.executable).parent / "papermill")
    out_nb = tmp_path / "out.ipynb"
    env = {k: v for k, v in os.environ.items() if k != "ICLRBENCH_RESULT_PATH"}
    out = subprocess.run([papermill, "nbs/papers/mixmax.ipynb", str(out_nb), "-p", "seed", "5", "--cwd", str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    nb = json.loads(out_nb.read_text())
    injected = [c for c in nb["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    assert injected and "seed = 5" in "".join(injected[0]["source"])


def test_terminal_output_fits_80_columns_and_pipes_close_quietly(tmp_path):
    """`iclrbench claims` fits the terminal (here 80 columns) and ends with totals; `| head` never prints a traceback."""
    from iclrbench.run.claims import rows_text
    rows = [dict(slug="hybrid_regularization", scale="smoke", seed=0, id="a-very-long-claim-identifier-that-goes-on",
                 status=s, measured="x " * 200) for s in ("held", "not held", "not checked at this scale")]
    text = rows_text(rows, 80)
    wide = lambda line: len(line) + sum(ord(ch) > 0x2600 and ch not in "─·…" for ch in line)   # emoji take two columns
    assert all(wide(line) <= 80 for line in text.splitlines()), max(text.splitlines(), key=wide)
    assert "3 claims from 1 papers:" in text.split("─" * 80)[-1]
    env = _settings(tmp_path)
    Ledger(tmp_path / "runs" / "ledger.sqlite").record(run_id="r", slug="mixmax", scale="smoke", seed=0, status="ok", params={},
                                                       claims=[dict(rows[0], statement="s", paper_value="", metric="m")] * 30)
    for cmd in ("list", "claims"):
        out = subprocess.run(f"{CLI[0]} {cmd} | head -1", shell=True, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert out.stderr == "" and len(out.stdout.splitlines()) == 1, out.stderr


def test_list_shows_each_parameter_with_its_range_and_defaults(tmp_path):
    out = _cli(["list"], _settings(tmp_path))
    assert "n_seeds: an int in [1, 20]; smoke 3, full" in out.stdout            # mixmax's seeds: range and defaults
