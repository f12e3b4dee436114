"""Library tests for `iclrbench.papers.rawlsian_policies`: the welfare simulator, the six policies, closed forms."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from static_view_checks import assert_static_view

import iclrbench.explorers.rawlsian_policies as rpx
import iclrbench.papers.rawlsian_policies as rp
from iclrbench.core import Result
from iclrbench.views.static import static_view

N = 50


def _population(seed: int = 0, n: int = N) -> np.ndarray:
    return rp.income_like_welfare(n, np.random.default_rng([0, seed]))


# ---------------------------------------------------------------- shapes
@pytest.mark.parametrize("regime", ["survival", "ruin"])
def test_shapes_have_the_matthew_property_and_clip_levels(regime):
    sh = rp.regime_shapes(N, regime)
    lv = rp.survival_bounds(N) if regime == "survival" else rp.ruin_bounds(N)
    u = np.linspace(-5000, 5000, 2001)[:, None]
    f, g = sh.f(u), sh.g(u)
    assert (np.diff(f, axis=0) >= 0).all(), "f must be increasing (Matthew effect)"
    assert (np.diff(g, axis=0) <= 0).all(), "g must be decreasing"
    # f + g increasing wherever both slope (official rejection rule a_i > |c_i|); everywhere in the survival regime.
    # The card's ruin regime puts f's left turning point at ≥ 0, so below 0 f is flat at f_lo while g still slopes.
    where = slice(None) if regime == "survival" else (u[:-1, 0] >= -1500)
    assert (np.diff(f + g, axis=0)[where] >= 0).all(), "f + g must be increasing"
    assert (sh.af > -sh.ag).all()
    assert f.min() == lv["f_lo"] and f.max() == lv["f_hi"] and g.min() == lv["g_lo"] and g.max() == lv["g_hi"]
    assert np.array_equal(f, np.rint(f)) and np.array_equal(g, np.rint(g))  # integer rounding
    # clipped outside the turning points: far left f = f_lo and g = g_hi; far right f = f_hi and g = g_lo
    assert (f[0] == lv["f_lo"]).all() and (g[0] == lv["g_hi"]).all() and (f[-1] == lv["f_hi"]).all() and (g[-1] == lv["g_lo"]).all()


def test_survival_and_ruin_share_g_and_ruin_gives_f_lo_to_negative_welfare():
    s, r = rp.regime_shapes(N, "survival"), rp.regime_shapes(N, "ruin")
    assert np.array_equal(s.ag, r.ag) and np.array_equal(s.bg, r.bg)
    assert (r.f(np.full((1, N), -1.0)) == 100).all()
    assert rp.survival_bounds(50) == dict(f_lo=12000.0, f_hi=13750.0, g_lo=10.0, g_hi=60.0)
    assert rp.ruin_bounds(50) == dict(f_lo=100.0, f_hi=2000.0, g_lo=10.0, g_hi=60.0)


def test_shape_turning_points_are_fixed_by_seed_1234():
    a, b = rp.make_shapes(N, **rp.survival_bounds(N)), rp.make_shapes(N, **rp.survival_bounds(N))
    assert np.array_equal(a.af, b.af) and np.array_equal(a.bg, b.bg)
    fL, fR, gL, gR = rp.turning_points(N)
    assert (fL >= -2100).all() and (fL < -2000).all() and (fR >= 400).all() and (fR < 800).all()
    assert (gL >= -1900).all() and (gL < -1850).all() and (gR >= -1600).all() and (gR < -1500).all()


# ---------------------------------------------------------------- policies
def test_each_policy_selects_the_right_individuals_with_ties_to_lowest_index():
    U = np.array([5.0, -3.0, 7.0, -3.0, 7.0, 0.0])
    f = np.array([3.0, 1.0, 4.0, 1.0, 4.0, 2.0])
    g = np.array([1.0, 6.0, 0.0, 6.0, 0.0, 6.0])
    sel = lambda p, k, rnd=None: rp.select_treated(p, U, f, g, k, rnd).tolist()
    assert sel("min-U", 1) == [1] and sel("min-U", 2) == [1, 3] and sel("min-U", 3) == [1, 3, 5]
    assert sel("max-U", 1) == [2] and sel("max-U", 2) == [2, 4] and sel("max-U", 3) == [2, 4, 0]
    assert sel("max-f", 1) == [2] and sel("max-f", 3) == [2, 4, 0]
    # f + g = [4, 7, 4, 7, 4, 8]
    assert sel("max-fg", 1) == [5] and sel("max-fg", 3) == [5, 1, 3] and sel("max-fg", 4) == [5, 1, 3, 0]
    # max-g: g ties (6 at 1, 3, 5) → lowest welfare first (−3 at 1 and 3 → index), then welfare 0
    assert sel("max-g", 1) == [1] and sel("max-g", 2) == [1, 3] and sel("max-g", 3) == [1, 3, 5]
    U2 = np.array([4.0, 2.0, 9.0]); g2 = np.array([5.0, 5.0, 5.0])
    assert rp.select_treated("max-g", U2, g2, g2, 1).tolist() == [1]          # all tie in g → lowest welfare
    rnd = np.array([0.1, 0.9, 0.3, 0.9, 0.2, 0.5])
    assert sel("random", 1, rnd) == [1] and sel("random", 2, rnd) == [1, 3]
    with pytest.raises(ValueError, match="'policy'"):
        rp.select_treated("max-h", U, f, g, 1)
    with pytest.raises(ValueError, match="'k'"):
        rp.select_treated("min-U", U, f, g, 0)


def test_batched_selection_matches_row_by_row():
    rng = np.random.default_rng(3)
    U = rng.integers(-5, 5, (20, 12)).astype(float)            # many ties
    f, g = rng.integers(0, 3, (20, 12)).astype(float), rng.integers(0, 3, (20, 12)).astype(float)
    for p in rp.POLICIES:
        rnd = rng.random((20, 12))
        for k in (1, 3):
            batch = rp.select_treated(p, U, f, g, k, rnd)
            rows = np.stack([rp.select_treated(p, U[i], f[i], g[i], k, rnd[i]) for i in range(20)])
            assert np.array_equal(batch, rows)
            assert all(len(set(r)) == k for r in batch.tolist())


@pytest.mark.parametrize("k", [1, 3])
def test_simulation_step_treats_exactly_k_and_applies_f_or_minus_g(k):
    sh = rp.regime_shapes(N, "survival")
    U0 = np.stack([_population(s) for s in range(3)])
    for p in rp.POLICIES:
        rnd = [np.random.default_rng(7 + i) for i in range(3)] if p == "random" else None
        sim = rp.simulate(U0, [p] * 3, sh, k, 1, 0.0, 0.0, [np.random.default_rng(0)], [0, 0, 0], random_rngs=rnd,
                          snapshot_rows=[0, 1, 2], snapshot_times=[0, 1])
        delta = sim.snapshots[1] - sim.snapshots[0]
        f, g = sh.f(U0), sh.g(U0)
        treated = np.isclose(delta, f) & (f > 0)
        assert np.all(treated.sum(axis=1) == k), p
        assert np.allclose(delta[~treated], -g[~treated]), p
        if p != "random":
            idx = rp.select_treated(p, U0, f, g, k)
            assert np.array_equal(np.sort(np.nonzero(treated)[1].reshape(3, k), axis=1), np.sort(idx, axis=1)), p


def test_noise_is_symmetric_zero_mean_clipped_and_integer():
    zero = np.zeros(N)
    sh = rp.Shapes(zero, zero, zero, zero, zero, zero, zero, zero)     # f = g = 0: welfare moves by noise only
    sd, clip = 30.0, 40.0
    sim = rp.simulate(np.zeros((1, N)), ["min-U"], sh, 1, 400, sd, clip, [np.random.default_rng(5)], [0],
                      snapshot_rows=[0], snapshot_times=np.arange(401))
    eps = np.diff(sim.snapshots[:, 0, :], axis=0).ravel()
    assert np.array_equal(eps, np.rint(eps)) and np.abs(eps).max() <= clip
    assert abs(eps.mean()) < 4 * eps.std() / math.sqrt(eps.size)
    assert abs(np.mean(eps > 0) - np.mean(eps < 0)) < 0.02
    assert abs(np.mean(eps == clip) - np.mean(eps == -clip)) < 0.01          # clipping is symmetric too
    q = np.quantile(eps, [0.1, 0.25, 0.75, 0.9])
    assert abs(q[0] + q[3]) <= 1 and abs(q[1] + q[2]) <= 1


def test_policies_of_one_seed_share_noise():
    sh = rp.regime_shapes(N, "survival")
    a = rp.simulate_policies(_population(), sh, 1, 50, [4], ["min-U"], stream_tag=1)
    b = rp.simulate_policies(_population(), sh, 1, 50, [4], ["min-U", "max-fg"], stream_tag=1)
    assert np.array_equal(a["mean"][:, 0, 0], b["mean"][:, 0, 0])


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize("k", [1, 5])
def test_closed_form_rates_match_long_noise_free_simulation(k):
    lv = rp.survival_bounds(N)
    sh = rp.regime_shapes(N, "survival")
    T = 4000
    out = rp.simulate_policies(_population(1), sh, k, T, [0], ["min-U", "max-fg"], noise_scale=0.0)
    m = out["mean"][:, 0, :]
    slope = (m[T] - m[T // 2]) / (T // 2)                             # late slope: the transient has died out
    zR, zU = rp.zeta_rawlsian(N, k, lv["f_hi"], lv["g_lo"]), rp.zeta_utilitarian(N, k, lv["f_hi"], lv["g_hi"])
    assert slope[0] == pytest.approx(zR, abs=1e-9)
    assert slope[1] == pytest.approx(zU, abs=1e-9)
    r = rp.growth_rate(m, out["times"])
    assert abs(r[-1, 0] - zR) / zR < 0.01
    assert zU < r[-1, 1] < r[9, 1]                                     # approaches ζ_U from above, like 1/t
    assert zR - zU == pytest.approx((N - k) * (lv["g_hi"] - lv["g_lo"]) / N)


def test_ruin_closed_forms_match_simulation():
    lv = rp.ruin_bounds(N)
    sh = rp.regime_shapes(N, "ruin")
    T = 4000
    out = rp.simulate_policies(_population(2), sh, 1, T, [0], ["min-U", "max-fg"], noise_scale=0.0)
    m = out["mean"][:, 0, :]
    slope = (m[T] - m[T // 2]) / (T // 2)
    assert slope[0] == pytest.approx(rp.zeta_rawlsian_ruin(N, 1, lv["f_lo"], lv["g_hi"]), abs=1e-9)
    assert slope[1] == pytest.approx(rp.zeta_utilitarian(N, 1, lv["f_hi"], lv["g_hi"]), abs=1e-9)


def test_survival_condition_and_formulas():
    assert rp.zeta_rawlsian(50, 1, 13750, 10) == pytest.approx(265.2)
    assert rp.zeta_utilitarian(50, 1, 13750, 60) == pytest.approx(216.2)
    assert rp.zeta_rawlsian_ruin(50, 1, 100, 60) == pytest.approx(-56.8)
    assert rp.survival_condition(50, 1, 2941, 60) and not rp.survival_condition(50, 1, 2940, 60)
    assert rp.survival_condition(50, 10, 241, 60) and not rp.survival_condition(50, 10, 240, 60)   # ⌈50/10⌉ − 1 = 4
    assert rp.survival_condition(50, 7, 421, 60) and not rp.survival_condition(50, 7, 420, 60)    # ⌈50/7⌉ − 1 = 7


def test_crossing_time():
    t = np.arange(1, 8)
    assert rp.crossing_time(np.array([0, 5, 0, 3, 4, 5, 6]), np.full(7, 2), t) == 4     # early flip ignored
    assert rp.crossing_time(np.full(7, 3), np.full(7, 2), t) == 1
    assert rp.crossing_time(np.array([3, 3, 3, 3, 3, 3, 1]), np.full(7, 2), t) is None


# ---------------------------------------------------------------- the paper's claims in small
def test_survival_min_u_overtakes_max_fg_and_ruin_flips_the_order():
    T = 1500
    U0 = np.stack([_population(s) for s in (0, 1)])
    surv = rp.simulate_policies(U0, rp.regime_shapes(N, "survival"), 1, T, [0, 1], rp.POLICIES)
    r = rp.growth_rate(surv["mean"], surv["times"])
    i = {p: j for j, p in enumerate(rp.POLICIES)}
    for s in range(2):
        assert r[9, s, i["max-fg"]] > r[9, s, i["min-U"]]            # utilitarian leads early
        assert r[-1, s, i["min-U"]] > r[-1, s, i["max-fg"]] + 20      # Rawlsian wins late
        assert r[-1, s, i["max-g"]] > r[-1, s, i["max-f"]]
        c = rp.crossing_time(r[:, s, i["min-U"]], r[:, s, i["max-fg"]], np.arange(1, T + 1))
        assert c is not None and 20 <= c <= 1000
    ruin = rp.simulate_policies(U0, rp.regime_shapes(N, "ruin"), 1, T, [0, 1], rp.POLICIES, stream_tag=2)
    r = rp.growth_rate(ruin["mean"], ruin["times"])
    assert (r[-1, :, i["max-fg"]] > r[-1, :, i["min-U"]] + 15).all()


def test_heterogeneous_levels_follow_the_official_recipe():
    L = rp.heterogeneous_levels(np.random.default_rng(0), 400, N, 1, b=0.5, sigma2=25.0)
    assert (L["g_hi"] >= L["g_lo"]).all() and (L["f_hi"] >= L["f_lo"]).all() and (L["g_lo"] >= 1).all()
    assert L["g_lo"].mean() == pytest.approx(30, rel=0.01) and L["g_lo"].std() == pytest.approx(2.5, rel=0.05)
    assert L["f_lo"].mean() == pytest.approx(240 * N, rel=0.01) and L["f_lo"].std() == pytest.approx(4 * N * 5, rel=0.05)
    grid = rp.heterogeneity_grid(N, 2, 2, 10, 300, seed=0)
    assert grid["win_short"].shape == (2, 2) and ((0 <= grid["win_long"]) & (grid["win_long"] <= 1)).all()


# ---------------------------------------------------------------- adapter, validation, determinism
def test_adapter_on_a_generated_income_array():
    incomes = np.round(np.random.default_rng(11).lognormal(np.log(40), 1.0, 40), 1)
    out = rp.simulate_from_initial_welfare(incomes, **rp.survival_bounds(40), T=800, n_seeds=2, seed=3)
    assert out["rate_mean"].shape == (len(rp.POLICIES), 800) and out["survival"]
    assert out["zeta_R"] == pytest.approx(rp.zeta_rawlsian(40, 1, rp.survival_bounds(40)["f_hi"], 10))
    assert min(out["rate_T"]["min-U"]) > max(out["rate_T"]["max-fg"])
    assert abs(np.mean(out["rate_T"]["min-U"]) - out["zeta_R"]) / out["zeta_R"] < 0.03
    again = rp.simulate_from_initial_welfare(incomes, **rp.survival_bounds(40), T=800, n_seeds=2, seed=3)
    assert np.array_equal(out["rate_mean"], again["rate_mean"])
    with pytest.raises(ValueError, match="'initial_welfare'"):
        rp.simulate_from_initial_welfare([[1.0, 2.0]], 10, 20, 1, 2)
    with pytest.raises(ValueError, match="'initial_welfare'"):
        rp.simulate_from_initial_welfare([1.0, float("nan")], 10, 20, 1, 2)


@pytest.mark.parametrize("call, name", [
    (lambda: rp.run("smoke", N=5), "'N'"),
    (lambda: rp.run("smoke", k=11), "'k'"),
    (lambda: rp.run("smoke", T=50), "'T'"),
    (lambda: rp.run("smoke", noise_scale=-1.0), "'noise_scale'"),
    (lambda: rp.run("smoke", grid_cells=1), "'grid_cells'"),
    (lambda: rp.make_shapes(N, 100.0, 50.0), "'f_hi'"),
    (lambda: rp.make_shapes(N, 100.0, 200.0, g_lo=20.0, g_hi=10.0), "'g_hi'"),
    (lambda: rp.make_shapes(N, 100.0, 100.0, g_lo=10.0, g_hi=60.0), "'f_lo'"),
    (lambda: rp.make_shapes(N, -1.0, 100.0), "'f_lo'"),
    (lambda: rp.simulate_policies(_population(), rp.regime_shapes(N, "survival"), 0, 10, [0]), "'k'"),
    (lambda: rp.simulate_policies(_population(), rp.regime_shapes(N, "survival"), 1, 0, [0]), "'T'"),
    (lambda: rp.simulate_policies(_population(), rp.regime_shapes(N, "survival"), 1, 10, [0], noise_scale=-2.0), "'noise_scale'"),
    (lambda: rp.regime_shapes(N, "boom"), "'regime'"),
])
def test_bad_parameters_raise_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_same_seed_same_numbers_and_seeds_are_independent_of_batching():
    sh = rp.regime_shapes(N, "survival")
    U0 = np.stack([_population(s) for s in (3, 4)])
    a = rp.simulate_policies(U0, sh, 1, 300, [3, 4])
    b = rp.simulate_policies(U0, sh, 1, 300, [3, 4])
    c = rp.simulate_policies(U0[1], sh, 1, 300, [4])
    assert np.array_equal(a["mean"], b["mean"])
    assert np.array_equal(a["mean"][:, 1], c["mean"][:, 0])            # seed 4 does not depend on seed 3 being there
    r1 = rp.run("smoke", seed=2, progress=False, T=300, grid_cells=2, grid_samples=2, grid_T_long=100)
    r2 = rp.run("smoke", seed=2, progress=False, T=300, grid_cells=2, grid_samples=2, grid_T_long=100)
    assert r1.metrics == r2.metrics and r1.metrics["seeds"] == [2, 3, 4]


def test_explorer_grid_and_simulation_are_quick_and_consistent():
    sim = rpx.explorer_simulation(50, 1, 500, 12000.0, 13750.0, 10.0, 60.0, 1.0, 0, "survival")
    assert sim["survival"] and sim["matthew"] and sim["mean"].shape[0] == len(rp.POLICIES)
    grid = rpx.explorer_grid(30, 1, 400, 1750.0, 10.0, 1.0, 0, "survival", cells=4, samples=1)
    assert grid["diff_short"].shape == (4, 4)
    assert (grid["diff_short"] < 0).mean() > 0.5                      # utilitarian ahead at t = 10 in most cells


def test_explorer_from_a_json_result_and_its_static_view():
    r = rp.run("smoke", progress=False, n_seeds=1, T=300, grid_cells=2, grid_samples=1, grid_T_long=100)
    r = Result.from_dict(json.loads(json.dumps(r.to_dict())))
    e = rpx.explore(r)
    assert not e.errors and e.controls["T"].value == 300
    e.controls["preset"].value = "ruin"                                   # the preset sets the level sliders
    assert e.controls["f_lo"].value == rp.ruin_bounds(50)["f_lo"] and not e.errors
    fig = static_view(e)                                                  # regime × k, drawn by the explorer's refresh
    assert_static_view(fig)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 8 and "ruin" in steps[-1].label and "k 10" in steps[-1].label
    assert e.controls["preset"].value == "ruin" and not e.errors          # the controls are restored afterwards
