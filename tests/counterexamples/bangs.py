"""Counter-examples for bangs's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing full-scale-like run (3 seeds shown): test accuracy at the best-validation round, class entropy in nats (max ln 3).
_BASE = {
    "acc_bangs": [0.781, 0.742, 0.806], "acc_confidence": [0.753, 0.731, 0.772], "acc_none": [0.702, 0.688, 0.719],
    "acc_bangs-independent": [0.756, 0.729, 0.781], "acc_bangs-shapley": [0.772, 0.738, 0.795],
    "entropy_bangs": [1.052, 1.021, 1.074], "entropy_confidence": [0.823, 0.884, 0.791],
    "easy_share_bangs": [0.41, 0.43, 0.39], "easy_share_confidence": [0.68, 0.62, 0.71],
    "overlap_bangs": [0.55, 0.6, 0.5], "best_round_bangs": [3, 2, 4], "best_round_confidence": [2, 3, 1],
}
_KEYS = {
    "beats-confidence": ["acc_bangs", "acc_confidence", "acc_none", "overlap_bangs", "best_round_bangs", "best_round_confidence"],
    "no-seed-worse": ["acc_bangs", "acc_confidence"],
    "class-balance": ["entropy_bangs", "entropy_confidence", "easy_share_bangs", "easy_share_confidence"],
    "combinatorial-matters": ["acc_bangs", "acc_bangs-independent", "acc_bangs-shapley"],
}


_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "beats-confidence": [
        # vs confidence only: BANGS selects the same as confidence (overlap 1, equal accuracy), still ≥ none + 0.02
        _case("beats-confidence", acc_bangs=list(_BASE["acc_confidence"]), overlap_bangs=[1.0, 1.0, 1.0]),
        # both selectors report the shared round-0 teacher on every seed (the issue-22 ties): equal accuracy
        _case("beats-confidence", acc_bangs=list(_BASE["acc_none"]), acc_confidence=list(_BASE["acc_none"]),
              best_round_bangs=[0, 0, 0], best_round_confidence=[0, 0, 0]),
        # vs none only: self-training gains nothing (none within 0.02 of BANGS), BANGS still ≥ confidence + 0.005
        _case("beats-confidence", acc_none=[0.772, 0.735, 0.793]),
    ],
    "no-seed-worse": [
        # one seed 0.035 below confidence (the mean is still higher)
        _case("no-seed-worse", acc_bangs=_seed("acc_bangs", 1, 0.696)),
        # reversed: BANGS below confidence by 0.03-0.05 on every seed
        _case("no-seed-worse", acc_bangs=[0.721, 0.698, 0.735]),
    ],
    "class-balance": [
        # the class-entropy term has no effect: BANGS's selections as (im)balanced as confidence's
        _case("class-balance", entropy_bangs=list(_BASE["entropy_confidence"]),
              easy_share_bangs=list(_BASE["easy_share_confidence"])),
        # reversed: BANGS picks more of the easy class than confidence
        _case("class-balance", entropy_bangs=[0.702, 0.768, 0.731], easy_share_bangs=[0.77, 0.71, 0.74]),
    ],
    "combinatorial-matters": [
        # the Banzhaf ranking adds nothing over independent utilities (equal accuracy)
        {**_case("combinatorial-matters"), "acc_bangs-independent": list(_BASE["acc_bangs"])},
        # reversed: the independent ranking is better
        {**_case("combinatorial-matters"), "acc_bangs-independent": [0.792, 0.751, 0.812]},
    ],
}
