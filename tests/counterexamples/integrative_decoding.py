"""Counter-examples for integrative_decoding's claim checks: metrics dicts built so that each check must say 'not held'.

The checks read per-seed columns (one value per seed of the run; the card asks for each of 3 seeds), so besides the
effect vanishing or reversing on every seed, each claim has a counter-example where it fails on one seed of three."""

K_VALUES = (1, 2, 4, 8, 12, 16)


def _id_vs_greedy(id8=(0.833, 0.85, 0.817), greedy=(0.617, 0.55, 0.583)):
    "Accuracy on clean ∪ misconception entities per seed (greedy repeats the misconception on most of them)."
    return {"acc_id8": list(id8), "acc_greedy": list(greedy)}


def _scaling(id1=(0.7, 0.7, 0.717), id16=(0.8, 0.833, 0.817), clean=((0.8, 1.0), (0.767, 1.0), (0.8, 1.0)),
             mis=((0.6, 0.6), (0.633, 0.667), (0.633, 0.633)), vote16=(0.95, 0.933, 0.95)):
    by_k = [dict(zip(K_VALUES, (a, a, a, a, b, b))) for a, b in zip(id1, id16)]
    return {"acc_id1": list(id1), "acc_id16": list(id16), "acc_id_by_k": by_k, "acc_vote16": list(vote16),
            "clean_acc_id1": [c[0] for c in clean], "clean_acc_id16": [c[1] for c in clean],
            "mis_acc_id1": [c[0] for c in mis], "mis_acc_id16": [c[1] for c in mis]}


def _control(id8=(0.967, 1.0, 1.0), greedy=(0.967, 1.0, 1.0)):
    "Control entities (noise spread uniformly): greedy is already right."
    return {"control_acc_id8": list(id8), "control_acc_greedy": list(greedy)}


def _copy(rate=(0.912, 0.9, 0.917), prob=0.9):
    return {"copy_rate": list(rate), "copy_prob": prob}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "id_beats_greedy": [
        _id_vs_greedy(id8=(0.617, 0.55, 0.583)),           # effect vanished: ID(k=8) = greedy on every seed
        _id_vs_greedy(id8=(0.783, 0.717, 0.75)),           # ID better, but by +0.17 (< +0.2 required) on every seed
        _id_vs_greedy(id8=(0.45, 0.5, 0.45)),              # reversed: ID below greedy
        _id_vs_greedy(id8=(0.833, 0.85, 0.65)),            # holds on two seeds, fails on the third (+0.067)
    ],
    "gains_grow_with_k": [
        _scaling(id16=(0.717, 0.717, 0.733)),              # flat in k: ID(16) − ID(1) ≈ +0.02 (< +0.1)
        _scaling(id16=(0.6, 0.583, 0.617)),                # reversed: more samples hurt
        _scaling(id16=(0.8, 0.833, 0.783)),                # one seed of three gains only +0.067
    ],
    "no_harm_without_misconceptions": [
        _control(id8=(0.867, 0.9, 0.9)),                   # ID hurts the control group by 0.10
        # the check is two-sided: ID changing the control group's accuracy upward by 0.10 also fails it
        _control(id8=(0.867, 0.9, 0.9), greedy=(0.767, 0.8, 0.8)),
        _control(id8=(0.967, 1.0, 0.9)),                   # harm on one seed of three
    ],
    "copy_rate_diagnostic": [
        _copy(rate=(0.31, 0.3, 0.28)),                     # model ignores the draft in its context (corpus copy prob 0.9)
        _copy(rate=(0.78, 0.79, 0.77)),                    # copies, but below the 0.8 threshold
        _copy(rate=(0.912, 0.9, 0.76)),                    # one seed of three below the threshold
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"id_beats_greedy": _id_vs_greedy(), "gains_grow_with_k": _scaling(), "no_harm_without_misconceptions": _control(),
            "copy_rate_diagnostic": _copy()}
