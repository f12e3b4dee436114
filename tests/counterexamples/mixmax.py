"""Counter-examples for mixmax's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing smoke-scale run (3 seeds): exact λ* ≈ (0.477, 0.464, 0.060), H(λ*) ≈ 0.668; balanced ≈ 0.744, pooled ≈ 1.065.
_BASE = {
    "lambda_star": [0.4769, 0.4635, 0.0595], "H_star": 0.6678,
    "duality_gap_star": 2.4e-12, "concavity_max_second_diff": -3.1e-6, "min_worst_minus_H_star": 0.0051,
    "exact_spread_star": 4.1e-12,
    "estimator": "counts-reuse", "lambda_l1": [0.041, 0.067, 0.052],
    "worst_ce_mixmax_table": [0.6762, 0.6791, 0.6729], "worst_ce_balanced_table": [0.7471, 0.7508, 0.7443],
    "worst_ce_pooled_table": [1.0581, 1.0662, 1.0609],
    "worst_ce_mixmax_hgb": [0.6813, 0.6845, 0.6788], "worst_ce_balanced_hgb": [0.7522, 0.7551, 0.7490],
    "worst_ce_pooled_hgb": [1.0632, 1.0704, 1.0651],
    "worst_ce_group_dro": [0.7124, 0.7093, 0.7161], "dro_steps": 300, "dro_eta_q": 0.01,
    "dro_q": [[0.392, 0.401, 0.207], [0.388, 0.405, 0.207], [0.395, 0.398, 0.207]],
    "equaliser_spread_table": [0.0061, 0.0112, 0.0087], "equaliser_spread": [0.0213, 0.0442, 0.0124],
}
_KEYS = {
    "minimax-concave": ["duality_gap_star", "concavity_max_second_diff", "min_worst_minus_H_star", "exact_spread_star",
                        "lambda_star", "H_star"],
    "lambda-recovery": ["lambda_l1", "estimator"],
    "beats-balancing": [f"worst_ce_{a}_{b}" for b in ("table", "hgb") for a in ("mixmax", "balanced", "pooled")],
    "matches-group-dro": ["worst_ce_group_dro", "worst_ce_mixmax_table", "worst_ce_mixmax_hgb", "dro_steps", "dro_eta_q", "dro_q"],
    "equaliser": ["equaliser_spread_table", "equaliser_spread"],
}


_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "minimax-concave": [
        # duality gap: can't fail alone — spread (max CE − min active CE) ≥ gap (max CE − H), so the ascent stopping off the
        # equaliser breaks both
        _case("minimax-concave", duality_gap_star=0.0124, exact_spread_star=0.0317, lambda_star=[0.4402, 0.4521, 0.1077],
              H_star=0.6639),
        # spread only: λ* a hair off the equaliser; the gap (≈ λ₃·spread) stays below 1e-6
        _case("minimax-concave", exact_spread_star=1.2e-5, duality_gap_star=7.1e-7),
        # concavity only: a positive second difference of H along a segment
        _case("minimax-concave", concavity_max_second_diff=2.7e-4),
        # weak duality only: a fitted model's worst-group CE below H(λ*)
        _case("minimax-concave", min_worst_minus_H_star=-0.0123),
    ],
    "lambda-recovery": [
        # one seed's λ̂ off by more than 0.15
        _case("lambda-recovery", lambda_l1=_seed("lambda_l1", 1, 0.213)),
        # the ascent never moved from the uniform start (1/3, 1/3, 1/3): ‖λ̂−λ*‖₁ ≈ 0.548 on every seed
        _case("lambda-recovery", lambda_l1=[0.5476, 0.5476, 0.5476]),
    ],
    "beats-balancing": [
        # the mechanism vanished: the MixMax mixture's table is no better than the balanced one (equal on every seed)
        _case("beats-balancing", worst_ce_mixmax_table=list(_BASE["worst_ce_balanced_table"])),
        # table vs balanced only, one seed: margin 0.012 < 0.02
        _case("beats-balancing", worst_ce_mixmax_table=_seed("worst_ce_mixmax_table", 2, 0.7323)),
        # table vs pooled only, one seed: pooled 0.851 is within 0.2 of MixMax (balanced still 0.02 worse)
        _case("beats-balancing", worst_ce_pooled_table=_seed("worst_ce_pooled_table", 0, 0.8512)),
        # HGB vs balanced only, one seed: MixMax HGB worse than balanced
        _case("beats-balancing", worst_ce_mixmax_hgb=_seed("worst_ce_mixmax_hgb", 1, 0.7603)),
        # HGB vs pooled only, one seed: pooled 0.862 is within 0.2 of MixMax (balanced still 0.02 worse)
        _case("beats-balancing", worst_ce_pooled_hgb=_seed("worst_ce_pooled_hgb", 2, 0.8620)),
    ],
    "matches-group-dro": [
        # MixMax table more than 0.02 worse than group DRO on one seed
        _case("matches-group-dro", worst_ce_mixmax_table=_seed("worst_ce_mixmax_table", 0, 0.7402)),
        # MixMax HGB more than 0.02 worse than group DRO on one seed
        _case("matches-group-dro", worst_ce_mixmax_hgb=_seed("worst_ce_mixmax_hgb", 2, 0.7458)),
    ],
    "equaliser": [
        # one seed's group losses not level (spread 0.032 ≥ 0.03, as seed 11 once gave)
        _case("equaliser", equaliser_spread_table=_seed("equaliser_spread_table", 1, 0.0321)),
        # no equaliser at all: spreads of the order of the balanced mixture's gap on every seed
        _case("equaliser", equaliser_spread_table=[0.0834, 0.0912, 0.0788], equaliser_spread=[0.0951, 0.1033, 0.0876]),
    ],
}
