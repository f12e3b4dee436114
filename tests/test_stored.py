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


def test_front_page_shows_the_stored_full_outcome_and_the_held_rate_over_seeds(tmp_path):
    """Beside this build's smoke outcome: the newest stored full-scale outcome (date, commit) and the stored held rate."""
    import pandas as pd
    from iclrbench.core import load_paper
    from iclrbench.core.records import ClaimOutcome, Result
    from iclrbench.core.settings import load_settings
    from iclrbench.run.stored import store_result, store_seed_outcomes
    from iclrbench.site.builder import SiteRun, claims_table_html, site_claim_rows
    ini = tmp_path / "settings.ini"
    ini.write_text(f"[run]\noutput_dir = {tmp_path / 'runs'}\nledger = {tmp_path / 'l.sqlite'}\nnbs_path = {tmp_path / 'nbs'}\n")
    settings = load_settings(ini)
    first = load_paper("mixmax").CLAIMS[0]
    full = Result(slug="mixmax", scale="full", seed=0, params={}, metrics={},
                  claims=[ClaimOutcome(first.id, first.statement, "", "", "not held", "0.41 < 0.5")])
    store_result(full, wall_s=600, settings=settings)
    table = pd.DataFrame([dict(claim=first.id, held=17, measured=20, rate=0.85, not_held_on=[3, 8, 11], runs=20,
                               missing_seeds=0, spread="gap 0.01…0.2 (need ≥ 0.03)")])
    table.attrs["commits"] = ["abc1234"]                  # the runs' commit, which the stored table must name
    path = store_seed_outcomes("mixmax", "smoke", table, list(range(20)), settings)
    import json
    assert json.loads(path.read_text())["stored"]["git_commit"] == "abc1234"
    rows = site_claim_rows({"mixmax": SiteRun("mixmax", "missing")}, settings)
    row = next(r for r in rows if r["id"] == first.id)
    assert row["status"] == "run failed" and row["full"]["status"] == "not held" and row["seeds"]["held"] == 17
    html = claims_table_html(rows)
    assert "17/20 seeds" in html and "gap 0.01…0.2 (need ≥ 0.03)" in html and "0.41 &lt; 0.5" in html and html.count("<td class=\"full\">—</td>") == len(rows) - 1


def test_docs_reuse_takes_the_runs_make_reproduce_made_without_widget_state(tmp_path, monkeypatch):
    """A default-parameter run of this commit is reused even without widget state; nothing is run again."""
    import json as _json
    from iclrbench.core.settings import load_settings
    from iclrbench.run import runner
    from iclrbench.run.ledger import Ledger
    from iclrbench.site import builder
    ini = tmp_path / "settings.ini"
    ini.write_text(f"[run]\noutput_dir = {tmp_path / 'runs'}\nledger = {tmp_path / 'runs' / 'l.sqlite'}\n")
    settings = load_settings(ini)
    nb = tmp_path / "runs" / "mixmax" / "r1" / "mixmax.ipynb"; nb.parent.mkdir(parents=True)
    nb.write_text(_json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    Ledger(settings.ledger_path).record(run_id="r1", slug="mixmax", scale="smoke", seed=0, status="ok",
                                        params={"scale": "smoke", "seed": 0}, notebook=str(nb))
    def no_runs(*a, **k): raise AssertionError("reuse must not run notebooks")
    monkeypatch.setattr(runner, "reproduce", no_runs)
    said = []
    runs = builder.collect_runs(["mixmax"], "smoke", settings=settings, reuse=True, log=said.append)
    assert runs["mixmax"].status == "ok" and runs["mixmax"].notebook == nb
    assert any("reusing mixmax" in s and "no widget state" in s for s in said)
