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


@pytest.fixture(scope="session")
def smoke_result():
    """`smoke_result(slug)` → the paper's smoke-scale Result for seed 0, computed once per session."""
    from iclrbench.core import load_paper

    def get(slug: str):
        if slug not in _SMOKE:
            _SMOKE[slug] = load_paper(slug).run("smoke", seed=0, progress=False)
        return _SMOKE[slug]

    return get
