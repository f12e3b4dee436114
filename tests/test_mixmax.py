"""Library tests for MixMax (Thudi & Maddison, ICLR 2025): exact λ*, gradient, concavity, estimators, baselines, adapter."""
from __future__ import annotations

import json

import numpy as np
import pytest

import iclrbench.papers.mixmax as mm

SIZES = mm.GROUP_SIZES


@pytest.fixture(scope="module")
def joint():
    return mm.discrete_groups()


@pytest.fixture(scope="module")
def star(joint):
    return mm.exact_minimax(joint)


def test_exact_lambda_star_matches_card_pilot(joint, star):
    assert star.converged
    assert np.allclose(star.lam, [0.477, 0.464, 0.060], atol=2e-3)
    assert mm.conditional_entropy(joint, star.lam) == pytest.approx(0.668, abs=1e-3)
    assert mm.entropy_gradient(joint, mm.balanced_lambda(SIZES)).max() == pytest.approx(0.744, abs=1e-3)
    assert mm.entropy_gradient(joint, mm.pooled_lambda(SIZES)).max() == pytest.approx(1.065, abs=1e-3)


def test_equaliser_property_and_zero_duality_gap(joint, star):
    ce = mm.entropy_gradient(joint, star.lam)
    H = mm.conditional_entropy(joint, star.lam)
    assert ce.max() - ce.min() < 1e-8                      # all three groups have positive weight here
    assert ce.max() - H < 1e-8                             # the mixture-Bayes predictor attains max_λ H
    # any other λ has a positive duality gap: worst group CE of p_λ exceeds H(λ)
    for lam in ([1 / 3] * 3, [0.6, 0.3, 0.1], mm.pooled_lambda(SIZES)):
        lam = np.asarray(lam)
        assert mm.entropy_gradient(joint, lam).max() - mm.conditional_entropy(joint, lam) > 1e-3
    # disjoint supports (overlap 0): H is linear, λ* is the vertex of the noisiest group; the others have lower loss
    j0 = mm.discrete_groups(overlap=0.0)
    s0 = mm.exact_minimax(j0, tol=1e-6)
    ce0 = mm.entropy_gradient(j0, s0.lam)
    assert s0.lam.argmax() == 2 and s0.lam[2] > 0.99 and np.all(ce0[:2] < ce0[2] - 0.05)


def test_weak_duality_holds_for_every_predictor(joint, star):
    H = mm.conditional_entropy(joint, star.lam)
    rng = np.random.default_rng(0)
    for _ in range(200):
        f = rng.dirichlet(np.ones(2), size=8)               # an arbitrary predictor f(y|x)
        assert mm.group_cross_entropies(joint, f).max() >= H - 1e-12


@pytest.mark.parametrize("noise,overlap", [((0, 0, 0), 1.0), ((0.1, 0.0, 0.3), 0.6), ((0.0, 0.2, 0.0), 0.2)])
def test_gradient_matches_finite_differences(noise, overlap):
    j = mm.discrete_groups(noise, overlap)
    rng = np.random.default_rng(1)
    h = 1e-6
    for lam in rng.dirichlet(np.ones(3), size=5):
        fd = [(mm.conditional_entropy(j, lam + h * e) - mm.conditional_entropy(j, lam - h * e)) / (2 * h) for e in np.eye(3)]
        assert np.allclose(fd, mm.entropy_gradient(j, lam), atol=1e-6)
        # Euler's identity for the degree-1 homogeneous H: H(λ) = Σ_g λ_g ∂_g H
        assert mm.conditional_entropy(j, lam) == pytest.approx(float(lam @ mm.entropy_gradient(j, lam)), abs=1e-12)


@pytest.mark.parametrize("noise,overlap", [((0, 0, 0), 1.0), ((0.3, 0.1, 0.0), 0.5)])
def test_conditional_entropy_is_concave_on_random_segments(noise, overlap):
    j = mm.discrete_groups(noise, overlap)
    rng = np.random.default_rng(2)
    a, b = rng.dirichlet(np.ones(3), 300), rng.dirichlet(np.ones(3), 300)
    for t in rng.random(10):
        mid = mm.conditional_entropy_grid(j, (1 - t) * a + t * b)
        chord = (1 - t) * mm.conditional_entropy_grid(j, a) + t * mm.conditional_entropy_grid(j, b)
        assert np.all(mid >= chord - 1e-12)
    # and the grid maximum agrees with the mirror-ascent maximum
    grid = mm.simplex_grid(60)
    assert mm.conditional_entropy_grid(j, grid).max() <= mm.conditional_entropy(j, mm.exact_minimax(j, tol=1e-8).lam) + 1e-9


def test_conditional_entropy_grid_matches_scalar(joint):
    grid = mm.simplex_grid(10)
    assert np.allclose(mm.conditional_entropy_grid(joint, grid), [mm.conditional_entropy(joint, l) for l in grid])


