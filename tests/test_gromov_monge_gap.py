"""Gromov-Monge gap: the estimator's defining properties, its GW part against POT, and the paper contract."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from iclrbench.papers import gromov_monge_gap as gmg


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
    out = gmg.gmg_loss(x, y, "l2sq", eps0=0.05, n_outer=50, n_inner=300)
    CX, CY = gmg.geometry_cost(x).numpy(), gmg.geometry_cost(y).numpy()
    p = ot.unif(30)
    # the card's P ← Sinkhorn(L, ε) is POT's Sinkhorn(2L, 2ε)
    P, log = ot.gromov.entropic_gromov_wasserstein(CX, CY, p, p, "square_loss", epsilon=2 * out.eps, G0=np.eye(30) / 30,
                                                   max_iter=200, tol=1e-12, log=True, numItermax=5000, stopThr=1e-13)
    assert abs(float(out.gw) - log["gw_dist"]) <= 1e-4 * abs(log["gw_dist"])
    assert np.abs(out.plan.numpy() - P).max() <= 1e-3 * P.max()
    assert abs(float(out.dst) - ((CX - CY) ** 2).mean()) < 1e-9


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
    fig = gmg.static_view(r)
    (slider,), (menu,) = fig.layout.sliders, fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["no regulariser", "DST", "GMG"]
    assert [s.label for s in slider.steps] == [str(v) for v in r.artefacts["snapshot_steps"]] and len(slider.steps) >= 2
    args = [json.dumps(c.args) for c in list(slider.steps) + list(menu.buttons)]
    assert len(set(args)) == len(args)
    # step 0 is the (near-identity) initial map, the last step the trained one: the mapped points differ
    assert slider.steps[0].args[0]["x"][0] != slider.steps[-1].args[0]["x"][0]
    # one regulariser's traces visible at a time, the target and the source always
    vis = [b.args[0]["visible"] for b in menu.buttons]
    assert all(v[0] and sum(v) == sum(vis[0]) for v in vis) and len({tuple(v) for v in vis}) == 3
    assert "static view" in fig.layout.title.text and len(fig.to_json()) < 2_000_000
