"""Counter-examples for gromov_monge_gap's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing 3-seed run of the toy (three blobs → circle, l2sq): Sinkhorn fit, distortion DST_n, Gromov-Monge gap GMG_n
# per regulariser, the GW lower bound of the unregularised image, the fit metric's noise floor and the map shift.
_BASE = {
    "fit_none": [0.241, 0.263, 0.228], "fit_DST": [0.788, 0.812, 0.771], "fit_GMG": [0.246, 0.270, 0.236],
    "dst_none": [50.2, 53.1, 48.0], "dst_GMG": [31.4, 33.8, 30.1], "gw_lb_none": [25.0, 27.1, 24.3],
    "gmg_none": [1.37, 1.52, 1.10], "gmg_GMG": [-0.11, 0.05, -0.20], "shift_GMG": [0.20, 0.18, 0.22],
    "fit_floor": [0.031, 0.029, 0.034],
}
_KEYS = {
    "gmg-keeps-fit": ["fit_GMG", "fit_DST"],
    "gmg-keeps-geometry": ["dst_GMG", "dst_none", "gw_lb_none"],
    "gmg-closes-gap": ["gmg_GMG", "gmg_none", "shift_GMG"],
    "gmg-fits": ["fit_GMG", "fit_none", "fit_floor"],
}


_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "gmg-keeps-fit": [
        # GMG trades away the fit exactly as DST does (equal fit on every seed)
        _case("gmg-keeps-fit", fit_GMG=list(_BASE["fit_DST"])),
        # one seed: GMG's fit 0.52 > 0.6 × DST's 0.812
        _case("gmg-keeps-fit", fit_GMG=_seed("fit_GMG", 1, 0.521)),
    ],
    "gmg-keeps-geometry": [
        # the gap gives no push (GMG ≈ 0): GMG-regularised maps distort as much as unregularised ones
        _case("gmg-keeps-geometry", dst_GMG=list(_BASE["dst_none"])),
        # one seed only 5 % below no regulariser (the smoke-scale regime the note describes)
        _case("gmg-keeps-geometry", dst_GMG=_seed("dst_GMG", 1, 50.4)),
    ],
    "gmg-closes-gap": [
        # the regulariser has no effect: the GMG-regularised map is the unregularised one (same gap, no shift)
        _case("gmg-closes-gap", gmg_GMG=list(_BASE["gmg_none"]), shift_GMG=[0.0, 0.0, 0.0]),
        # one seed: the gap only shrinks by a third (1.02 > 0.5 × 1.52)
        _case("gmg-closes-gap", gmg_GMG=_seed("gmg_GMG", 1, 1.02)),
        # nothing to close: the unregularised map already has no gap (entropic bias makes it negative)
        _case("gmg-closes-gap", gmg_none=_seed("gmg_none", 2, -0.3)),
    ],
    "gmg-fits": [
        # one seed: GMG's fit 0.31 is 0.047 worse than none's 0.263, above the noise floor 0.029
        _case("gmg-fits", fit_GMG=_seed("fit_GMG", 1, 0.310)),
        # GMG loses the fit on every seed (the old 4 × none tolerance would have let 0.9 pass)
        _case("gmg-fits", fit_GMG=[0.90, 0.95, 0.88]),
    ],
}
