"""Every paper module keeps the contract of DESIGN.md, and its notebook declares the same parameters."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclrbench.core import CONTRACT, Claim, Paper, Param, Result, load_paper, paper_slugs, resolve_params
from iclrbench.run.runner import notebook_for, notebook_parameters

# one xdist group per paper: every test that needs a paper's cached smoke result runs in the same worker
SLUGS = [pytest.param(s, marks=pytest.mark.xdist_group(s)) for s in paper_slugs()]


@pytest.mark.parametrize("slug", SLUGS)
def test_module_exports_the_contract(slug):
    mod = load_paper(slug)
    assert isinstance(mod.PAPER, Paper) and mod.PAPER.slug == slug and mod.PAPER.venue == "ICLR 2025"
    assert mod.PARAMS and all(isinstance(p, Param) for p in mod.PARAMS)
    assert {"smoke", "full"} <= set(mod.SCALES)
    for scale in mod.SCALES:
        resolve_params(mod.PARAMS, mod.SCALES, scale, {})  # every preset is complete and valid
    assert mod.CLAIMS and all(isinstance(c, Claim) for c in mod.CLAIMS)
    assert len({c.id for c in mod.CLAIMS}) == len(mod.CLAIMS)
    assert any(c.check is not None and "smoke" in c.scales for c in mod.CLAIMS), "no claim is checked at smoke scale"


@pytest.mark.parametrize("slug", SLUGS)
def test_paper_scale_is_defined_or_explained(slug):
    """Issue 23.2: a `paper` scale where a configuration closer to the published one fits one GPU and offline data,
    with what it is and its time on one GPU; where none makes sense offline, the module says why (PAPER_SCALE), and
    `iclrbench list` prints it from the card index."""
    from iclrbench.core.registry import paper_card
    mod = load_paper(slug)
    text = getattr(mod, "PAPER_SCALE", None)
    assert isinstance(text, str) and len(text) >= 60, f"{slug}: PAPER_SCALE must say what the paper scale is, or why none"
    assert paper_card(slug).paper_scale == text, "card index out of date: make cards"
    if "paper" in mod.SCALES:
        assert "GPU" in text, f"{slug}: PAPER_SCALE must give the expected time on one GPU (or say it was not measured)"
        assert set(mod.SCALES["paper"]) == set(mod.SCALES["full"]), "the paper preset sets every parameter"
        device = mod.SCALES["paper"].get("device")
        assert device in (None, "auto"), f"{slug}: the paper scale should take a GPU where there is one (device auto)"
    else:
        assert "no paper scale" in text.lower(), f"{slug}: without a paper scale, PAPER_SCALE starts by saying so and why"


@pytest.mark.parametrize("slug", SLUGS)
def test_notebook_parameters_match_params(slug):
    mod = load_paper(slug)
    declared = notebook_parameters(notebook_for(slug))
    assert set(declared) == {"scale", "seed"} | {p.name for p in mod.PARAMS}
    assert declared["scale"]["default"].strip("'\"") == "smoke"


@pytest.mark.parametrize("slug", SLUGS)
def test_bad_overrides_raise_before_work(slug):
    mod = load_paper(slug)
    with pytest.raises(ValueError, match="'no_such_knob'"):
        mod.run("smoke", seed=0, no_such_knob=1)
    with pytest.raises(ValueError, match="'scale'"):
        mod.run("gigantic", seed=0)
    with pytest.raises(ValueError, match="'seed'"):
        mod.run("smoke", seed=-3)
    for p in mod.PARAMS:
        bad = ("not-an-option" if p.choices else None) if p.kind == "str" else \
              ("yes" if p.kind == "bool" else (p.high + 1 if p.high is not None else (p.low - 1 if p.low is not None else None)))
        if bad is None:
            continue
        with pytest.raises(ValueError, match=f"'{p.name}'"):
            mod.run("smoke", seed=0, **{p.name: bad})


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_smoke_run_is_deterministic_and_json_able(slug, smoke_result):
    """Same seed, same numbers. In CI the second run is the notebook's own (executed once, through the CLI, in the
    budgeted pass): the API and the notebook must agree bit for bit. Elsewhere the paper runs twice in-process."""
    from conftest import stored_notebook_run
    r1 = smoke_result(slug)
    assert isinstance(r1, Result) and r1.slug == slug and r1.scale == "smoke" and r1.seed == 0
    row = stored_notebook_run(slug)
    if row is not None and row.get("result_json") and row.get("seed") == 0:
        r2 = Result.from_json(row["result_json"])
        assert r2.params == r1.to_dict(False)["params"], "the notebook ran with other parameters than run('smoke', seed=0)"
    else:
        r2 = load_paper(slug).run("smoke", seed=0, progress=False)
    assert json.dumps(r1.to_dict(False)["metrics"], sort_keys=True) == json.dumps(r2.to_dict(False)["metrics"], sort_keys=True)
    assert {c.id for c in r1.claims} == {c.id for c in load_paper(slug).CLAIMS}
    json.dumps(r1.to_dict())


def _counterexamples(slug: str) -> dict:
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent / "counterexamples" / f"{slug}.py"
    if not path.exists():
        return {}
    spec = importlib.util.spec_from_file_location(f"counterexamples_{slug}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.COUNTEREXAMPLES


@pytest.mark.parametrize("slug", SLUGS)
def test_every_claim_check_can_fail(slug):
    """A check that cannot fail is a defect: each checked claim has counter-examples in tests/counterexamples/<slug>.py
    (metrics dicts built so that the mechanism's effect vanishes or reverses), and its check says 'not held' on each."""
    mod = load_paper(slug)
    examples = _counterexamples(slug)
    checked = [c for c in mod.CLAIMS if c.check is not None]
    missing = [c.id for c in checked if not examples.get(c.id)]
    assert not missing, f"{slug}: no counter-example for claim(s) {missing} in tests/counterexamples/{slug}.py"
    assert set(examples) <= {c.id for c in checked}, f"counter-examples for unknown claims {sorted(set(examples) - {c.id for c in checked})}"
    for c in checked:
        for i, metrics in enumerate(examples[c.id]):
            held, measured = c.check(metrics)
            assert held is False, f"{slug}/{c.id}: counter-example {i} gave held={held!r} ({measured})"


EXPECTED_SMOKE = Path(__file__).parent / "expected_smoke_outcomes.json"


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_smoke_outcomes_match_the_recorded_ones(slug, smoke_result):
    """A regression test instead of a crashed notebook: every claim recorded as held at smoke scale, seed 0, still holds,
    and no check raises. A claim recorded as not held is a result; if it now holds, update the record (and say why)."""
    from iclrbench.core.records import CHECK_ERROR
    expected = json.loads(EXPECTED_SMOKE.read_text())
    assert slug in expected, f"no recorded smoke outcomes for {slug}: add them to {EXPECTED_SMOKE.name}"
    got = {c.id: c for c in smoke_result(slug).claims}
    errors = [f"{i}: {c.measured}" for i, c in got.items() if c.status == CHECK_ERROR]
    assert not errors, f"claim checks raised: {errors}"
    lost = [f"{i} ({got[i].status if i in got else 'missing'}: {got[i].measured if i in got else ''})"
            for i, st in expected[slug].items() if st == "held" and (i not in got or got[i].status != "held")]
    assert not lost, f"{slug}: claims that held at smoke scale, seed 0, no longer do: {lost}"
