"""Stored results: a full-scale run written with its provenance and rendered by the notebook, never typed by hand."""
from __future__ import annotations

import json

import pytest

from iclrbench.core.records import Claim, Paper, make_result
from iclrbench.core.settings import Settings
from iclrbench.run.stored import load_stored_result, store_result, stored_result_markdown, stored_result_path

PAPER = Paper(slug="toy", title="Toy", authors="A. Author", summary="a toy")
CLAIMS = [Claim("bigger", "x beats y", "Table 1", "x > y", check=lambda m: (m["x"][0] > m["y"][0], f"x={m['x']} y={m['y']}"))]


@pytest.fixture
def settings(tmp_path):
    return Settings(root=tmp_path, values={"run": {"nbs_path": "nbs/papers"}}, source=None)


def test_store_load_render_round_trip(settings):
    r = make_result(PAPER, CLAIMS, "full", 3, {"n": 5}, {"x": [2.0], "y": [1.0], "gap": 0.123456}, {"big": list(range(1000))}, {})
    path = store_result(r, wall_s=61.25, settings=settings)
    assert path == settings.root / "nbs/papers/results/toy.full.json"
    d = json.loads(path.read_text())
    assert "artefacts" not in d and d["stored"]["wall_s"] == 61.2 and d["stored"]["machine"] and d["stored"]["date"]
    loaded, stored = load_stored_result("toy", "full", settings)
    assert loaded.metrics == r.metrics and loaded.claims == r.claims and loaded.seed == 3
    text = stored_result_markdown("toy", "full", metrics=["gap"], settings=settings)
    assert "Stored full-scale run of `toy`" in text and "seed 3" in text and "| `gap` | 0.1235 |" in text
    assert "bigger" in text                                    # the claims table of that run
    # a metric the stored run predates is shown as absent, not guessed and not an error
    assert "| `nope` | — (not in this stored run) |" in stored_result_markdown("toy", "full", metrics=["nope"], settings=settings)


def test_missing_stored_result_says_how_to_make_one(settings):
    assert load_stored_result("toy", "full", settings) is None
    assert "iclrbench run toy --scale full --store" in stored_result_markdown("toy", "full", settings=settings)


@pytest.mark.parametrize("slug,scale", [("../x", "full"), ("", "full"), ("toy", "huge")])
def test_bad_names_are_refused(settings, slug, scale):
    with pytest.raises(ValueError, match="parameter '(slug|scale)'"):
        stored_result_path(slug, scale, settings)
