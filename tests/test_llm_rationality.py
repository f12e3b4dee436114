"""llm_rationality: CPT worked by hand, the parser on the card's answer forms, the text pipeline end to end (rule-based
stand-in and a tiny random GPT-2 through the HF adapter), the PT fit, the analysis against scipy, the CSV loader."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import pearsonr

from iclrbench.papers import llm_rationality as lr


def _w(p, g):
    return p ** g / (p ** g + (1 - p) ** g) ** (1 / g)


# --- the theories, worked by hand ----------------------------------------------------------------------------------

def test_cpt_gain_loss_and_mixed_gambles_by_hand():
    # gain: 25% chance of 100, else 20 (both ≥ 0): w+(.25)·100^.88 + (1 − w+(.25))·20^.88
    w = 0.25 ** 0.61 / (0.25 ** 0.61 + 0.75 ** 0.61) ** (1 / 0.61)
    assert w == pytest.approx(0.2907, abs=1e-4)                         # TK92's weighting: small p over-weighted
    assert lr.pt_value(100, 0.25, 20) == pytest.approx(w * 100 ** 0.88 + (1 - w) * 20 ** 0.88, rel=1e-12)
    assert lr.pt_value(100, 0.25, 20) == pytest.approx(26.63, abs=0.01)     # 0.2907·57.54 + 0.7093·13.96
    # loss: 75% chance of −20, else −100: the low outcome −100 has probability .25, weighted with δ
    wl = 0.25 ** 0.69 / (0.25 ** 0.69 + 0.75 ** 0.69) ** (1 / 0.69)
    v = wl * (-2.25 * 100 ** 0.88) + (1 - wl) * (-2.25 * 20 ** 0.88)
    assert lr.pt_value(-20, 0.75, -100) == pytest.approx(v, rel=1e-12)
    assert lr.pt_value(-20, 0.75, -100) == pytest.approx(-60.19, abs=0.01)   # 0.2935·(−129.47) + 0.7065·(−31.41)
    # mixed: 50/50 of +50 and −50: w+(.5)·50^.88 − 2.25·w−(.5)·50^.88 (loss aversion makes it negative)
    m = _w(0.5, 0.61) * 50 ** 0.88 - 2.25 * _w(0.5, 0.69) * 50 ** 0.88
    assert lr.pt_value(50, 0.5, -50) == pytest.approx(m, rel=1e-12) and m < 0
    assert m == pytest.approx(-18.79, abs=0.01)                          # 31.27·(0.4207 − 2.25·0.4540)
    # the common bug — γ for losses, or weighting the high outcome's probability — gives other numbers
    assert not math.isclose(lr.pt_value(-20, 0.75, -100), wl * 0 + _w(0.75, 0.61) * (-2.25 * 20 ** 0.88) + (1 - _w(0.75, 0.61)) * (-2.25 * 100 ** 0.88))
    # sure things and the rational profile
    assert lr.pt_value(10, 1.0, 10) == pytest.approx(10 ** 0.88)
    assert lr.pt_value(-10, 1.0, -10) == pytest.approx(-2.25 * 10 ** 0.88)
    ps = lr.generate_problems(300, 1, "uniform")
    assert np.allclose(lr.pt_difference(ps, lr.RATIONAL), lr.ev_difference(ps))
    assert lr.expected_value(100, 0.25, 20) == 40.0


def test_logistic_choice_and_agents():
    q = lr.Problem(10, 1.0, 10, 30, 0.5, 0)                              # EV_B − EV_A = 5
    assert lr.EVAgent(0.3).choice_proba([q])[0] == pytest.approx(1 / (1 + math.exp(-1.5)))
    pt = lr.PTAgent()
    d = lr.pt_value(30, 0.5, 0) - lr.pt_value(10, 1, 10)
    assert pt.choice_proba(q)[0] == pytest.approx(1 / (1 + math.exp(-0.15 * d)))
    mix = lr.MixtureAgent(0.25, lr.EVAgent(0.3), pt)
    assert mix.choice_proba([q])[0] == pytest.approx(0.25 * lr.EVAgent(0.3).choice_proba([q])[0] + 0.75 * pt.choice_proba([q])[0])
    assert isinstance(mix, lr.ChoiceModel) and isinstance(lr.EmpiricalAgent([0.2]), lr.ChoiceModel)
    assert lr.EmpiricalAgent([0.2]).choice_proba([q]).tolist() == [0.2]
    with pytest.raises(ValueError, match="'table'"):
        lr.EmpiricalAgent([0.2, 0.3]).choice_proba([q])
    with pytest.raises(ValueError, match="'w'"):
        lr.MixtureAgent(1.5, pt, pt)
    rates = lr.observe(lr.EmpiricalAgent(np.full(1, 0.3)), [q] , n_obs=100000, rng=0)
    assert rates[0] == pytest.approx(0.3, abs=0.01)


def test_generator_sets_and_seeding():
    a, b = lr.generate_problems(400, 3, "disagreement-enriched"), lr.generate_problems(400, 3, "disagreement-enriched")
    assert a.to_dict() == b.to_dict()
    assert lr.ev_pt_disagree(a).mean() == 0.5
    u = lr.generate_problems(2000, 4, "uniform")
    assert 0.30 <= (u.pHa == 1).mean() <= 0.37                          # 30 % sure A plus draws of p = 1
    assert set(np.unique(u.pHb)) <= set(lr.P_GRID) and np.all(u.Hb >= u.Lb) and np.all(u.Hb <= 100) and np.all(u.Lb >= -50)
    g = lr.generate_problems(200, 5, "gains-only")
    assert np.all(g.La >= 0) and np.all(g.Lb >= 0)
    m = lr.generate_problems(200, 5, "mixed")
    assert np.all(m.Hb > 0) and np.all(m.Lb < 0)
    with pytest.raises(ValueError, match="'kind'"):
        lr.generate_problems(10, 0, "choices13k")
    with pytest.raises(ValueError, match="'problems'"):
        lr.ProblemSet([1], [0.5], [2], [1], [0.5], [0])                  # H < L


# --- the parser and the text pipeline -------------------------------------------------------------------------------

@pytest.mark.parametrize("text,want", [("B", 1.0), ("Option B", 1.0), ("b", 1.0), ("option a.", 0.0), ("A", 0.0),
                                       ("I choose Option B.", 1.0), ("EV(A)=3, EV(B)=5, so B.\nAnswer: A", 0.0),
                                       ("I cannot choose between A and B.", None), ("As an AI, I don't gamble.", None),
                                       ("Option A or Option B?", None), ("", None)])
def test_parse_simulate_answers(text, want):
    assert lr.parse_answer(text, "simulate") == want


@pytest.mark.parametrize("text,want", [("60%", 0.6), ("0.6", 0.6), ("60", 0.6), ("About 35 percent", 0.35), ("1", 1.0),
                                       ("0%", 0.0), ("Reasoning: 0.25 of 80 people...\nAnswer: 72%", 0.72),
                                       ("150%", None), ("I can't estimate that.", None), ("-5%", None)])
def test_parse_predict_answers(text, want):
    got = lr.parse_answer(text, "predict")
    assert got == (pytest.approx(want) if want is not None else None)


def test_text_model_counts_and_excludes_unparsable_answers():
    answers = iter(["B", "I refuse to answer.", "Option A", "b", "Sorry.", "???"] * 10)
    tm = lr.TextChoiceModel(lambda prompt: next(answers), "simulate", n_samples=3)
    out = tm.query(lr.generate_problems(2, 0))
    assert out.n_calls == 6 and out.n_unparsable == 3
    assert out.n_valid.tolist() == [2, 1] and out.p_b[0] == 0.5 and out.p_b[1] == 1.0
    none = lr.TextChoiceModel(lambda prompt: "I'd rather not say.", "predict").query(lr.generate_problems(3, 0))
    assert np.all(np.isnan(none.p_b)) and none.n_unparsable == 3
    with pytest.raises(ValueError, match="'mode'"):
        lr.TextChoiceModel(lambda p: "B", "rate")
    with pytest.raises(ValueError, match="'n_samples'"):
        lr.TextChoiceModel(lambda p: "B", n_samples=0)


def test_prompt_numbers_round_trip_and_stand_in_is_the_noiseless_ev_choice():
    ps = lr.generate_problems(300, 7, "disagreement-enriched")
    for i in range(0, 300, 37):
        q = ps[i]
        lines = lr.build_prompt(q, "simulate").splitlines()
        assert lr.ev_from_text(lines[1]) == pytest.approx(float(lr.expected_value(q.Ha, q.pHa, q.La)))
        assert lr.ev_from_text(lines[2]) == pytest.approx(float(lr.expected_value(q.Hb, q.pHb, q.Lb)))
    rep = lr.text_stand_in_report(ps)
    assert rep["mismatch"] == 0 and rep["unparsable"] == 0 and rep["compared"] == 4 * 300
    assert lr.describe_gamble(25, 0.6, -5) == "a 60% chance to win $25 and a 40% chance to lose $5"
    assert lr.describe_gamble(-3, 1.0, -3) == "lose $3 for sure"
    # a stand-in that loses the sign of losses (the failure the check is there to catch) disagrees with EV
    broken = lambda prompt: lr.ev_rule_generate(prompt.replace("lose", "win"))
    p = lr.TextChoiceModel(broken).choice_proba(ps)
    assert (p != lr.noiseless_ev_choice(ps)).sum() > 10


def test_text_model_on_a_tiny_random_gpt2_through_the_hf_adapter():
    transformers = pytest.importorskip("transformers")
    import string
    import torch
    from iclrbench.blocks import hf
    tok = hf.char_level_tokenizer(string.printable)
    ps = lr.generate_problems(3, 0)
    model = hf.tiny_random_model("gpt2", vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=64, max_position_embeddings=512)
    tm = lr.TextChoiceModel(hf.hf_generate_fn(model, tok, max_new_tokens=4, do_sample=True, seed=0), "simulate", n_samples=2)
    out = tm.query(ps)
    assert out.n_calls == 6 and len(out.answers) == 3 and all(isinstance(a, str) for r in out.answers for a in r)
    assert out.n_unparsable == out.n_calls - int(out.n_valid.sum())     # every answer either parsed or counted
    assert np.all(np.isnan(out.p_b[out.n_valid == 0]))
    # force the model to say "B": constant final hidden state = the (enlarged) embedding of "B" (tied output layer)
    b = tok.convert_tokens_to_ids("B")
    with torch.no_grad():
        model.transformer.wte.weight[b] *= 10
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.copy_(model.transformer.wte.weight[b])
    forced = lr.TextChoiceModel(hf.hf_generate_fn(model, tok, max_new_tokens=1), "simulate").query(ps)
    assert forced.answers[0] == ["B"] and forced.p_b.tolist() == [1.0, 1.0, 1.0] and forced.n_unparsable == 0


# --- the analysis ---------------------------------------------------------------------------------------------------

def test_pearson_matches_scipy_and_skips_nan():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    y = y + x
    assert lr.pearson(x, y) == pytest.approx(pearsonr(x, y)[0], rel=1e-12)
    xn = x.copy(); xn[[3, 7]] = np.nan
    keep = np.isfinite(xn)
    assert lr.pearson(xn, y) == pytest.approx(pearsonr(x[keep], y[keep])[0], rel=1e-12)
    assert math.isnan(lr.pearson([1, 1, 1], [1, 2, 3]))
    lo, hi = lr.bootstrap_r(x, y, 300, 1)
    assert lo < lr.pearson(x, y) < hi


def test_rationality_index_by_hand():
    # two disagreement problems (EV prefers B in the first, A in the second) and one agreement problem
    ps = lr.ProblemSet.from_problems([lr.Problem(10, 1, 10, 100, 0.2, -10),      # EV_B 12 > 10, PT prefers A
                                      lr.Problem(-10, 1, -10, 0, 0.1, -95),      # EV_B −85.5 < −10 (... checked below)
                                      lr.Problem(0, 1, 0, 50, 1.0, 50)])
    dis = lr.ev_pt_disagree(ps)
    assert dis.tolist() == [True, False, False]
    assert lr.rationality_index([0.9, 0.1, 0.9], ps) == 1.0
    assert lr.rationality_index([0.2, 0.1, 0.9], ps) == 0.0
    assert lr.rationality_index([0.5, 0.1, 0.9], ps) == 0.5
    mask = np.array([True, True, False])                                  # an explicit subset: second problem EV → A
    assert lr.rationality_index([0.9, 0.3, 0.0], ps, mask=mask) == 1.0


def test_pt_fit_recovers_an_ev_agent_and_the_analysis_separates_agents():
    ps = lr.generate_problems(400, 2, "disagreement-enriched")
    humans, ev = lr.PTAgent(), lr.EVAgent(0.3)
    h = lr.observe(humans, ps, 20, 1)
    fit = lr.fit_pt(ps, ev.choice_proba(ps), n_obs=200, starts=2, seed=0)   # noiseless probabilities: exact EV
    for k in ("alpha", "lam", "gamma", "delta"):
        assert getattr(fit, k) == pytest.approx(1.0, abs=0.05), k
    assert fit.phi == pytest.approx(0.3, abs=0.03) and len(fit.starts) == 2
    a = lr.analyze(lr.observe(ev, ps, 20, 3), h, ps, fit=False)
    assert a["r_ev"] - a["r_human"] > 0.2 and a["rationality_index"] > 0.8 and a["n_disagree"] == 200
    with pytest.raises(ValueError, match="'agent_rate'"):
        lr.analyze(h[:5], h, ps)
    with pytest.raises(ValueError, match="'starts'"):
        lr.fit_pt(ps, h, starts=0)


def test_choices13k_csv_loader(tmp_path):
    path = tmp_path / "c13k.csv"
    path.write_text("Problem,Ha,pHa,La,Hb,pHb,Lb,LotNumB,LotShapeB,Amb,Corr,bRate\n"
                    "1,10,1,10,30,0.5,0,1,0,0,0,0.41\n"
                    "2,-5,0.9,-20,40,0.25,-10,1,0,0,0,0.62\n"
                    "3,5,1,5,20,0.5,0,5,1,0,0,0.55\n")
    ps, rate, dropped = lr.load_choices13k_csv(path)
    assert len(ps) == 2 and dropped == 1 and rate.tolist() == [0.41, 0.62]
    assert ps[1] == lr.Problem(-5, 0.9, -20, 40, 0.25, -10)
    assert len(lr.load_choices13k_csv(path, two_outcome_only=False)[0]) == 3
    bad = tmp_path / "bad.csv"
    bad.write_text("Ha,pHa\n1,1\n")
    with pytest.raises(ValueError, match="'path'"):
        lr.load_choices13k_csv(bad)
    with pytest.raises(ValueError, match="'path'"):
        lr.load_choices13k_csv(tmp_path / "missing.csv")


# --- the run --------------------------------------------------------------------------------------------------------

def test_bad_parameters_raise_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="'n_problems'"):
        lr.run("smoke", n_problems=10)
    with pytest.raises(ValueError, match="'problem_set'"):
        lr.run("smoke", problem_set="choices13k")
    with pytest.raises(ValueError, match="'human_gamma'"):
        lr.run("smoke", human_gamma=0.1)
    with pytest.raises(ValueError, match="'mode'"):
        lr.build_prompt(lr.Problem(1, 1, 1, 2, 1, 2), "rate")
    with pytest.raises(ValueError, match="'lam'"):
        lr.PTParams(lam=-1.0)


def test_smoke_result_is_deterministic_json_and_claims_are_evaluated(smoke_result):
    r = smoke_result("llm_rationality")
    assert {o.id for o in r.claims} == {c.id for c in lr.CLAIMS}
    status = {o.id: o.status for o in r.claims}
    assert all(status[c] == "not reproducible offline" for c in ("llm-forward-ev", "llm-across-models", "llm-inverse"))
    json.dumps(r.to_dict())
    again = lr.run("smoke", n_seeds=1, n_boot=0, progress=False)
    one = lr.run("smoke", n_seeds=1, n_boot=0, progress=False)
    assert json.dumps(again.to_dict(False)["metrics"]) == json.dumps(one.to_dict(False)["metrics"])
    assert again.metrics["r_proxy_ev"][0] == r.metrics["r_proxy_ev"][0]          # seed 0 is the same in both runs
