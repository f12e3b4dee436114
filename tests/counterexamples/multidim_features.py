"""Counter-examples for multidim_features's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import with_seed

SEEDS = [0, 1, 2]

# (M, S) of the six synthetic reference clouds in a passing run; score = (1 − M)·S as irreducibility_score computes it.
_SYN = {"gaussian": (0.12, 0.02), "mixture": (0.55, 0.35), "circle": (0.08, 1.60), "lattice": (0.35, 0.05),
        "independent_product": (0.15, 0.03), "two_features_mixture": (0.62, 0.25)}


def _indices(**changes):
    "`synthetic` metrics; changes: set name → (M, S)."
    ms = {**_SYN, **changes}
    return {"synthetic": {k: {"M": M, "S": S, "score": (1.0 - M) * S} for k, (M, S) in ms.items()}}


_with = with_seed


def _emergence(ks=(1, 2, 1), control=(0, 0, 0)):
    return {"circle_k": list(ks), "control_circle_k": list(control)}


_TOP3 = [[0.93, 0.71, 0.12], [0.05, 0.88, 0.64], [0.81, 0.09, 0.57]]


def _discovery(top3=_TOP3):
    return {"seeds": list(SEEDS), "top3_calendar_frac": [list(t) for t in top3]}


_BEST = [0.912, 0.874, 1.036]
_CTRL = [0.287, 0.342, 0.311]


def _above(best=_BEST, ctrl=_CTRL):
    return {"best_calendar_score": list(best), "control_best_calendar_score": list(ctrl)}


# fraction of (day, k) cases whose argmax is the intended day, per seed
_IV = {"circle": [0.78, 0.71, 0.84], "random_plane": [0.18, 0.22, 0.16], "full_patch": [0.96, 0.94, 0.98],
       "average_ablate": [0.14, 0.14, 0.12]}


def _intervention(**changes):
    return {"seeds": list(SEEDS), **{f"intervention_{k}": list(changes.get(k, v)) for k, v in _IV.items()}}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "indices": [  # nine conditions, one dict each; every other condition (the 3x score ratio included) still holds
        _indices(circle=(0.08, 0.95)),                 # circle S ≤ 1 (separable circle)
        _indices(circle=(0.35, 1.60)),                 # circle M ≥ 0.3 (circle looks like a mixture)
        _indices(gaussian=(0.12, 0.15)),               # Gaussian S ≥ 0.1
        _indices(mixture=(0.25, 0.35)),                # mixture M ≤ 0.3 (mixture index misses the mixture)
        _indices(lattice=(0.35, 0.20)),                # lattice S ≥ 0.15
        _indices(lattice=(0.15, 0.05)),                # lattice M ≤ 0.2
        _indices(independent_product=(0.15, 0.14)),    # independent product S ≥ 0.1 (separability index misses it)
        _indices(two_features_mixture=(0.25, 0.25)),   # two-feature mixture M ≤ 0.3
        _indices(mixture=(0.40, 0.90)),                # circle's score < 3x the mixture's (0.54 vs circle 1.47)
    ],
    "circle_emerges": [
        _emergence(ks=_with((1, 2, 1), 1, 0)),           # seed 1 only: no cyclic order in the trained model
        _emergence(control=_with((0, 0, 0), 2, 1)),      # control 2 only: a circle appears in the random calendar
    ],
    "sae_discovery": [
        _discovery(_with(_TOP3, 2, [0.31, 0.09, 0.44])),  # seed 2 only: no calendar cluster among the 3 best
    ],
    "above_control": [
        _above(best=_with(_BEST, 1, _CTRL[1])),          # seed 1 only: calendar cluster scores equal to the control's best
        _above(ctrl=_with(_CTRL, 2, 0.89)),              # control 2 only: scores above seed 1 (0.874), below seeds 0 and 2
    ],
    "intervention": [  # three conditions per seed, each broken on one seed only
        _intervention(circle=_with(_IV["circle"], 0, 0.45)),        # seed 0: circle success ≤ 0.5 (still above the controls)
        _intervention(random_plane=_with(_IV["random_plane"], 1, 0.71)),  # seed 1: random plane as good as the circle
        _intervention(average_ablate=_with(_IV["average_ablate"], 2, 0.84)),  # seed 2: average ablation as good as the circle
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"indices": _indices(), "circle_emerges": _emergence(), "sae_discovery": _discovery(), "above_control": _above(),
            "intervention": _intervention()}
