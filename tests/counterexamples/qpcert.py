"""Counter-examples for qpcert's claim checks: metrics dicts built so that each check must say 'not held'."""
import copy

# Smoke-scale shapes: 3 CSBM seeds, 20 test nodes, certified ratio at b = 0..4 per architecture.
_SEEDS = [0, 1, 2]
_RATIO = {"GCN": [[1.0, 0.85, 0.65, 0.50, 0.40], [1.0, 0.80, 0.60, 0.45, 0.35], [1.0, 0.90, 0.70, 0.55, 0.45]],
          "SGC": [[1.0, 0.90, 0.75, 0.60, 0.50], [1.0, 0.85, 0.70, 0.55, 0.45], [1.0, 0.95, 0.80, 0.65, 0.55]]}
_AUC = {a: [round(sum(c), 2) for c in cs] for a, cs in _RATIO.items()}   # GCN [3.4, 3.2, 3.6], SGC [3.75, 3.55, 3.95]

# Full-scale shapes: 6 architectures, 1 seed, certified ratio on the 9-point δ grid (b = ⌊δ·40⌋, 40 test nodes).
_ARCHS = ("GCN", "SGC", "APPNP", "GIN", "GraphSAGE", "MLP")
_FLAT = [0.975, 0.925, 0.85, 0.75, 0.75, 0.75, 0.75, 0.55, 0.25]       # 4 equal points strictly inside (0, 1)


def _exact(mm=0, comps=120, mf=0, bf_b=2):
    "Per-budget (b ≤ 2) MILP vs brute force on GCN and SGC: 3 budgets × 20 nodes × 2 archs = 120 verdicts."
    return {"exact_mismatches": mm, "exact_comparisons": comps, "exact_minflip_mismatches": mf, "brute_force_b": bf_b,
            "exact_timeouts": 0}


def _monotone(arch=None, seed=None, curve=None):
    r = copy.deepcopy(_RATIO)
    if arch is not None: r[arch][seed] = curve
    return {"seeds": list(_SEEDS), "ratio": r}


def _sgc(gcn=_AUC["GCN"], sgc=_AUC["SGC"]):
    return {"auc": {"GCN": list(gcn), "SGC": list(sgc)}, "b_max": 4}


def _ntk(err=(0.412, 0.207, 0.103, 0.052)):
    return {"ntk_widths": [64, 256, 1024, 4096], "ntk_rel_error": list(err)}


def _plateau(curves=None):
    "curves: arch -> one δ-grid curve (a single seed at full scale); default every architecture has a plateau."
    curves = curves or {}
    return {"delta_ratio": {a: [list(curves.get(a, _FLAT))] for a in _ARCHS}}


_CSBM_AUC = {"GCN": [24.1], "SGC": [27.3], "APPNP": [29.8], "GIN": [18.6], "GraphSAGE": [21.9], "MLP": [15.2]}


def _hierarchy(karate=None):
    "CSBM ranking APPNP > SGC > GCN > GraphSAGE > GIN > MLP; the default KarateClub ranking differs (GIN first)."
    karate = karate or {"GCN": 3.10, "SGC": 3.37, "APPNP": 3.53, "GIN": 3.80, "GraphSAGE": 2.87, "MLP": 1.63}
    return {"auc": copy.deepcopy(_CSBM_AUC), "karate_auc": dict(karate)}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "exact-certificate": [
        _exact(mm=3),                         # per-budget MILP disagrees with brute force on 3 verdicts
        _exact(mf=2),                         # minimal-budget MILP disagrees with brute force on 2 verdicts
    ],
    "ratio-monotone": [
        _monotone("SGC", 1, [0.95, 0.85, 0.70, 0.55, 0.45]),   # one SGC seed: ratio at b = 0 below 1
        _monotone("GCN", 2, [1.0, 0.90, 0.70, 0.75, 0.45]),    # one GCN seed: ratio rises from b = 2 to b = 3
    ],
    "sgc-more-robust": [
        _sgc(sgc=_AUC["GCN"]),                # effect vanished: SGC's AUC equals GCN's on every seed
        _sgc(gcn=_AUC["SGC"], sgc=_AUC["GCN"]),   # reversed: GCN more robust than SGC
    ],
    "ntk-wide-gcn": [
        _ntk((0.412, 0.207, 0.219, 0.052)),   # error not decreasing in width (1024 worse than 256); first/last still 7.9
        _ntk((0.412, 0.335, 0.281, 0.240)),   # decreasing, but only 1.7× from width 64 to 4096 (> 4× required)
    ],
    "plateau": [
        # no architecture has a flat run: all curves strictly decreasing
        _plateau({a: [0.975, 0.925, 0.85, 0.775, 0.70, 0.625, 0.55, 0.40, 0.15] for a in _ARCHS}),
        # flat runs only at 1 and 0 (excluded: the plateau must lie strictly between 0 and 1)
        _plateau({a: [1.0, 1.0, 1.0, 0.90, 0.75, 0.50, 0.0, 0.0, 0.0] for a in _ARCHS}),
        # flat runs of only 2 grid points (≥ 3 required)
        _plateau({a: [0.975, 0.925, 0.85, 0.75, 0.75, 0.65, 0.55, 0.40, 0.15] for a in _ARCHS}),
        # only 2 of 6 architectures plateau (at least half required)
        _plateau({a: [0.975, 0.925, 0.85, 0.775, 0.70, 0.625, 0.55, 0.40, 0.15] for a in _ARCHS[2:]}),
    ],
    "no-single-best": [
        # the hierarchy is the same on both graphs: KarateClub ranks APPNP > SGC > GCN > GraphSAGE > GIN > MLP too
        _hierarchy({"GCN": 3.10, "SGC": 3.37, "APPNP": 3.53, "GIN": 2.40, "GraphSAGE": 2.87, "MLP": 1.63}),
    ],
}

# nothing compared (brute_force_b = 0) is "not measured" (None), not a counter-example: see tests/test_qpcert.py
NOT_MEASURED = {"exact-certificate": _exact(comps=0, bf_b=0)}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"exact-certificate": _exact(), "ratio-monotone": _monotone(), "sgc-more-robust": _sgc(), "ntk-wide-gcn": _ntk(),
            "plateau": _plateau(), "no-single-best": _hierarchy()}
