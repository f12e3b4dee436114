"""Shared fixtures: the repository root, paper modules, and cached smoke-scale results."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_configure(config):
    os.chdir(ROOT)  # settings.ini and nbs/ are found from the repository root


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


_SMOKE: dict[str, object] = {}

# Set by .ci/run: the ledger of the pass that executed every paper notebook once (smoke, seed 0, through the CLI).
# Tests that need a paper's notebook run read it from there instead of executing the notebook again.
CI_RUNS_ENV = "ICLRBENCH_CI_RUNS"


def stored_notebook_run(slug: str) -> dict | None:
    """The newest smoke run of `slug` in the CI pass's ledger (a ledger row), or None outside such a pass."""
    path = os.environ.get(CI_RUNS_ENV)
    if not path:
        return None
    from iclrbench.run.ledger import Ledger
    rows = [r for r in Ledger(Path(path)).rows(scale="smoke") if r["slug"] == slug]
    if not rows:
        raise AssertionError(f"{CI_RUNS_ENV}={path} holds no smoke run of {slug}: the CI notebook pass skipped it")
    return rows[-1]


@pytest.fixture(scope="session")
def smoke_result():
    """`smoke_result(slug)` → the paper's smoke-scale Result for seed 0, computed once per session."""
    from iclrbench.core import load_paper

    def get(slug: str):
        if slug not in _SMOKE:
            _SMOKE[slug] = load_paper(slug).run("smoke", seed=0, progress=False)
        return _SMOKE[slug]

    return get


def stand_in_notebook(folder: Path, slug: str, body: str) -> Path:
    """Write `folder/<slug>.ipynb`: the paper notebook's own `parameters` cell, then one code cell `body` — a fast
    stand-in for the paper, so that tests of the run machinery (ledger, interrupts, sweeps) do not time a paper."""
    import json
    folder.mkdir(parents=True, exist_ok=True)
    nb = json.loads((ROOT / "nbs" / "papers" / f"{slug}.ipynb").read_text())
    params = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    nb["cells"] = [params, {"cell_type": "code", "id": "standin", "metadata": {}, "execution_count": None, "outputs": [],
                            "source": body.splitlines(keepends=True)}]
    (folder / f"{slug}.ipynb").write_text(json.dumps(nb))
    return folder


# CPU seconds `_reference_workload` takes on the reference machine (2 idle cores; median of 7 runs, 0.32-0.37 s,
# measured 2026-12-03).
REFERENCE_WORKLOAD_S = 0.35


def _reference_workload() -> float:
    """CPU seconds for a fixed piece of explorer-like work: small numpy updates in a Python loop, then plotly figures
    built and validated. Its ratio to `REFERENCE_WORKLOAD_S` says how much slower this machine (and this moment) is."""
    import numpy as np
    import plotly.graph_objects as go
    c0 = time.process_time()
    rng = np.random.default_rng(0)
    joint, lam = rng.random((3, 20, 2)), np.full(3, 1 / 3)
    for _ in range(9000):
        pj = np.tensordot(lam, joint, axes=1)
        g = -(joint * np.log(pj / pj.sum(axis=1, keepdims=True))).sum(axis=(1, 2))
        lam = lam * np.exp(0.1 * g)
        lam /= lam.sum()
    for _ in range(9):
        fig = go.Figure([go.Scatter(x=list(range(200)), y=rng.random(200).tolist(), name=f"t{i}") for i in range(8)])
        fig.update_layout(title="calibration", height=300)
        fig.to_dict()
    return time.process_time() - c0


def machine_slowness() -> float:
    """How many times slower than the reference machine this one runs explorer-like work now (never below 1).
    Explorer latency limits and the smoke budgets the tests check scale by it, so a slower CPU does not fail a test for
    being slow (benchmarks report speed; tests do not time it beyond catching runaway runs)."""
    times = sorted(_reference_workload() for _ in range(3))
    return max(1.0, times[1] / REFERENCE_WORKLOAD_S)
