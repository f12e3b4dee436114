"""Counter-examples for loss_reweighting's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import with_seed

# Step-300 test loss per seed (3 seeds) of a passing regression run: LinUpper < Quadratic < Extremes < uniform.
_T300 = {"uniform": [0.4213, 0.3968, 0.4487], "linupper": [0.1187, 0.1102, 0.1311],
         "quadratic": [0.2534, 0.2391, 0.2702], "extremes": [0.3102, 0.2957, 0.3318]}


_with = with_seed


def _t300(strategies, **changes):
    return {f"test300_{s}": list(changes.get(s, _T300[s])) for s in strategies}


def _lm(uniform=(1.9412, 1.9537, 1.9386), reweighted=(1.9301, 1.9468, 1.9290)):
    return {"lm_gain": [u - w for u, w in zip(uniform, reweighted)], "lm_uniform": list(uniform),
            "lm_reweighted": list(reweighted), "lm_strategy": "linupper"}


_LIN = ("uniform", "linupper")
_ORDER = ("uniform", "linupper", "quadratic", "extremes")

COUNTEREXAMPLES: dict[str, list[dict]] = {
    "linreg-linupper-faster": [
        _t300(_LIN, linupper=_with(_T300["linupper"], 1, _T300["uniform"][1])),   # seed 1 only: LinUpper = uniform
        _t300(_LIN, linupper=_with(_T300["linupper"], 2, 0.2558)),                # seed 2 only: ratio 0.57 (> 0.5)
    ],
    "downweight-low-loss": [
        _t300(_ORDER, quadratic=_with(_T300["quadratic"], 0, _T300["uniform"][0])),  # seed 0 only: Quadratic = uniform
        _t300(_ORDER, extremes=_with(_T300["extremes"], 2, _T300["linupper"][2])),   # seed 2 only: Extremes = LinUpper
    ],
    "lm-pretraining": [
        _lm(reweighted=(1.9412, 1.9537, 1.9386)),          # effect vanished: reweighted = uniform on every seed
        _lm(reweighted=(1.9480, 1.9521, 1.9457)),          # reversed on average: mean gain < 0
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"linreg-linupper-faster": _t300(_LIN), "downweight-low-loss": _t300(_ORDER), "lm-pretraining": _lm()}
