"""Counter-examples for codeplan's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder

# A run in which every check holds (3 seeds, K = 4 for the smoke claim; the growth and data checks read the same keys).
_BASE = {
    "K": 4,
    "acc_vanilla": [[0.62, 0.21, 0.08, 0.03], [0.58, 0.18, 0.07, 0.02], [0.60, 0.20, 0.06, 0.03]],
    "acc_codeplan": [[0.70, 0.45, 0.30, 0.15], [0.66, 0.41, 0.27, 0.16], [0.69, 0.44, 0.29, 0.14]],
    "data_sweep": {"n_train": [2000, 5000, 20000], "vanilla": [0.02, 0.05, 0.10], "codeplan": [0.04, 0.12, 0.30]},
}
_KEYS = {
    "multistep-gain": ["K", "acc_vanilla", "acc_codeplan"],
    "gain-grows-with-complexity": ["K", "acc_vanilla", "acc_codeplan"],
    "data-efficiency": ["data_sweep"],
}
_case = case_builder(_BASE, _KEYS)
_V = _BASE["acc_vanilla"]

COUNTEREXAMPLES: dict[str, list[dict]] = {
    "multistep-gain": [
        # the mechanism vanished: CodePlan equals vanilla at every k
        _case("multistep-gain", acc_codeplan=[list(r) for r in _V]),
        # both at the floor (what the smoke budget gives): no gain
        _case("multistep-gain", acc_vanilla=[[0.05, 0.0, 0.01, 0.0]] * 3, acc_codeplan=[[0.02, 0.01, 0.0, 0.0]] * 3),
        # a gain only at k = 1 (where nothing needs planning) and +5 points at k ≥ 2: below the +10 threshold
        _case("multistep-gain", acc_codeplan=[[r[0] + 0.3] + [v + 0.05 for v in r[1:]] for r in _V]),
    ],
    "gain-grows-with-complexity": [
        # a constant gap at every k: gap(K) − gap(1) = 0 < 3 points
        _case("gain-grows-with-complexity", acc_codeplan=[[v + 0.08 for v in r] for r in _V]),
        # gap at K of +4 points (< 5)
        _case("gain-grows-with-complexity", acc_codeplan=[[r[0], r[1] + 0.1, r[2] + 0.1, r[3] + 0.04] for r in _V]),
        # CodePlan worse than vanilla at k = 1 by 3 points (the plan leaks nothing, but hurts simple tasks)
        _case("gain-grows-with-complexity", acc_codeplan=[[r[0] - 0.03, r[1] + 0.2, r[2] + 0.2, r[3] + 0.12] for r in _V]),
    ],
    "data-efficiency": [
        # vanilla better at the smallest data size
        _case("data-efficiency", data_sweep={"n_train": [2000, 5000, 20000], "vanilla": [0.06, 0.05, 0.10],
                                             "codeplan": [0.04, 0.12, 0.30]}),
        # no effect at all: equal accuracy at every size (both at the floor)
        _case("data-efficiency", data_sweep={"n_train": [2000, 5000, 20000], "vanilla": [0.0, 0.0, 0.0],
                                             "codeplan": [0.0, 0.0, 0.0]}),
    ],
}
