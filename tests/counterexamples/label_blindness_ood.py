"""Counter-examples for label_blindness_ood's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing 3-seed run. The Adjacent-OOD numbers are those of a smoke run (seeds 0-2); the Far-OOD numbers are
# chosen above the 0.85 line (the smoke run's normalised-kNN U1/U2 Far numbers miss it on some seeds), and the ρ
# sweep is a full-scale-shaped example (6 points, 5 seeds), not a measured one.
_BASE = {
    "auroc_adj_U1": [0.519, 0.486, 0.545], "auroc_adj_U2": [0.482, 0.500, 0.506],
    "auroc_adj_U3": [0.788, 0.688, 0.774], "auroc_adj_raw": [0.948, 0.838, 0.866],
    "auroc_adj_S_kNN": [0.946, 0.914, 0.868], "auroc_adj_S_MSP": [0.845, 0.724, 0.789],
    "probe_bits_U1": [0.560, 0.406, 0.574], "probe_bits_U2": [0.002, 0.000, 0.018], "probe_bits_S": [2.343, 2.099, 2.314],
    "auroc_far_U1": [0.921, 0.903, 0.954], "auroc_far_U2": [0.912, 0.969, 0.893], "auroc_far_S_MSP": [0.588, 0.573, 0.669],
    "maha_auroc_far_U1": [1.0, 1.0, 1.0], "maha_auroc_far_U2": [1.0, 1.0, 1.0],
    "znorm_ratio_far_U1": [2.9, 2.8, 3.1], "znorm_ratio_far_U2": [5.1, 4.1, 4.6],
    "rho_sweep": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], "rho_sweep_n_seeds": 5,
    "rho_auroc_adj_U2_mean": [0.497, 0.531, 0.579, 0.642, 0.716, 0.803],
    "rho_probe_bits_U2_mean": [0.004, 0.051, 0.170, 0.372, 0.650, 1.021],
    "rho_auroc_adj_U1_mean": [0.508, 0.521, 0.571, 0.663, 0.807, 0.950],
    "rho_probe_bits_U1_mean": [0.048, 0.223, 0.594, 1.091, 1.727, 2.720],
}
_KEYS = {
    "blind-chance": ["auroc_adj_U1", "auroc_adj_U2", "auroc_adj_U3", "auroc_adj_raw", "probe_bits_U1", "probe_bits_U2"],
    "not-broken": ["auroc_far_U1", "auroc_far_U2", "maha_auroc_far_U1", "maha_auroc_far_U2", "znorm_ratio_far_U1",
                   "znorm_ratio_far_U2", "auroc_far_S_MSP"],
    "supervised-detects": ["auroc_adj_S_kNN", "auroc_adj_U2", "auroc_adj_S_MSP", "probe_bits_S"],
    "rho-monotone": ["rho_sweep", "rho_sweep_n_seeds", "rho_auroc_adj_U2_mean", "rho_probe_bits_U2_mean", "rho_auroc_adj_U1_mean",
                     "rho_probe_bits_U1_mean"],
}

_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "blind-chance": [
        # the mechanism vanished: the label-blind augmentation leaks x₂ and U2 detects Adjacent OOD like U3
        _case("blind-chance", auroc_adj_U2=[0.781, 0.702, 0.766], probe_bits_U2=[0.91, 0.77, 0.88]),
        # the pretext encoder leaks label information on one seed
        _case("blind-chance", auroc_adj_U1=_seed("auroc_adj_U1", 2, 0.611)),
        # an inverted score (AUROC ≈ 1 − true) on a detector that is not at chance: U1 far below 0.5
        _case("blind-chance", auroc_adj_U1=_seed("auroc_adj_U1", 0, 0.402)),
    ],
    "not-broken": [
        # a broken scorer or untrained encoder: label-blind detectors at chance on Far OOD too
        _case("not-broken", auroc_far_U1=[0.512, 0.488, 0.530], auroc_far_U2=[0.497, 0.521, 0.476]),
        # U2 misses far OOD on one seed (normalisation hides the shift in ‖z‖)
        _case("not-broken", auroc_far_U2=_seed("auroc_far_U2", 0, 0.750)),
        # U1 misses on one seed
        _case("not-broken", auroc_far_U1=_seed("auroc_far_U1", 1, 0.841)),
    ],
    "supervised-detects": [
        # labels do not help: the supervised kNN at chance like U2
        _case("supervised-detects", auroc_adj_S_kNN=[0.512, 0.498, 0.533], probe_bits_S=[0.01, 0.0, 0.02]),
        # S-kNN above 0.8 but U2 not clearly below it (a gap of 0.2 < 0.25 on seed 1)
        _case("supervised-detects", auroc_adj_U2=_seed("auroc_adj_U2", 1, 0.714)),
        # S-kNN just under 0.8 on one seed
        _case("supervised-detects", auroc_adj_S_kNN=_seed("auroc_adj_S_kNN", 2, 0.793)),
    ],
    "rho-monotone": [
        # no trend: U2 stays at chance whatever ρ (the surrogate never carries label information)
        _case("rho-monotone", rho_auroc_adj_U2_mean=[0.497, 0.502, 0.493, 0.505, 0.499, 0.501]),
        # flat at chance until the last point although the probe bound rises (as the full digits run measured)
        _case("rho-monotone", rho_auroc_adj_U2_mean=[0.514, 0.504, 0.494, 0.485, 0.499, 0.834]),
        # one dip along an otherwise rising curve
        _case("rho-monotone", rho_auroc_adj_U2_mean=[0.497, 0.531, 0.579, 0.568, 0.716, 0.803]),
        # falling: an inverted score
        _case("rho-monotone", rho_auroc_adj_U2_mean=[0.503, 0.469, 0.421, 0.358, 0.284, 0.197]),
    ],
}