@pytest.mark.parametrize("estimator", ["counts-reuse", "counts-split"])
def test_counts_estimator_recovers_lambda_star_for_large_n(joint, star, estimator):
    rng = np.random.default_rng(3)
    groups = mm.sample_discrete(joint, (40000, 40000, 40000), rng)
    asc = mm.estimate_lambda(estimator, groups, joint, rng)
    assert asc.converged and np.abs(asc.lam - star.lam).sum() < 0.03


def test_proxy_estimator_with_true_classifier_gives_exact_gradient(joint):
    """With h(g,y|x) the true joint-class posterior, the proxy formula reproduces ∂H/∂λ (up to Monte-Carlo error)."""
    rng = np.random.default_rng(4)
    groups = mm.sample_discrete(joint, (100000, 100000, 100000), rng)
    x, y, g = mm.stack_groups(groups)
    h_true = joint / joint.sum(axis=(0, 2), keepdims=True)          # h(g, y | x) with equal group priors
    h = np.transpose(h_true, (1, 0, 2))[x]                          # (n, k, C)
    fn = mm.proxy_losses_from_probs(h, y, g, 3)
    for lam in ([1 / 3] * 3, [0.5, 0.4, 0.1]):
        assert np.allclose(fn(np.asarray(lam)), mm.entropy_gradient(joint, np.asarray(lam)), atol=0.01)


def test_proxy_estimator_with_fitted_classifier(joint, star):
    rng = np.random.default_rng(5)
    groups = mm.sample_discrete(joint, SIZES, rng)
    asc = mm.estimate_lambda("proxy", groups, joint, rng)
    assert np.abs(asc.lam - star.lam).sum() < 0.15


def test_mixture_weights_are_lambda_over_n():
    g = np.repeat([0, 1, 2], [40, 15, 5])
    lam = np.array([0.5, 0.4, 0.1])
    w = mm.mixture_weights(lam, g)
    assert w.mean() == pytest.approx(1.0)
    per_group = np.bincount(g, weights=w) / w.sum()
    assert np.allclose(per_group, lam)                     # group totals ∝ λ_g, not ∝ λ_g n_g
    assert np.allclose(w[g == 2][0] / w[g == 0][0], (0.1 / 5) / (0.5 / 40))


def test_mixmax_beats_balanced_and_pooled_on_exact_worst_group(joint):
    rng = np.random.default_rng(6)
    groups = mm.sample_discrete(joint, SIZES, rng)
    lam = mm.estimate_lambda("counts-reuse", groups, joint, rng).lam
    x, y, g = mm.stack_groups(groups)
    for model in ("table", "gradient boosting"):
        worst = {name: mm.group_cross_entropies(joint, mm.fit_final_model(model, x, y, mm.mixture_weights(l, g))).max()
                 for name, l in (("mixmax", lam), ("balanced", mm.balanced_lambda(SIZES)), ("pooled", mm.pooled_lambda(SIZES)))}
        assert worst["mixmax"] < worst["balanced"] - 0.02 and worst["mixmax"] < worst["pooled"] - 0.2, (model, worst)
    # fitting with λ_g as the per-sample weight (the card's pitfall) is a different, worse mixture here
    wrong = mm.fit_table(x, y, lam[g])
    right = mm.fit_table(x, y, mm.mixture_weights(lam, g))
    assert mm.group_cross_entropies(joint, wrong).max() > mm.group_cross_entropies(joint, right).max() + 0.05


def test_compressed_cells_give_the_same_fits(joint):
    rng = np.random.default_rng(7)
    x, y, g = mm.stack_groups(mm.sample_discrete(joint, (300, 200, 100), rng))
    w = mm.mixture_weights(np.array([0.2, 0.3, 0.5]), g)
    cx, cy, cw = mm.compress_discrete(x, y, w)
    assert np.allclose(mm.fit_table(x, y, w), mm.fit_table(cx, cy, cw))
    assert cw.sum() == pytest.approx(w.sum())


def test_group_dro_runs_and_converges_towards_the_minimax_value(joint, star):
    rng = np.random.default_rng(8)
    groups = mm.sample_discrete(joint, SIZES, rng)
    H = mm.conditional_entropy(joint, star.lam)
    dro = mm.group_dro_discrete(groups, steps=300)
    assert dro.q_path.shape == (301, 3) and np.allclose(dro.q.sum(), 1)
    assert dro.q[2] < 1 / 3                                  # q moves weight away from the small, easy-ish group G3
    worst300 = mm.group_cross_entropies(joint, dro.cond).max()
    assert H - 1e-9 <= worst300 < mm.entropy_gradient(joint, mm.balanced_lambda(SIZES)).max()
    # with a larger q step the online method reaches the same minimax solution as MixMax (minimax theorem)
    dro_fast = mm.group_dro_discrete(groups, steps=1500, eta_q=0.1)
    assert np.abs(dro_fast.q - star.lam).sum() < 0.15
    assert mm.group_cross_entropies(joint, dro_fast.cond).max() < H + 0.02


