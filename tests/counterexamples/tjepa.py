"""Counter-examples for tjepa's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A smoke-scale run's shape (3 seeds, 10 labels/class), with T-JEPA ahead of raw so that the 'beats-raw' base passes.
_BASE = {
    "acc_tjepa": [0.931, 0.925, 0.940], "acc_raw": [0.906, 0.889, 0.930], "acc_pca": [0.861, 0.880, 0.887],
    "acc_mlp_raw": [0.896, 0.907, 0.909], "labels_per_class": 10,
    "collapse_ratio": [0.981, 0.998, 0.997], "target_moved": [0.87, 0.87, 0.87], "n_reg": 1, "reg_compare_ratio": {"0": 0.95},
    "acc_tjepa_all": [0.960, 0.955, 0.962], "acc_mlp_tjepa_all": [0.965, 0.961, 0.966], "acc_hgb_all": [0.950, 0.948, 0.957],
}
_KEYS = {
    "beats-raw": ["acc_tjepa", "acc_raw", "acc_pca", "acc_mlp_raw", "labels_per_class"],
    "reg-tokens-collapse": ["collapse_ratio", "target_moved", "n_reg", "reg_compare_ratio"],
    "matches-gbdt": ["acc_tjepa_all", "acc_mlp_tjepa_all", "acc_hgb_all"],
}
_case = case_builder(_BASE, _KEYS)

COUNTEREXAMPLES: dict[str, list[dict]] = {
    "beats-raw": [
        # the mechanism vanished: T-JEPA features probe exactly like raw features
        _case("beats-raw", acc_tjepa=list(_BASE["acc_raw"])),
        # ahead, but by less than 2 points on average (mean +0.013)
        _case("beats-raw", acc_tjepa=[0.921, 0.899, 0.944]),
        # the measured smoke outcome: T-JEPA 1 point behind raw
        _case("beats-raw", acc_tjepa=[0.891, 0.893, 0.909]),
    ],
    "reg-tokens-collapse": [
        # collapse with [REG]: representations of different rows indistinguishable
        _case("reg-tokens-collapse", collapse_ratio=[0.02, 0.05, 0.01]),
        # one seed collapses completely and drags the mean below 0.3
        _case("reg-tokens-collapse", collapse_ratio=with_seed([0.3, 0.3, 0.3], 1, 0.2)),
        # the measured smoke outcome: no collapse, but the EMA target barely left its random initialisation (8 epochs)
        _case("reg-tokens-collapse", collapse_ratio=[0.992, 1.006, 0.998], target_moved=[0.15, 0.15, 0.15]),
    ],
    "matches-gbdt": [
        # gradient boosting more than 1 point ahead of the best T-JEPA downstream model
        _case("matches-gbdt", acc_hgb_all=[0.985, 0.980, 0.982]),
    ],
}
