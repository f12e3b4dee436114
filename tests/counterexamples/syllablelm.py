"""Counter-examples for syllablelm's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing full-scale-like run (3 seeds) built from the smoke seed-0 numbers (F1 LossPred ≈ 0.72, fixed ≈ 0.33,
# SylBoost ≈ 0.82; variance ratio teacher ≈ 0.59, student ≈ 0.10; NMI units ≈ 0.53 vs 50 Hz ≈ 0.45; rate ≈ 4.4 vs 4.3 Hz).
_BASE = {
    "f1_losspred": [0.718, 0.731, 0.705], "f1_fixed": [0.330, 0.342, 0.318], "f1_sse_init": [0.623, 0.611, 0.640],
    "rval_losspred": [0.758, 0.766, 0.749], "rval_fixed": [0.442, 0.450, 0.437],
    "f1_sylboost1": [0.824, 0.810, 0.797],
    "var_ratio_teacher": [0.586, 0.571, 0.602], "var_ratio_student": [0.095, 0.110, 0.121],
    "nmi_sylboost_units": [0.528, 0.541, 0.519], "nmi_kmeans50": [0.451, 0.447, 0.460],
    "purity_sylboost_units": [0.319, 0.330, 0.311],
    "unit_rate": [4.38, 4.51, 4.29], "true_syllable_rate": [4.32, 4.40, 4.35], "sylboost_iters_run": [2, 2, 2],
}
_KEYS = {
    "losspred-boundaries": ["f1_losspred", "f1_fixed", "rval_losspred", "rval_fixed", "f1_sse_init"],
    "sylboost": ["f1_sylboost1", "f1_losspred", "var_ratio_student", "var_ratio_teacher"],
    "units": ["nmi_sylboost_units", "nmi_kmeans50", "unit_rate", "true_syllable_rate", "purity_sylboost_units",
              "sylboost_iters_run"],
}
_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "losspred-boundaries": [
        # the mechanism vanished: LossPred's boundaries are no better than evenly spaced ones (loss attributed to the
        # window centre gives a flat S, and the min-cut falls back to near-even cuts)
        _case("losspred-boundaries", f1_losspred=[0.335, 0.340, 0.322]),
        # one seed's margin 0.08 < 0.10
        _case("losspred-boundaries", f1_losspred=_seed("f1_losspred", 1, 0.422)),
    ],
    "sylboost": [
        # SylBoost loses boundary quality on one seed (0.05 below LossPred)
        _case("sylboost", f1_sylboost1=_seed("f1_sylboost1", 2, 0.655)),
        # the student is not flatter than the teacher (no distillation happened): ratio equal to the teacher's
        _case("sylboost", var_ratio_student=list(_BASE["var_ratio_teacher"])),
        # flatter, but not by the 0.8 factor on one seed
        _case("sylboost", var_ratio_student=_seed("var_ratio_student", 0, 0.50)),
    ],
    "units": [
        # SylBoost units carry less syllable identity than 50 Hz k-means units on one seed
        _case("units", nmi_sylboost_units=_seed("nmi_sylboost_units", 1, 0.430)),
        # the unit rate is 30 % above the true syllable rate on one seed (over-segmentation)
        _case("units", unit_rate=_seed("unit_rate", 2, 5.66)),
        # 50 Hz-like rate: units not merged at all
        _case("units", unit_rate=[27.8, 28.1, 27.5]),
    ],
}
