"""Counter-examples for delta's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing run's shape (3 seeds; numbers illustrative of a trained log model that is scale-invariant and a metric model that is not).
_BASE = {
    "epe3d_rel_far_log": [0.061, 0.058, 0.064], "epe3d_rel_far_metric": [0.142, 0.151, 0.138],
    "epe3d_rel_in_log": [0.061, 0.058, 0.064], "epe3d_rel_in_metric": [0.060, 0.059, 0.062],
    "absrel_in_log": [0.031, 0.030, 0.033], "absrel_in_lookup": [0.052, 0.050, 0.055], "absrel_in_metric": [0.032, 0.031, 0.033],
    "absrel_in_lookup_oracle": [0.046, 0.045, 0.047],
    "epe2d_in_log": [0.52, 0.55, 0.50], "epe2d_in_static": [1.60, 1.58, 1.66],
    "epe2d_boundary_attention": [0.71, 0.69, 0.74], "epe2d_boundary_bilinear": [1.02, 0.98, 1.05], "epe2d_boundary_nearest": [1.21, 1.18, 1.25],
    "timing_speedup": [6.1, 14.8], "timing_size": [32, 64],
}
_KEYS = {
    "log-depth": ["epe3d_rel_far_log", "epe3d_rel_far_metric", "epe3d_rel_in_log", "epe3d_rel_in_metric"],
    "beats-lookup": ["absrel_in_log", "absrel_in_lookup", "absrel_in_metric", "absrel_in_lookup_oracle", "epe2d_in_log", "epe2d_in_static"],
    "attention-upsampler": ["epe2d_boundary_attention", "epe2d_boundary_bilinear", "epe2d_boundary_nearest"],
    "reduced-resolution-speed": ["timing_speedup", "timing_size"],
}
_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "log-depth": [
        # the mechanism vanished: log as scale-dependent as metric out of range (equal errors on every seed)
        _case("log-depth", epe3d_rel_far_log=list(_BASE["epe3d_rel_far_metric"])),
        # one seed only: log 0.125 > 0.8 × metric 0.151
        _case("log-depth", epe3d_rel_far_log=_seed("epe3d_rel_far_log", 1, 0.125)),
        # out of range fine, but log more than 10 % worse in range on one seed
        _case("log-depth", epe3d_rel_in_log=_seed("epe3d_rel_in_log", 2, 0.070)),
    ],
    "beats-lookup": [
        # no temporal refinement: the model's depth is the lookup's depth
        _case("beats-lookup", absrel_in_log=list(_BASE["absrel_in_lookup"])),
        # one seed within 15 %: 0.046 > 0.85 × 0.052
        _case("beats-lookup", absrel_in_log=_seed("absrel_in_log", 0, 0.046)),
        # the smoke run's failure: depth beats the lookup, but the tracker does not track (its 2-D error is that of
        # leaving every point in place), so the lookup loses only by reading depth at wrong positions
        _case("beats-lookup", epe2d_in_log=[1.67, 1.70, 1.66], epe2d_in_static=[1.60, 1.62, 1.58]),
    ],
    "attention-upsampler": [
        # attention no better than bilinear at boundaries
        _case("attention-upsampler", epe2d_boundary_attention=list(_BASE["epe2d_boundary_bilinear"])),
        # one seed: 0.90 > 0.85 × 0.98
        _case("attention-upsampler", epe2d_boundary_attention=_seed("epe2d_boundary_attention", 1, 0.90)),
    ],
    "reduced-resolution-speed": [
        # below 4× at the small size
        _case("reduced-resolution-speed", timing_speedup=[3.2, 14.8]),
        # only one size measured
        _case("reduced-resolution-speed", timing_speedup=[6.1], timing_size=[32]),
    ],
}
