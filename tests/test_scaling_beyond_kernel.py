"""Tests of the scaling-beyond-the-kernel miniature: the theory's exponents by hand, the solvable model against an
explicit implementation and the closed-form lazy dynamics, the width floor against numpy's least squares, slope and
frontier fits on exact power laws, the circle MLP's NTK spectrum, and the claims' behaviour."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from torch import nn

import iclrbench.papers.scaling_beyond_kernel as sbk

SLUG = "scaling_beyond_kernel"


def test_task_spectrum_and_theory_exponents_by_hand():
    lam, v = sbk.power_law_task(2.0, 0.5, 5)
    k = np.arange(1, 6.0)
    assert np.allclose(lam, k ** -2) and np.allclose(lam * v ** 2, k ** -2.0)      # k^(−αβ−1) = k^−2
    assert sbk.is_hard(0.99) and not sbk.is_hard(1.0)
    assert sbk.chi(0.25) == pytest.approx(0.4) and sbk.chi(0.5) == pytest.approx(2 / 3) and sbk.chi(1.0) == pytest.approx(1.0)
    assert sbk.time_exponent(0.25, False) == 0.25 and sbk.time_exponent(1.5, True) == 1.5
    # compute-optimal: lazy αβ/(1+α); rich hard 2αβ/(2+α(1+β)); α=2, β=0.25 → 1/6 and 2/9
    assert sbk.compute_exponent(2, 0.25, False) == pytest.approx(1 / 6)
    assert sbk.compute_exponent(2, 0.25, True) == pytest.approx(2 / 9)
    assert sbk.compute_exponent(3, 0.5, True) == pytest.approx(2 * 1.5 / (2 + 3 * 1.5))
    assert sbk.compute_exponent(2, 1.5, True) == sbk.compute_exponent(2, 1.5, False) == pytest.approx(3 / 3)
    assert sbk.width_exponent(2, 0.25) == 0.5
    assert sbk.source_exponent(0.75, 2.0) == pytest.approx(0.25) and sbk.amplitude_exponent(0.25, 2.0) == pytest.approx(0.75)


@pytest.mark.parametrize("gamma", [0.0, 5.0])
def test_fast_simulation_equals_the_explicit_update(gamma):
    fast = sbk.simulate(2.0, 0.5, gamma, N=12, M=40, eta=0.1, steps=300, seed=3)
    ref = sbk.simulate_explicit(2.0, 0.5, gamma, N=12, M=40, eta=0.1, steps=300, seed=3)
    assert np.allclose(fast.t, ref.t) and np.allclose(fast.loss, ref.loss, rtol=1e-10, atol=1e-14)
    assert fast.feature_change == pytest.approx(ref.feature_change, rel=1e-9, abs=1e-15)


def test_lazy_model_is_kernel_gradient_descent_in_closed_form():
    """γ = 0: v(s+1) = v(s) + η P Λ (v* − v(s)), so v* − v(s) = (I − ηPΛ)^s v*."""
    N, M, eta, steps = 10, 30, 0.2, 50
    tr = sbk.simulate(1.5, 0.5, 0.0, N=N, M=M, eta=eta, steps=steps, seed=1)
    lam, vstar = sbk.power_law_task(1.5, 0.5, M)
    A0 = sbk.initial_projection(N, M, 1)
    T = np.eye(M) - eta * (A0.T @ A0 / N) * lam
    for t, L in zip(tr.t, tr.loss):
        d = np.linalg.matrix_power(T, int(round(t / eta))) @ vstar
        assert L == pytest.approx(d @ (lam * d), rel=1e-9)


def test_width_floor_matches_least_squares_and_both_regimes_converge_to_it():
    N, M = 6, 40
    lam, vstar = sbk.power_law_task(2.0, 0.5, M)
    A0 = sbk.initial_projection(N, M, 2)
    c, *_ = np.linalg.lstsq(np.sqrt(lam)[:, None] * A0.T, np.sqrt(lam) * vstar, rcond=None)
    d = vstar - A0.T @ c
    floor = sbk.width_limit_loss(2.0, 0.5, N, M, seed=2)
    assert floor == pytest.approx(d @ (lam * d), rel=1e-9)
    for gamma in (0.0, 5.0):
        tr = sbk.simulate(2.0, 0.5, gamma, N=N, M=M, eta=0.5, steps=6000, seed=2)
        assert np.all(tr.loss >= floor * (1 - 1e-9))                 # the projection keeps the width bottleneck
        assert tr.loss[-1] == pytest.approx(floor, rel=2e-3)


def test_feature_learning_speeds_up_a_hard_task_but_not_an_easy_one():
    """The mechanism at the card's size (N=128, M=600, α=2, γ=30, seed 0, t ≤ 200): the rich/lazy slope ratio is
    well above 1 for β=0.25 and not above 1 for β=1.25."""
    def ratio(beta):
        lazy, rich = (sbk.simulate(2.0, beta, g, N=128, M=600, eta=0.1, steps=2000, seed=0) for g in (0.0, 30.0))
        return sbk.fit_exponent(rich.t, rich.loss, (10, 200)) / sbk.fit_exponent(lazy.t, lazy.loss, (10, 200))
    assert ratio(0.25) > 1.15
    assert ratio(1.25) < 1.05


def test_fit_exponent_local_slope_and_frontier_on_exact_power_laws():
    t = np.geomspace(0.1, 1e4, 80)
    assert sbk.fit_exponent(t, 2 * t ** -0.37, (1, 1000)) == pytest.approx(0.37)
    tm, s = sbk.local_slope(t, t ** -1.2)
    assert np.allclose(s, 1.2) and len(tm) == len(t) - 2
    with pytest.raises(ValueError, match="'window'"):
        sbk.fit_exponent(t, t ** -1.0, (100, 10))
    with pytest.raises(ValueError, match="'window'"):
        sbk.fit_exponent(t, t ** -1.0, (2e4, 3e4))
    # L_N(t) = t^-b + N^-a: optimum t ~ N^(a/b), C = N^(1+a/b), L* ~ C^-(ab/(a+b))
    a, b = 2.0, 0.5
    tt = np.geomspace(1, 1e10, 500)
    fr = sbk.compute_frontier({int(N): (tt, tt ** -b + N ** -a) for N in 2 ** np.arange(1, 12)}, points=300)
    assert fr["exponent"] == pytest.approx(a * b / (a + b), abs=0.02)
    assert np.all(np.diff(fr["L"]) <= 1e-12)                       # the frontier never rises with compute


def test_circulant_spectrum_equals_eigenvalues_of_a_circulant_matrix():
    G = 16
    rng = np.random.default_rng(0)
    half = np.abs(rng.normal(size=G // 2 + 1))
    row = np.fft.irfft(half * G, n=G)                               # a symmetric circulant with known spectrum
    K = row[(np.arange(G)[None, :] - np.arange(G)[:, None]) % G]
    assert np.allclose(sbk.circulant_projection(K), row)
    lam = np.real(np.fft.fft(sbk.circulant_projection(K)))
    assert np.allclose(np.sort(lam), np.sort(np.linalg.eigvalsh(K)), atol=1e-10)
    assert sbk.fit_power_law(np.arange(1, 50), 3 * np.arange(1, 50.0) ** -2.5, (2, 40)) == pytest.approx(2.5)


def test_circle_mlp_ntk_is_symmetric_psd_nearly_circulant_with_alpha_about_two():
    spec = sbk.ntk_spectrum_on_circle(sbk.CircleMLP(64, seed=0), grid=64, k_range=(2, 16))
    K = spec["K"]
    assert spec["asymmetry"] < 1e-6
    assert np.linalg.eigvalsh((K + K.T) / 2).min() > -1e-4 * np.abs(K).max()
    assert spec["circulant_error"] < 0.15
    assert 1.5 <= spec["alpha"] <= 3.0
    # rotating the grid by one step permutes the kernel of the same network only up to finite-width fluctuations,
    # and the mean over initialisations is closer to circulant than one network
    errs = [sbk.ntk_spectrum_on_circle(sbk.CircleMLP(w, seed=1), grid=32, k_range=(2, 8))["circulant_error"] for w in (16, 256)]
    assert errs[1] < errs[0]


def test_fourier_target_has_unit_variance_and_the_requested_spectrum():
    tg = sbk.fourier_target(1.25, K=20, seed=3)
    th = torch.arange(256, dtype=torch.float64) * (2 * math.pi / 256)
    y = tg(th).numpy()
    assert y.var() == pytest.approx(1.0, rel=1e-9)
    amp = np.abs(np.fft.rfft(y))[1:21] / 128
    assert np.allclose(amp / amp[0], np.arange(1, 21.0) ** -1.25, rtol=1e-9)


def test_measure_time_exponent_with_any_module_and_lr_scaling():
    tg = sbk.fourier_target(1.5, K=8, seed=0)
    th = torch.arange(64, dtype=torch.float32) * (2 * math.pi / 64)
    def model_fn(seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1), nn.Flatten(0))
    out = sbk.measure_time_exponent(model_fn, tg, sbk.circle_sampler(tg), (0.1, 1.0), steps=100, window=(10, 100), eta0=0.1,
                                    lr_scale=2.0, eval_x=sbk.circle_inputs(th), eval_y=tg(th), seed=0)
    assert set(out) == {0.1, 1.0}
    var = float((tg(th) ** 2).mean())
    for g, c in out.items():
        assert c.lr == pytest.approx(0.1 * g ** 2 * 2.0)
        assert c.steps[0] == 1 and c.steps[-1] == 100
        assert c.loss[-1] < 0.7 * var and math.isfinite(c.exponent)     # the centred output starts at f = 0 (loss = var)
    # centring: before any step the wrapped model outputs exactly zero, whatever γ
    zero = sbk.train_centred(model_fn, tg, sbk.circle_sampler(tg), 0.3, 1, 1e-12, eval_x=sbk.circle_inputs(th), eval_y=tg(th))
    assert zero.loss[0] == pytest.approx(var, rel=1e-5)


def test_smoke_result_shows_the_mechanism_and_is_json_able(smoke_result):
    r = smoke_result(SLUG)
    m = r.metrics
    assert len(m["slope_lazy_hard"]) == 3
    assert all(r_ > l for r_, l in zip(m["slope_rich_hard"], m["slope_lazy_hard"]))
    assert all(c > 0 for c in m["feature_change_hard"])
    assert all(f <= L for f, L in zip(m["floor_hard"], m["final_loss_rich_hard"]))
    assert 1.5 <= m["mlp_ntk_alpha"] <= 3.0
    status = {c.id: c.status for c in r.claims}
    assert status["cnn-vision"] == "not reproducible offline" and status["compute-optimal"] == "not checked at this scale"
    from iclrbench.core import Result
    back = Result.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.metrics["slope_rich_hard"] == m["slope_rich_hard"]


def test_same_seed_same_numbers():
    kw = dict(n_seeds=1, steps=1000, fit_t2=90.0, N=32, M=200, ntk_grid=16, mlp_width=16, progress=False)
    a, b, c = sbk.run("smoke", seed=5, **kw), sbk.run("smoke", seed=5, **kw), sbk.run("smoke", seed=6, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    assert a.metrics["slope_lazy_hard"] != c.metrics["slope_lazy_hard"]


def test_claim_checks_fail_when_the_mechanism_vanishes():
    kw = dict(n_seeds=2, steps=2000, ntk_grid=0, progress=False)
    ok = sbk.run("smoke", **kw).metrics
    assert sbk.CLAIMS[0].check(ok)[0] and sbk.CLAIMS[2].check(ok)[0]
    lazy_only = dict(ok, slope_rich_hard=list(ok["slope_lazy_hard"]), slope_rich_easy=list(ok["slope_lazy_easy"]))
    by_id = {c.id: c for c in sbk.CLAIMS}
    assert by_id["hard-task-speedup"].check(lazy_only)[0] is False
    assert by_id["easy-task-unchanged"].check(lazy_only)[0] is False       # 'unchanged' needs γ to be active
    wrong_lazy = dict(ok, slope_lazy_hard=[v + 0.2 for v in ok["slope_lazy_hard"]])
    assert by_id["lazy-baseline"].check(wrong_lazy)[0] is False
    for cid in ("exponent-vs-beta", "width-bottleneck", "compute-optimal", "mlp-circle"):
        held, why = by_id[cid].check(ok)
        assert held is None and "not run" in why


def test_bad_parameters_raise_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="'gamma'"):
        sbk.run("smoke", gamma=-1.0)
    with pytest.raises(ValueError, match="'fit_t2'"):
        sbk.run("smoke", fit_t2=1000.0)                       # beyond η·steps = 400
    with pytest.raises(ValueError, match="'fit_t2'"):
        sbk.run("smoke", fit_t1=50.0, fit_t2=20.0)
    with pytest.raises(ValueError, match="'alpha'"):
        sbk.power_law_task(1.0, 0.5, 10)
    with pytest.raises(ValueError, match="'beta'"):
        sbk.power_law_task(2.0, 0.0, 10)
    with pytest.raises(ValueError, match="'N'"):
        sbk.simulate(2.0, 0.5, 1.0, N=0)
    with pytest.raises(ValueError, match="'gamma'"):
        sbk.simulate(2.0, 0.5, -1.0)
    with pytest.raises(ValueError, match="'q'"):
        sbk.fourier_target(0.5)
    with pytest.raises(ValueError, match="'width'"):
        sbk.CircleMLP(0)
    with pytest.raises(ValueError, match="'curves'"):
        sbk.compute_frontier({8: (np.arange(1, 5.0), np.ones(4))})
