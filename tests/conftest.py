"""Shared fixtures: the repository root, paper modules, and cached smoke-scale results."""
from __future__ import annotations

import os
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