def test_adapter_with_hist_gradient_boosting(joint, star):
    from sklearn.ensemble import HistGradientBoostingClassifier
    rng = np.random.default_rng(9)
    groups = [(mm.one_hot(x), y) for x, y in mm.sample_discrete(joint, SIZES, rng)]
    fit = mm.mixmax_fit(HistGradientBoostingClassifier(random_state=0), groups)
    lam, est = fit                                              # unpacks as (λ, fitted estimator)
    assert fit.lambda_estimator == "counts-reuse" and np.abs(lam - star.lam).sum() < 0.15
    f = est.predict_proba(mm.one_hot(np.arange(8)))
    bal = mm.mixmax_fit(HistGradientBoostingClassifier(random_state=0), groups, lam=[1, 1, 1]).estimator
    fb = bal.predict_proba(mm.one_hot(np.arange(8)))
    assert mm.group_cross_entropies(joint, f).max() < mm.group_cross_entropies(joint, fb).max() - 0.02


def test_adapter_with_torch_mlp_and_proxy_estimator(joint, star):
    from sklearn.neural_network import MLPClassifier
    rng = np.random.default_rng(10)
    groups = [(mm.one_hot(x), y) for x, y in mm.sample_discrete(joint, SIZES, rng)]
    fit = mm.mixmax_fit(mm.TorchMLPClassifier(hidden=16, epochs=200), groups, lambda_estimator="proxy")
    assert fit.lambda_estimator == "proxy" and fit.ascent is not None
    assert np.abs(fit.lam - star.lam).sum() < 0.15
    f = fit.estimator.predict_proba(mm.one_hot(np.arange(8)))
    assert f.shape == (8, 2) and mm.group_cross_entropies(joint, f).max() < 0.70
    # an sklearn MLP (supports sample_weight) through the same adapter, with a given λ
    sk = mm.mixmax_fit(MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0), groups, lam=fit.lam)
    assert sk.lambda_estimator == "given" and sk.estimator.predict_proba(mm.one_hot(np.arange(8))).shape == (8, 2)


def test_continuous_variant_proxy_estimator():
    r = mm.continuous_experiment((2000, 1500, 500), seed=0, n_test=5000)
    assert r["l1"] < 0.2
    assert r["mixmax"].max() < r["balanced"].max()


def test_bad_parameters_raise_value_error_naming_the_parameter(joint):
    with pytest.raises(ValueError, match="'eta'"):
        mm.run("smoke", eta=-1.0)
    with pytest.raises(ValueError, match="'estimator'"):
        mm.run("smoke", estimator="magic")
    with pytest.raises(ValueError, match="'n_g3'"):
        mm.run("smoke", n_g3=5)
    with pytest.raises(ValueError, match="'noise'"):
        mm.discrete_groups(noise=(0.7, 0, 0))
    with pytest.raises(ValueError, match="'overlap'"):
        mm.discrete_groups(overlap=1.5)
    with pytest.raises(ValueError, match="'eta'"):
        mm.mirror_ascent(mm.exact_estimator(joint), 3, eta=0.0)
    with pytest.raises(ValueError, match="'groups'"):
        mm.mixmax_fit(mm.TorchMLPClassifier(), [(np.zeros((3, 1)), np.zeros(3))])
    with pytest.raises(ValueError, match="'lambda_estimator'"):
        mm.mixmax_fit(mm.TorchMLPClassifier(), [(np.zeros((3, 1)), np.zeros(3))] * 2, lambda_estimator="x")
    with pytest.raises(ValueError, match="'model'"):
        mm.fit_final_model("forest", np.zeros(3, int), np.zeros(3, int), np.ones(3))


def test_same_seed_same_numbers_and_claims_are_evaluated():
    kw = dict(n_seeds=1, sweep_points=2, dro_steps=50, progress=False)
    a, b, c = mm.run("smoke", seed=3, **kw), mm.run("smoke", seed=3, **kw), mm.run("smoke", seed=4, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    assert a.metrics["lambda_hat"] != c.metrics["lambda_hat"]
    assert {o.id for o in a.claims} == {cl.id for cl in mm.CLAIMS}
    json.dumps(a.to_dict())


def test_claim_checks_can_fail():
    """Each check rejects metrics from a broken method (e.g. the balanced mixture reported as MixMax)."""
    ok = mm.run("smoke", n_seeds=1, sweep_points=0, dro_steps=20, progress=False).metrics
    bad = dict(ok)
    bad["lambda_l1"] = [0.3]
    bad["worst_ce_mixmax_table"] = bad["worst_ce_balanced_table"]
    bad["worst_ce_mixmax_hgb"] = [v + 0.5 for v in bad["worst_ce_group_dro"]]
    bad["equaliser_spread_table"] = [0.2]
    bad["duality_gap_star"] = 0.05
    for claim in mm.CLAIMS:
        assert claim.check(ok)[0] or claim.id == "matches-group-dro", claim.id
        held, measured = claim.check(bad)
        assert not held and measured, claim.id
