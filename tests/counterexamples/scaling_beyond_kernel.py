"""Counter-examples for scaling_beyond_kernel's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing run: smoke numbers (seeds 0-2) and the full run of 2026-12-04 (α=2, N=128, M=600, γ=30), except the
# width-floor exponent, set to a passing 0.55 (that run measured 0.80 at M=600, a finite-M bend; see the claim).
_BASE = {
    "beta_hard": 0.25, "beta_easy": 1.25, "gamma": 30.0, "fit_window": [10.0, 200.0],
    "slope_lazy_hard": [0.283, 0.275, 0.255], "slope_rich_hard": [0.365, 0.353, 0.324],
    "slope_lazy_easy": [0.896, 0.942, 0.748], "slope_rich_easy": [0.850, 0.894, 0.721],
    "feature_change_hard": [0.213, 0.192, 0.192], "feature_change_easy": [0.026, 0.022, 0.022],
    "sweep_betas": [0.25, 0.5, 0.75, 1.25, 2.0],
    "sweep_slopes": {"0.0": [0.271, 0.472, 0.673, 0.862, 0.627], "3.0": [0.302, 0.492, 0.683, 0.859, 0.620],
                     "30.0": [0.348, 0.519, 0.690, 0.822, 0.580]},
    "sweep_widths": [16, 32, 64, 128, 256], "width_exponent_floor": 0.55, "width_exponent_pred": 0.5,
    "rich_final_over_floor_min": 1.0, "rich_final_over_floor": [1.000, 1.000, 1.000, 1.001, 1.118],
    "frontier_exponents": {"lazy_hard": 0.203, "rich_hard": 0.226, "lazy_easy": 0.732, "rich_easy": 0.661},
    "frontier_exponents_pred": {"lazy_hard": 0.1667, "rich_hard": 0.2222, "lazy_easy": 0.8333, "rich_easy": 0.8333},
    "mlp_alpha": [2.050, 2.063, 2.086], "mlp_q": {"hard": 0.758, "easy": 1.791},
    "mlp_slopes": {"hard": {"0.02": [0.174, 0.176, 0.201], "0.5": [0.21, 0.22, 0.23], "1.0": [0.233, 0.253, 0.257]},
                   "easy": {"0.02": [0.5, 0.4, 0.45], "0.5": [0.3, 0.3, 0.3], "1.0": [0.243, 0.312, 0.245]}},
}
_KEYS = {
    "hard-task-speedup": ["beta_hard", "gamma", "fit_window", "slope_lazy_hard", "slope_rich_hard"],
    "easy-task-unchanged": ["beta_easy", "gamma", "slope_lazy_easy", "slope_rich_easy", "slope_lazy_hard", "slope_rich_hard",
                            "feature_change_hard", "feature_change_easy"],
    "lazy-baseline": ["beta_hard", "slope_lazy_hard"],
    "exponent-vs-beta": ["sweep_betas", "sweep_slopes"],
    "width-bottleneck": ["sweep_widths", "beta_hard", "width_exponent_floor", "width_exponent_pred", "rich_final_over_floor_min",
                         "rich_final_over_floor"],
    "compute-optimal": ["frontier_exponents", "frontier_exponents_pred"],
    "mlp-circle": ["mlp_alpha", "mlp_q", "mlp_slopes", "beta_hard", "beta_easy"],
}

_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "hard-task-speedup": [
        # the mechanism vanished: feature updates never reach the predictor, rich slopes equal the lazy ones
        _case("hard-task-speedup", slope_rich_hard=list(_BASE["slope_lazy_hard"])),
        # the mean ratio clears 1.15 but one seed's ratio is 1.02 < 1.05
        _case("hard-task-speedup", slope_rich_hard=_seed("slope_rich_hard", 2, 0.260)),
        # every seed ≥ 1.05 but the mean ratio is only ≈ 1.10
        _case("hard-task-speedup", slope_rich_hard=[0.311, 0.303, 0.281]),
    ],
    "easy-task-unchanged": [
        # the rich model beats the lazy one on the easy task (a window contaminated by transients): mean ratio ≈ 1.25
        _case("easy-task-unchanged", slope_rich_easy=[1.12, 1.18, 0.93]),
        # feature learning switched off (γ inert): the easy ratio is 1 but so is the hard one — nothing was tested
        _case("easy-task-unchanged", slope_rich_easy=list(_BASE["slope_lazy_easy"]), slope_rich_hard=list(_BASE["slope_lazy_hard"])),
    ],
    "lazy-baseline": [
        # the lazy dynamics are wrong (e.g. the kernel without Λ): slope ≈ 0.4 instead of 0.25
        _case("lazy-baseline", slope_lazy_hard=[0.41, 0.39, 0.38]),
        # too slow: mean 0.16
        _case("lazy-baseline", slope_lazy_hard=[0.17, 0.16, 0.15]),
    ],
    "exponent-vs-beta": [
        # no feature-learning gain on the hardest β
        _case("exponent-vs-beta", sweep_slopes={**_BASE["sweep_slopes"], "30.0": [0.271, 0.519, 0.690, 0.822, 0.580]}),
        # a spurious gain on an easy β: 2.0 → ratio 1.2
        _case("exponent-vs-beta", sweep_slopes={**_BASE["sweep_slopes"], "30.0": [0.348, 0.519, 0.690, 0.822, 0.752]}),
    ],
    "width-bottleneck": [
        # the floor's exponent far from αβ (the finite-M bend at M=600 gives 0.80)
        _case("width-bottleneck", width_exponent_floor=0.80),
        # the projection forgotten: a rich run ends below the width floor
        _case("width-bottleneck", rich_final_over_floor_min=0.62),
    ],
    "compute-optimal": [
        # the rich frontier is no steeper than the lazy one on the hard task
        _case("compute-optimal", frontier_exponents={**_BASE["frontier_exponents"], "rich_hard": 0.200}),
        # the rich frontier is much steeper on the easy task (ratio 1.2)
        _case("compute-optimal", frontier_exponents={**_BASE["frontier_exponents"], "rich_easy": 0.880}),
    ],
    "mlp-circle": [
        # the rich MLP is slower than the lazy one on the hard target on average
        _case("mlp-circle", mlp_slopes={"hard": {"0.02": [0.174, 0.176, 0.201], "0.5": [0.17, 0.17, 0.18], "1.0": [0.150, 0.160, 0.170]},
                                        "easy": _BASE["mlp_slopes"]["easy"]}),
    ],
}
