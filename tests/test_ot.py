"""iclrbench.blocks.ot against POT on the same inputs, and its gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest
import torch

ot = pytest.importorskip("ot")

import iclrbench.blocks.ot as otm
from iclrbench.blocks.ot import (barycentric_map, entropic_gw, gw_cost, pairwise_cost, sinkhorn, sinkhorn_divergence)


@pytest.fixture(autouse=True)
def _float64():
    "Double precision inside this module only (restored afterwards, other test modules are unaffected)."
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.fixture(autouse=True, params=["numpy", "torch"])
def _loop(request, monkeypatch):
    "Every test with both Sinkhorn loops: NumPy (small CPU problems, all of this module's by default) and torch (the rest)."
    if request.param == "torch": monkeypatch.setattr(otm, "_NUMPY_MAX_SIZE", 0)
    return request.param


def _clouds(n=20, m=25, seed=0, d=2):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d)) + 0.5
    return x, y


def _rel(a, b):
    return abs(float(a) - float(b)) / abs(float(b))


@pytest.mark.parametrize("eps", [0.5, 0.05, 0.01])
def test_sinkhorn_matches_pot(eps):
    x, y = _clouds()
    M = ot.dist(x, y)
    M /= M.max()
    rng = np.random.default_rng(1)
    a = rng.random(len(x)) + 0.5; a /= a.sum()
    b = rng.random(len(y)) + 0.5; b /= b.sum()
    P_pot = ot.sinkhorn(a, b, M, eps, method="sinkhorn_log", numItermax=20000, stopThr=1e-12)
    cost_pot = ot.sinkhorn2(a, b, M, eps, method="sinkhorn_log", numItermax=20000, stopThr=1e-12)
    out = sinkhorn(torch.tensor(M), torch.tensor(a), torch.tensor(b), eps=eps, n_iter=20000, tol=1e-12)
    assert _rel(out.cost, cost_pot) < 1e-4
    assert np.abs(out.plan.numpy() - P_pot).max() <= 1e-3 * P_pot.max()
    # annealed from a large ε: the same solution
    out2 = sinkhorn(torch.tensor(M), torch.tensor(a), torch.tensor(b), eps=eps, n_iter=20000, tol=1e-12, eps_start=10.0)
    assert np.abs(out2.plan.numpy() - P_pot).max() <= 1e-3 * P_pot.max()


@pytest.mark.parametrize("eps,scale", [(1e-3, 1.0), (5e-3, 5.0)])
def test_sinkhorn_survives_underflowing_kernels(eps, scale):
    "At ε ≪ cost the zero-potential kernel underflows (exp(−C/ε) = 0): the solver re-centres (and if need be falls back to"
    "the log domain) and still matches POT's log-domain Sinkhorn; fixed iteration counts (tol = 0) give the same plan."
    x, y = _clouds()
    M = ot.dist(x, y); M = scale * M / M.max()
    assert np.exp(-M.max() / eps) == 0.0                           # the plain kernel really underflows here
    a, b = ot.unif(len(x)), ot.unif(len(y))
    P_pot = ot.sinkhorn(a, b, M, eps, method="sinkhorn_log", numItermax=20000, stopThr=1e-12)
    out = sinkhorn(torch.tensor(M), eps=eps, n_iter=20000, tol=1e-12)
    assert np.isfinite(out.plan.numpy()).all() and out.err < 1e-10
    assert np.abs(out.plan.numpy() - P_pot).max() <= 1e-3 * P_pot.max()
    fixed = sinkhorn(torch.tensor(M), eps=eps, n_iter=out.n_iter + 50, tol=0.0)
    assert fixed.n_iter == out.n_iter + 50 and np.abs(fixed.plan.numpy() - P_pot).max() <= 1e-3 * P_pot.max()


def test_sinkhorn_regularised_value_matches_pot_objective():
    x, y = _clouds()
    M = ot.dist(x, y); M /= M.max()
    a, b = ot.unif(len(x)), ot.unif(len(y))
    eps = 0.05
    P = ot.sinkhorn(a, b, M, eps, method="sinkhorn_log", numItermax=20000, stopThr=1e-12)
    kl = (P * np.log(P / np.outer(a, b))).sum()
    out = sinkhorn(torch.tensor(M), eps=eps, n_iter=20000, tol=1e-12)
    assert _rel(out.value, (P * M).sum() + eps * kl) < 1e-6


def test_sinkhorn_divergence_matches_pot():
    x, y = _clouds(30, 30)
    eps = 0.5
    ref = ot.bregman.empirical_sinkhorn_divergence(x, y, eps, numIterMax=20000, stopThr=1e-12)  # linear costs ⟨P,C⟩
    a = ot.unif(30)
    ours_lin = sum(w * sinkhorn(pairwise_cost(torch.tensor(u), torch.tensor(v)), eps=eps, n_iter=20000, tol=1e-12).cost
                   for w, u, v in ((1, x, y), (-0.5, x, x), (-0.5, y, y)))
    assert _rel(ours_lin, ref) < 1e-4
    s = sinkhorn_divergence(torch.tensor(x), torch.tensor(y), eps=eps, n_iter=20000, tol=1e-12)
    assert s > 0 and sinkhorn_divergence(torch.tensor(x), torch.tensor(x), eps=eps) .abs() < 1e-8


@pytest.mark.parametrize("init", ["product", "given"])
def test_entropic_gw_matches_pot(init):
    x, _ = _clouds(15, 15, seed=3)
    rng = np.random.default_rng(4)
    y = rng.normal(size=(18, 3))
    C1, C2 = ot.dist(x, x), ot.dist(y, y)
    C1 /= C1.max(); C2 /= C2.max()
    p, q = ot.unif(15), ot.unif(18)
    eps = 0.02
    G0 = None
    if init == "given":
        G0 = np.outer(p, q) * (1 + 0.5 * rng.random((15, 18))); G0 = ot.sinkhorn(p, q, -np.log(G0), 1.0)
    P_pot, log = ot.gromov.entropic_gromov_wasserstein(C1, C2, p, q, "square_loss", epsilon=eps, max_iter=2000, tol=1e-11,
                                                       G0=G0, log=True, numItermax=5000, stopThr=1e-12)
    out = entropic_gw(torch.tensor(C1), torch.tensor(C2), eps=eps, max_iter=2000, tol=1e-11, inner_iter=5000, inner_tol=1e-12,
                      init="product" if G0 is None else torch.tensor(G0))
    assert _rel(out.cost, log["gw_dist"]) < 1e-4
    assert np.abs(out.plan.numpy() - P_pot).max() <= 1e-3 * P_pot.max()
    val2 = ot.gromov.entropic_gromov_wasserstein2(C1, C2, p, q, "square_loss", epsilon=eps, max_iter=2000, tol=1e-11, G0=G0,
                                                  numItermax=5000, stopThr=1e-12)
    assert _rel(out.cost, val2) < 1e-4
    # GW cost of a plan, against POT's gwloss
    constC, hC1, hC2 = ot.gromov.init_matrix(C1, C2, p, q, "square_loss")
    assert _rel(gw_cost(torch.tensor(C1), torch.tensor(C2), torch.tensor(P_pot), torch.tensor(p), torch.tensor(q)),
                ot.gromov.gwloss(constC, hC1, hC2, P_pot)) < 1e-10


def test_gw_of_an_isometric_copy_is_zero_from_the_identity_coupling():
    x = torch.randn(20, 2, generator=torch.Generator().manual_seed(0))
    Q, _ = torch.linalg.qr(torch.randn(2, 2, generator=torch.Generator().manual_seed(1)))
    out = entropic_gw(pairwise_cost(x), pairwise_cost(x @ Q + 3.0), eps=1e-3, init="identity")
    assert out.cost < 1e-8
    assert torch.allclose(out.plan, torch.eye(20) / 20, atol=1e-6)


def _fd(fn, y, h=1e-6):
    g = torch.zeros_like(y)
    for idx in np.ndindex(*y.shape):
        e = torch.zeros_like(y); e[idx] = h
        g[idx] = (fn(y + e) - fn(y - e)) / (2 * h)
    return g


@pytest.mark.parametrize("grad", ["envelope", "unrolled"])
def test_sinkhorn_value_gradient_matches_finite_differences(grad):
    x, y = (torch.tensor(v) for v in _clouds(6, 7, seed=5))
    eps = 0.1
    def value(yy, mode="unrolled"):
        return sinkhorn(pairwise_cost(x, yy), eps=eps, n_iter=3000, tol=1e-12, grad=mode).value
    yy = y.clone().requires_grad_(True)
    value(yy, grad).backward()
    with torch.no_grad(): fd = _fd(lambda v: value(v), y)
    assert torch.allclose(yy.grad, fd, rtol=1e-5, atol=1e-7), (yy.grad, fd)


def test_sinkhorn_linear_cost_gradient_unrolled_matches_finite_differences():
    x, y = (torch.tensor(v) for v in _clouds(6, 7, seed=6))
    def cost(yy):
        return sinkhorn(pairwise_cost(x, yy), eps=0.1, n_iter=3000, tol=1e-12, grad="unrolled").cost
    yy = y.clone().requires_grad_(True)
    cost(yy).backward()
    with torch.no_grad(): fd = _fd(cost, y)
    assert torch.allclose(yy.grad, fd, rtol=1e-5, atol=1e-7)


def test_sinkhorn_divergence_gradient_matches_finite_differences():
    x, y = (torch.tensor(v) for v in _clouds(6, 6, seed=7))
    def sd(yy): return sinkhorn_divergence(x, yy, eps=0.2, n_iter=3000, tol=1e-12)
    yy = y.clone().requires_grad_(True)
    sd(yy).backward()
    g, h = torch.Generator().manual_seed(0), 1e-6
    with torch.no_grad():
        for _ in range(3):   # directional central differences
            d = torch.randn(y.shape, generator=g)
            fd = (sd(y + h * d) - sd(y - h * d)) / (2 * h)
            assert abs(float(fd - (yy.grad * d).sum())) <= 1e-5 * abs(float(fd)) + 1e-8


def test_entropic_gw_gradient_matches_finite_differences():
    """Envelope gradient of the regularised GW objective Q(P*) + ε ΣP* log P* w.r.t. the target points,
    checked along three random directions (central differences)."""
    g = torch.Generator().manual_seed(8)
    x, y = 0.4 * torch.randn(7, 2, generator=g), 0.4 * torch.randn(7, 2, generator=g)
    C1 = pairwise_cost(x)
    eps = 0.05
    kw = dict(eps=eps, max_iter=300, tol=1e-11, inner_iter=2000, inner_tol=1e-11)
    P0 = entropic_gw(C1, pairwise_cost(y), **kw).plan
    def obj(yy):   # warm-started at P0 so that every evaluation lands in the same local optimum
        return entropic_gw(C1, pairwise_cost(yy), init=P0, **kw).value
    yy = y.clone().requires_grad_(True)
    obj(yy).backward()
    h = 1e-5
    with torch.no_grad():
        for _ in range(3):
            d = torch.randn(7, 2, generator=g)
            fd = (obj(y + h * d) - obj(y - h * d)) / (2 * h)
            assert abs(float(fd - (yy.grad * d).sum())) <= 1e-4 * abs(float(fd)) + 1e-7, (float(fd), float((yy.grad * d).sum()))


def test_barycentric_map_of_a_permutation_plan_is_the_permutation():
    y = torch.randn(5, 2)
    perm = torch.tensor([2, 0, 4, 1, 3])
    P = torch.zeros(5, 5); P[torch.arange(5), perm] = 0.2
    assert torch.allclose(barycentric_map(P, y), y[perm])
    # small ε Sinkhorn between a cloud and a shifted copy recovers the shift
    x = torch.randn(30, 2, generator=torch.Generator().manual_seed(2))
    out = sinkhorn(pairwise_cost(x, x + 0.01), eps=1e-3, n_iter=5000)
    assert (barycentric_map(out.plan, x + 0.01) - (x + 0.01)).abs().max() < 1e-3


def _both_loops(monkeypatch, fn):
    "fn() with the torch loop, then with the NumPy loop."
    monkeypatch.setattr(otm, "_NUMPY_MAX_SIZE", 0)
    first = fn()
    monkeypatch.setattr(otm, "_NUMPY_MAX_SIZE", 10**9)
    return first, fn()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_numpy_and_torch_loops_do_the_same_iterations(monkeypatch, dtype):
    "The NumPy loop mirrors the torch one (checks, absorptions, re-centring): the same iterations, plans equal to rounding."
    x, y = _clouds(20, 25, seed=5)
    M = torch.tensor(ot.dist(x, y), dtype=dtype); M /= M.max()
    a = torch.tensor(np.r_[0.0, np.full(19, 1 / 19)], dtype=dtype)              # a zero weight
    rtol = 1e-12 if dtype == torch.float64 else 1e-4
    cases = [dict(eps=0.05), dict(eps=0.05, n_iter=37, tol=0.0), dict(eps=1e-3, eps_start=1.0),
             dict(eps=0.02, a=a, tol=1e-6), dict(eps=1e-3, n_iter=300, tol=0.0, C=50 * M)]      # last: re-centred kernel
    for kw in cases:
        C = kw.pop("C", M)
        t, n = _both_loops(monkeypatch, lambda: sinkhorn(C, **kw))
        assert n.plan.dtype == t.plan.dtype == dtype and n.f.dtype == dtype
        assert (n.plan - t.plan).abs().max() <= rtol * t.plan.max(), kw
        if dtype == torch.float64 or kw.get("tol") == 0.0: assert n.n_iter == t.n_iter, kw   # float32: a stop can move by rounding
    C1, C2 = torch.tensor(ot.dist(x, x), dtype=dtype), torch.tensor(ot.dist(y, y), dtype=dtype)
    for kw in (dict(eps=0.05, max_iter=50, tol=1e-7 if dtype == torch.float64 else 1e-5),
               dict(eps=0.01, max_iter=10, tol=0.0, inner_iter=30, inner_tol=0.0)):
        t, n = _both_loops(monkeypatch, lambda: entropic_gw(C1 / C1.max(), C2 / C2.max(), **kw))
        assert (n.plan - t.plan).abs().max() <= rtol * t.plan.max(), kw
        if dtype == torch.float64 or kw["tol"] == 0.0: assert n.n_iter == t.n_iter, kw
    X = torch.randn(4, 5, dtype=torch.float64); X[1] = -torch.inf
    for axis in (0, 1):
        assert torch.allclose(torch.from_numpy(otm._np_lse(X.numpy(), axis)), torch.logsumexp(X, axis), rtol=1e-14)


def test_bad_arguments_raise_naming_the_parameter():
    C = torch.rand(3, 4)
    with pytest.raises(ValueError, match="'eps'"): sinkhorn(C, eps=0.0)
    with pytest.raises(ValueError, match="'grad'"): sinkhorn(C, grad="magic")
    with pytest.raises(ValueError, match="'a'"): sinkhorn(C, a=torch.ones(3))
    with pytest.raises(ValueError, match="'kind'"): pairwise_cost(torch.rand(3, 2), kind="manhattan")
    with pytest.raises(ValueError, match="'init'"): entropic_gw(torch.rand(3, 3), torch.rand(4, 4), init="identity")
    with pytest.raises(ValueError, match="'C1', 'C2'"): entropic_gw(C, C)
    with pytest.raises(ValueError, match="'inner_iter'"): entropic_gw(torch.rand(3, 3), torch.rand(4, 4), inner_iter=0)
