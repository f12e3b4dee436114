"""Counter-examples for mallowspo's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import with_seed

# Reward at KL = 1 per seed (3 bandit worlds) of a passing run: MallowsPO-θ above DPO by 0.05-0.09.
_DPO = [0.8714, 0.9032, 0.8457]
_MALLOWS = [0.9421, 0.9538, 0.9276]


_with = with_seed


def _frontier(mallows=_MALLOWS, dpo=_DPO):
    return {"reward_at_kl1_mallows": list(mallows), "reward_at_kl1_dpo": list(dpo)}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "frontier_above_dpo": [
        _frontier(mallows=_with(_MALLOWS, 1, _DPO[1])),          # seed 1 only: effect vanished, MallowsPO = DPO
        _frontier(mallows=_with(_MALLOWS, 2, _DPO[2] + 0.02)),   # seed 2 only: gap +0.02 (< 0.03 required)
        _frontier(mallows=_with(_MALLOWS, 0, float("nan"))),     # seed 0 only: KL = 1 outside MallowsPO's β sweep (NaN)
        _frontier(dpo=_with(_DPO, 0, float("nan"))),             # seed 0 only: KL = 1 outside DPO's β sweep (NaN)
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"frontier_above_dpo": _frontier()}
