"""Counter-examples for mallowspo's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import with_seed

# Reward at KL = 1 per seed (3 bandit worlds) of a passing run: MallowsPO-θ above DPO by 0.05-0.09.
_DPO = [0.8714, 0.9032, 0.8457]
_MALLOWS = [0.9421, 0.9538, 0.9276]
# the entropy-proxy experiment (informed reference): DPO and MallowsPO-θ with the estimated c, and the estimate's
# correlation with the true −log φ
_PDPO = [1.3127, 1.1535, 1.3151]
_PEST = [1.3621, 1.2010, 1.3580]
_CORR = [0.789, 0.745, 0.710]


_with = with_seed


def _frontier(mallows=_MALLOWS, dpo=_DPO):
    return {"reward_at_kl1_mallows": list(mallows), "reward_at_kl1_dpo": list(dpo)}


def _estimated(est=_PEST, dpo=_PDPO, corr=_CORR):
    return {**_frontier(), "proxy_reward_at_kl1_entropy": list(est), "proxy_reward_at_kl1_dpo": list(dpo),
            "proxy_c_corr": list(corr)}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "frontier_above_dpo": [
        _frontier(mallows=_with(_MALLOWS, 1, _DPO[1])),          # seed 1 only: effect vanished, MallowsPO = DPO
        _frontier(mallows=_with(_MALLOWS, 2, _DPO[2] + 0.02)),   # seed 2 only: gap +0.02 (< 0.03 required)
        _frontier(mallows=_with(_MALLOWS, 0, float("nan"))),     # seed 0 only: KL = 1 outside MallowsPO's β sweep (NaN)
        _frontier(dpo=_with(_DPO, 0, float("nan"))),             # seed 0 only: KL = 1 outside DPO's β sweep (NaN)
    ],
    "estimated_dispersion_above_dpo": [
        _estimated(est=_with(_PEST, 1, _PDPO[1])),               # seed 1 only: the estimated c gains nothing over DPO
        _estimated(est=_with(_PEST, 0, _PDPO[0] - 0.07)),        # seed 0 only: the estimate hurts (measured at smoke)
        _estimated(est=_with(_PEST, 2, float("nan"))),           # seed 2 only: KL = 1 outside the sweep (NaN)
    ],
    "estimate_tracks_dispersion": [
        _estimated(corr=_with(_CORR, 2, 0.3)),                   # seed 2 only: weak correlation
        _estimated(corr=_with(_CORR, 0, -0.75)),                 # seed 0 only: wrong orientation (c = +c₀ log Ĥ)
        _estimated(corr=_with(_CORR, 1, float("nan"))),          # seed 1 only: constant estimate (uniform reference)
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"frontier_above_dpo": _frontier(), "estimated_dispersion_above_dpo": _estimated(),
            "estimate_tracks_dispersion": _estimated()}
