"""Gromov-Monge gap: the estimator's defining properties, its GW part against POT, and the paper contract."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from iclrbench.explorers import gromov_monge_gap as gmg_explorer
from iclrbench.papers import gromov_monge_gap as gmg
from iclrbench.views.static import static_view
from static_view_checks import assert_static_view


def _x(n=48, seed=0):
    return torch.tensor(gmg.sample_cloud("three blobs", n, np.random.default_rng(seed))[0], dtype=torch.float64)


def test_isometry_has_no_distortion_and_no_gap():
    x = _x()
    Q, _ = torch.linalg.qr(torch.randn(2, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
    out = gmg.gmg_loss(x, x @ Q - 1.0, "l2sq", eps0=0.01, n_outer=20, n_inner=50)
    assert out.dst < 1e-9
    # GW_ε > 0 here is the entropic bias of the blurred plan, of the order of ε; GMG = −GW_ε ≤ 0
    assert out.gmg <= 1e-9 and -out.gmg < 2 * out.eps


def test_gmg_does_not_demand_isometry_but_dst_does():
    """Scaling by 2 keeps the ordering of all distances: DST is large, but no coupling does better than T's own,
    so the gap is ~0 relative to DST (GMG ≥ −entropic bias)."""
    x = _x()
    out = gmg.gmg_loss(x, 2 * x, "l2sq", eps0=0.01, n_outer=20, n_inner=50)
    assert out.dst > 50
    assert abs(out.gmg) < 0.02 * out.dst
    # a map that scrambles the blobs (non-monotone) has a large gap
    y = torch.stack([torch.sin(3 * x[:, 0]) * 2, torch.cos(2 * x[:, 1]) * 2], 1)
    o2 = gmg.gmg_loss(x, y, "l2sq", eps0=0.01, n_outer=20, n_inner=50)
    assert o2.gmg > 0.1 * o2.dst
    # the scaled cost removes the global factor: DST of 2x is 0
    assert gmg.distortion(x, 2 * x, "scl2sq") < 1e-12


def test_gw_part_matches_pot_from_the_identity_coupling():
    ot = pytest.importorskip("ot")
    x = 0.3 * _x(30)                # unit-scale costs: POT's inner Sinkhorn is standard-domain and would underflow
    y = torch.tanh(x) * torch.tensor([2.0, 1.0], dtype=torch.float64)
    out = gmg.gmg_loss(x, y, "l2sq", eps0=0.05, n_outer=50, n_inner=300, init="identity")
    CX, CY = gmg.geometry_cost(x).numpy(), gmg.geometry_cost(y).numpy()
    p = ot.unif(30)
    # the card's P ← Sinkhorn(L, ε) is POT's Sinkhorn(2L, 2ε)
    P, log = ot.gromov.entropic_gromov_wasserstein(CX, CY, p, p, "square_loss", epsilon=2 * out.eps, G0=np.eye(30) / 30,
                                                   max_iter=200, tol=1e-12, log=True, numItermax=5000, stopThr=1e-13)
    assert abs(float(out.gw) - log["gw_dist"]) <= 1e-4 * abs(log["gw_dist"])
    assert np.abs(out.plan.numpy() - P).max() <= 1e-3 * P.max()
    assert abs(float(out.dst) - ((CX - CY) ** 2).mean()) < 1e-9


def test_gw_part_matches_pot_from_both_initialisations_and_best_keeps_the_lower():
    """The solver against POT's entropic GW on the same C_X, C_Y and ε, from the identity and the product coupling;
    init='best' (the default) keeps the plan with the lower GW cost of the two."""
    ot = pytest.importorskip("ot")
    x = 0.3 * _x(30, seed=3)        # unit-scale costs: POT's inner Sinkhorn is standard-domain and would underflow
    y = torch.stack([torch.sin(2 * x[:, 0]) + 0.5 * x[:, 1] ** 2, torch.tanh(3 * x[:, 1]) - x[:, 0]], 1)
    CX, CY = gmg.geometry_cost(x).numpy(), gmg.geometry_cost(y).numpy()
    p = ot.unif(30)
    outs = {}
    for init, G0 in (("identity", np.eye(30) / 30), ("product", None)):
        out = gmg.gmg_loss(x, y, "l2sq", eps0=0.05, n_outer=100, n_inner=300, init=init)
        # the card's P ← Sinkhorn(L, ε) is POT's Sinkhorn(2L, 2ε)
        P, log = ot.gromov.entropic_gromov_wasserstein(CX, CY, p, p, "square_loss", epsilon=2 * out.eps, G0=G0,
                                                       max_iter=300, tol=1e-12, log=True, numItermax=5000, stopThr=1e-13)
        assert abs(float(out.gw) - log["gw_dist"]) <= 1e-4 * abs(log["gw_dist"]), init
        assert np.abs(out.plan.numpy() - P).max() <= 1e-3 * P.max(), init
        outs[init] = out
    best = gmg.gmg_loss(x, y, "l2sq", eps0=0.05, n_outer=100, n_inner=300)
    assert float(best.gw) == min(float(o.gw) for o in outs.values())
    assert float(best.gmg) == max(float(o.gmg) for o in outs.values())
    with pytest.raises(ValueError, match="'init'"): gmg.gmg_loss(x, y, init="random")


def test_gradient_reaches_c_y_through_both_occurrences_at_the_frozen_plan():
    """GW cost ⟨L(P), P⟩ has C_Y in the marginal term (C_Y² b) and the cross term (−2 C_X P C_Yᵀ); at a frozen plan its
    gradient is 2 C_Y∘bbᵀ − 2 PᵀC_XP, and for GMG = DST − GW the quadratic parts cancel: ∂GMG/∂C_Y = 2(PᵀC_XP − C_X/n²)."""
    from iclrbench.blocks.ot import gw_cost
    x = _x(24, seed=4)
    y = torch.tanh(x) * torch.tensor([2.0, 1.0], dtype=torch.float64)
    out = gmg.gmg_loss(x, y, "l2sq", eps0=0.01, n_outer=20, n_inner=50)
    P, n = out.plan, 24
    CX = gmg.geometry_cost(x)
    CY = gmg.geometry_cost(y).detach().requires_grad_(True)
    b = torch.full((n,), 1.0 / n, dtype=torch.float64)
    (g_gw,) = torch.autograd.grad(gw_cost(CX, CY, P, b, b), CY)
    torch.testing.assert_close(g_gw, 2 * CY.detach() * torch.outer(b, b) - 2 * P.T @ CX @ P)
    gap = ((CX - CY) ** 2).mean() - gw_cost(CX, CY, P, b, b)
    (g_gap,) = torch.autograd.grad(gap, CY)
    torch.testing.assert_close(g_gap, 2 * (P.T @ CX @ P - CX / n ** 2))
    # and the plan P* is far from T's own coupling here, so that gradient is not zero
    assert float((P - torch.eye(n, dtype=torch.float64) / n).abs().sum()) > 0.5 and float(g_gap.abs().max()) > 0


def test_gmg_of_a_random_nonlinear_map_is_positive_and_its_gradient_lowers_it():
    torch.manual_seed(5)
    T = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2)).double()
    with torch.no_grad(): T[0].weight.mul_(3.0)
    x = _x(64, seed=5)
    def image(x):                                     # the random tanh network, rescaled to the spread of x
        y = T(x)
        return y / y.std() * x.std()
    out = gmg.gmg_loss(x, image(x), "l2sq", eps0=0.01, n_outer=20, n_inner=50)
    assert float(out.gmg) > out.eps > 0                # above the entropic bias, which is O(ε)
    out.gmg.backward()
    grads = [p.grad.clone() for p in T.parameters()]
    gnorm = float(torch.sqrt(sum((g ** 2).sum() for g in grads)))
    assert np.isfinite(gnorm) and gnorm > 0
    with torch.no_grad():
        for p, g in zip(T.parameters(), grads): p -= 1e-2 * float(out.gmg) / gnorm ** 2 * g    # a small step down the gradient
    after = gmg.gmg_loss(x, image(x), "l2sq", eps0=0.01, n_outer=20, n_inner=50)
    assert float(after.gmg) < float(out.gmg)


def test_gw_lower_bound_is_below_every_coupling_and_exact_for_an_isometry():
    x = _x(40, seed=6)
    y = torch.stack([torch.sin(x[:, 0]), x[:, 1] ** 2 / 3], 1)
    lb = gmg.gw_lower_bound(x, y)
    out = gmg.gmg_loss(x, y, "l2sq", eps0=0.01, n_outer=20, n_inner=50)
    assert 0 <= lb <= float(out.gw) and lb <= float(out.dst)
    assert gmg.gw_lower_bound(x, x.flip(1) + 3.0) < 1e-12

def test_gradient_reaches_the_map_and_is_finite():
    model = gmg.make_map(0)
    x = _x(32).float()
    out = gmg.gmg_loss(x, model(x), "cos")
    out.gmg.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0


# The envelope gradient of GW_ε (plan frozen) is checked against finite differences in tests/test_ot.py
# (test_entropic_gw_gradient_matches_finite_differences); DST is plain autograd.


def test_bad_arguments_raise_naming_the_parameter():
    x = _x(8)
    with pytest.raises(ValueError, match="'cost'"): gmg.geometry_cost(x, "l1")
    with pytest.raises(ValueError, match="'eps0'"): gmg.gmg_loss(x, x, eps0=0)
    with pytest.raises(ValueError, match="'regulariser'"): gmg.MapTrainer(gmg.GMGConfig(regulariser="jacobian"))
    with pytest.raises(ValueError, match="'kind'"): gmg.sample_cloud("torus", 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="'lam'"): gmg.run("smoke", lam=-1.0)


SHORT = dict(n_seeds=1, steps=40, gw_outer=5, gw_inner=20, lam=1.0)


@pytest.fixture(scope="module")
def short_result():
    return gmg.run("smoke", seed=0, progress=False, **SHORT)


def test_short_run_is_deterministic_and_gmg_fits_better_than_dst(short_result):
    r1 = short_result
    r2 = gmg.run("smoke", seed=0, progress=False, **SHORT)
    assert r1.metrics == r2.metrics
    m = r1.metrics
    # even after 40 steps a strong DST penalty holds the cloud back more than GMG does
    assert m["fit_GMG"][0] < m["fit_DST"][0]
    assert m["dst_DST"][0] < m["dst_none"][0]


def test_static_view_steps_through_regularisers_and_checkpoints_after_a_json_round_trip(short_result):
    import json
    from iclrbench.core import Result
    r = Result.from_dict(json.loads(json.dumps(short_result.to_dict())))
    ex = gmg_explorer.explore(r)
    n_ckpt = len(r.artefacts["snapshot_steps"])
    assert ex.STATIC_GRID == {"regulariser": ["none", "DST", "GMG"], "checkpoint": list(range(n_ckpt))} and n_ckpt >= 2
    fig = static_view(ex)
    (slider,) = assert_static_view(fig)
    assert len(slider.steps) == 3 * n_ckpt and not ex.errors
    titles = [s.args[1]["title.text"] for s in slider.steps]
    # each frame's title names its regulariser and its training step: step 0 is the (near-identity) initial map
    for (reg, k), title in zip([(g, k) for g in ("none", "DST", "GMG") for k in range(n_ckpt)], titles):
        assert f", {reg} (" in title and f"step {r.artefacts['snapshot_steps'][k]}," in title, (reg, k, title)
    # the mapped points differ between the first and the last checkpoint, and between regularisers
    per = len(fig.data) // len(slider.steps)
    def mapped(i): return [list(t.x) for t in fig.data[i * per:(i + 1) * per] if (t.name or "").startswith("T(x)")]
    assert mapped(0) != mapped(n_ckpt - 1) and mapped(n_ckpt - 1) != mapped(2 * n_ckpt - 1)
    # the docs build it from stored runs: a JSON result, in a few seconds, and the controls are back where they were
    assert ex.controls["regulariser"].value == "GMG" and ex.controls["checkpoint"].value == n_ckpt - 1


# --- the β-VAE sprites DCI demo (§4b, full scale only) ---------------------------------------------------------------

def test_sprite_factors_are_independent_and_determine_the_image():
    rng = np.random.default_rng(0)
    f = gmg.sample_sprite_factors(5000, rng)
    assert f.shape == (5000, 3) and f.min() >= 0 and f.max() <= 1
    corr = np.corrcoef(f.T)
    assert np.abs(corr - np.eye(3)).max() < 0.05                      # independent draws: no correlation between factors
    img = gmg.render_sprites(f[:500])
    assert img.shape == (500, 16, 16) and img.min() >= 0 and img.max() <= 1
    np.testing.assert_array_equal(img, gmg.render_sprites(f[:500]))  # a deterministic function of the factors
    # the centre of mass follows the x / y factors, the ink (area) the scale factor
    cols, rows = np.arange(16) + 0.5, np.arange(16) + 0.5
    mass = img.sum((1, 2))
    cx, cy = (img.sum(1) * cols).sum(1) / mass, (img.sum(2) * rows).sum(1) / mass
    assert np.abs(cx - (3.5 + 9 * f[:500, 0])).max() < 0.3 and np.abs(cy - (3.5 + 9 * f[:500, 1])).max() < 0.3
    np.testing.assert_allclose(mass, (3 + 4 * f[:500, 2]) ** 2)
    # same seed, same sprites
    np.testing.assert_array_equal(gmg.sample_sprite_factors(10, np.random.default_rng(3)), gmg.sample_sprite_factors(10, np.random.default_rng(3)))


def test_dci_disentanglement_is_high_for_aligned_latents_and_low_for_mixed_ones():
    rng = np.random.default_rng(1)
    f = gmg.sample_sprite_factors(600, rng)
    aligned = f + 0.02 * rng.normal(size=f.shape)
    mixed = (f - 0.5) @ (np.eye(3) - 2 / 3 * np.ones((3, 3)))        # an orthogonal map that mixes every factor into every latent
    kw = dict(n_estimators=40)
    good = gmg.dci_scores(aligned[:400], f[:400], aligned[400:], f[400:], **kw)
    bad = gmg.dci_scores(mixed[:400], f[:400], mixed[400:], f[400:], **kw)
    assert good["disentanglement"] > 0.9 and good["completeness"] > 0.9
    assert bad["disentanglement"] < 0.5 and bad["completeness"] < 0.5
    assert good["informativeness_r2"] > 0.9 and bad["informativeness_r2"] > 0.9   # both are informative, only one disentangled
    # a useless latent: constant (zero importance) or pure noise (little importance) barely changes D
    const = np.c_[aligned, np.zeros(600)]
    noise = np.c_[aligned, rng.normal(size=600)]
    for z in (const, noise):
        d = gmg.dci_scores(z[:400], f[:400], z[400:], f[400:], **kw)
        assert np.isfinite(d["disentanglement"]) and d["disentanglement"] > 0.85 and np.array(d["importance"]).shape == (4, 3)
    # the formula on importance matrices: a permutation matrix gives D = C = 1, a uniform one D = C = 0
    assert gmg.dci_from_importance(np.eye(3)[[2, 0, 1]])["disentanglement"] == pytest.approx(1.0)
    assert gmg.dci_from_importance(np.ones((3, 3)))["disentanglement"] == pytest.approx(0.0, abs=1e-12)
    assert gmg.dci_from_importance(np.zeros((4, 3)))["disentanglement"] == 0.0
    # one latent carrying two factors equally: D_j = 1 − log_3 2
    d = gmg.dci_from_importance([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    assert d["D_per_latent"][0] == pytest.approx(1 - np.log(2) / np.log(3))


TINY_DEMO = dict(steps=6, batch=16, n_dci_train=60, n_dci_test=30, n_estimators=5, gw_outer=2, gw_inner=5)


@pytest.fixture(scope="module")
def tiny_demo():
    return gmg.sprite_dci_demo([0, 1], gmg.DCIDemoConfig(**TINY_DEMO), progress=False)


def test_tiny_dci_demo_returns_finite_values_and_is_deterministic(tiny_demo):
    cfg = gmg.DCIDemoConfig(**TINY_DEMO)
    d = tiny_demo
    assert d["seeds"] == [0, 1] and d["factors"] == list(gmg.SPRITE_FACTORS) and d["config"]["lam"] == cfg.lam
    for r in gmg.REGULARISERS:
        for k in ("D", "C", "I", "rec", "mse", "neg_elbo", "kl", "dst", "gmg", "active", "seconds"):
            assert len(d[r][k]) == 2 and all(np.isfinite(v) for v in d[r][k]), (r, k)
        assert all(0 <= v <= 1 + 1e-9 for v in d[r]["D"] + d[r]["C"])
        assert np.array(d[r]["importance"]).shape == (2, 4, 3)
    d2 = gmg.sprite_dci_demo([0, 1], cfg, progress=False)
    for r in gmg.REGULARISERS:
        for k in ("D", "C", "I", "rec", "dst", "gmg"): assert d[r][k] == d2[r][k], (r, k)
    # the regulariser acts on the decoder: with the same seed and data, DST / GMG change the trained model
    assert d["DST"]["rec"] != d["none"]["rec"] and d["GMG"]["rec"] != d["none"]["rec"]


def test_dci_demo_bad_parameters_raise_naming_the_parameter():
    with pytest.raises(ValueError, match="'dci_steps'"): gmg.run("smoke", dci_steps=0)
    with pytest.raises(ValueError, match="'dci_lam'"): gmg.run("smoke", dci_lam=-1.0)
    with pytest.raises(ValueError, match="'dci_demo'"): gmg.run("smoke", dci_demo="maybe")
    with pytest.raises(ValueError, match="'steps'"): gmg.sprite_dci_demo([0], gmg.DCIDemoConfig(steps=0))
    with pytest.raises(ValueError, match="'lam'"): gmg.sprite_dci_demo([0], gmg.DCIDemoConfig(lam=-2.0))
    with pytest.raises(ValueError, match="'cost'"): gmg.sprite_dci_demo([0], gmg.DCIDemoConfig(cost="l1"))
    with pytest.raises(ValueError, match="'seeds'"): gmg.sprite_dci_demo([], gmg.DCIDemoConfig())
    with pytest.raises(ValueError, match="'regulariser'"): gmg.train_sprite_vae("HFS", 0, gmg.DCIDemoConfig(steps=1))
    with pytest.raises(ValueError, match="'factors'"): gmg.render_sprites(np.full((2, 3), 1.5))
    with pytest.raises(ValueError, match="'z_train'"): gmg.dci_scores(np.zeros(5), np.zeros((5, 3)), np.zeros((5, 1)), np.zeros((5, 3)))


def test_smoke_scale_does_not_run_the_dci_demo_and_full_does():
    from iclrbench.core import resolve_params
    assert resolve_params(gmg.PARAMS, gmg.SCALES, "smoke", {})["dci_demo"] is False
    assert resolve_params(gmg.PARAMS, gmg.SCALES, "full", {})["dci_demo"] is True


def test_fig_dci_shows_bars_and_per_seed_points(tiny_demo):
    import json
    from iclrbench.core import Result
    r = Result(slug=gmg.PAPER.slug, scale="full", seed=0, params={}, metrics={"dci": tiny_demo})
    r = Result.from_dict(json.loads(json.dumps(r.to_dict())))       # also after a JSON round trip
    fig = gmg_explorer.fig_dci(r)
    bars = [t for t in fig.data if t.type == "bar"]
    points = [t for t in fig.data if t.type == "scatter"]
    assert len(bars) == len(points) == 4 * len(gmg.REGULARISERS)
    assert bars[0].y[0] == pytest.approx(np.mean(tiny_demo["none"]["D"])) and list(points[0].y) == pytest.approx(tiny_demo["none"]["D"])
    with pytest.raises(ValueError, match="'result'"): gmg_explorer.fig_dci(Result(slug=gmg.PAPER.slug, scale="smoke", seed=0, params={}, metrics={}))
