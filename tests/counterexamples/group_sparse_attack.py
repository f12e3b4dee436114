"""Counter-examples for group_sparse_attack's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder

# A passing smoke run (3 CNN seeds, 16×16 digits, d2,0 patches 2×2 / large 4×4); sparsity means over successful images.
_BASE = {
    "asr_gse": [1.0, 1.0, 0.9375], "asr_gse_mean": 0.9792, "asr_ablation_mean": 0.9583,
    "clusters_gse_mean": 1.62, "clusters_ablation_mean": 4.81,
    "d20_gse_mean": 6.2, "d20_ablation_mean": 8.9, "d20_large_gse_mean": 3.1, "d20_large_ablation_mean": 4.6,
    "l0_gse_mean": 21.4, "l0_ablation_mean": 18.7,
    # full scale only: GSE vs FWnucl on the images both flip (4×4 patches at 32×32)
    "n_common": [31, 27, 35], "d20_common_gse_mean": 88.0, "d20_common_fwnucl_mean": 131.0,
    "clusters_common_gse_mean": 1.9, "clusters_common_fwnucl_mean": 2.4,
}
_KEYS = {
    "asr": ["asr_gse", "asr_gse_mean", "asr_ablation_mean"],
    "fewer-clusters": ["clusters_gse_mean", "clusters_ablation_mean"],
    "d20-no-worse": ["d20_gse_mean", "d20_ablation_mean", "d20_large_gse_mean", "d20_large_ablation_mean",
                     "l0_gse_mean", "l0_ablation_mean"],
    "vs-fwnucl": ["n_common", "d20_common_gse_mean", "d20_common_fwnucl_mean", "clusters_common_gse_mean",
                  "clusters_common_fwnucl_mean"],
}


_case = case_builder(_BASE, _KEYS)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "asr": [
        # GSE misses the target on a sixth of the digits: mean ASR 83 % < 90 %
        _case("asr", asr_gse=[0.875, 0.8125, 0.8125], asr_gse_mean=0.8333),
        # one seed's CNN is hard to attack: 62.5 % drags the mean to 87.5 %
        _case("asr", asr_gse=[1.0, 0.625, 1.0], asr_gse_mean=0.875),
    ],
    "fewer-clusters": [
        # the grouping step has no effect: as many clusters as the no-grouping ablation
        _case("fewer-clusters", clusters_gse_mean=4.81),
        # fewer clusters, but not far fewer: ratio 0.71 > 0.6
        _case("fewer-clusters", clusters_gse_mean=3.42),
    ],
    "d20-no-worse": [
        # grouping costs group sparsity: GSE touches more 2×2 patches than the ablation ("no worse", so equal still holds)
        _case("d20-no-worse", d20_gse_mean=9.6, d20_large_gse_mean=4.9, l0_gse_mean=27.3),
    ],
    "vs-fwnucl": [
        # on the images both flip, GSE touches as many patches as FWnucl (the check is strict: no gain, not held)
        _case("vs-fwnucl", d20_common_gse_mean=131.0),
        # GSE fewer clusters but more patches than FWnucl: the d2,0 comparison decides
        _case("vs-fwnucl", d20_common_gse_mean=150.0, clusters_common_gse_mean=1.1),
    ],
}
