"""Counter-examples for autoif's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A run shaped like the smoke scale (3 seeds) in which every gated claim holds.
_BASE = {
    "acc_a": [0.27, 0.33, 0.24], "acc_b": [0.30, 0.35, 0.27], "acc_c": [0.38, 0.42, 0.36], "acc_d": [0.52, 0.55, 0.47],
    "acc_sampled_a": [0.22, 0.24, 0.21], "acc_sampled_b": [0.23, 0.25, 0.22], "acc_sampled_c": [0.30, 0.31, 0.29],
    "acc_sampled_d": [0.41, 0.43, 0.40],
    "topic_a": [1.0, 1.0, 1.0], "topic_d": [0.89, 1.0, 0.97],
    "rows_b": [960, 960, 960], "rows_d": [98, 94, 199],
    "bug_share_c": [0.535, 0.634, 0.603], "bug_share_d": [0.0, 0.143, 0.214],
    "p_ok": 0.5, "rule": "paper",
}
_KEYS = {
    "beats-base": ["acc_d", "acc_a", "acc_sampled_d", "acc_sampled_a"],
    "beats-unfiltered": ["acc_d", "acc_b", "rows_b", "rows_d", "acc_sampled_d", "acc_sampled_b"],
    "cross-verification": ["acc_d", "acc_c", "bug_share_c", "bug_share_d", "p_ok", "acc_sampled_d", "acc_sampled_c"],
    "general-ability": ["topic_d", "topic_a"],
    "filters-bugs": ["bug_share_c", "bug_share_d", "p_ok", "rule"],
}
_case = case_builder(_BASE, _KEYS)

COUNTEREXAMPLES: dict[str, list[dict]] = {
    "beats-base": [
        # the filter did nothing: AutoIF SFT is the base model
        _case("beats-base", acc_d=list(_BASE["acc_a"])),
        # a gain, but 14 points on the mean (< 15)
        _case("beats-base", acc_d=[0.41, 0.47, 0.38]),
    ],
    "beats-unfiltered": [
        # filtered and unfiltered SFT equal (the data selection does not matter)
        _case("beats-unfiltered", acc_d=list(_BASE["acc_b"])),
        # 9 points on the mean (< 10)
        _case("beats-unfiltered", acc_d=[0.39, 0.44, 0.36]),
    ],
    "cross-verification": [
        # (c) ≈ (d) while half the verifiers are buggy: cross-verification removes nothing useful
        _case("cross-verification", acc_c=list(_BASE["acc_d"])),
        # 2 points on the mean (< 3)
        _case("cross-verification", acc_c=[0.50, 0.53, 0.45]),
    ],
    "general-ability": [
        # topic words collapse to 60 % of the base model's rate
        _case("general-ability", topic_d=[0.6, 0.62, 0.58]),
    ],
    "filters-bugs": [
        # the filter keeps as many buggy verifiers as using every compiling function
        _case("filters-bugs", bug_share_d=list(_BASE["bug_share_c"])),
        # one seed where the filtered set is buggier
        _case("filters-bugs", bug_share_d=with_seed(_BASE["bug_share_d"], 2, 0.7)),
    ],
}
