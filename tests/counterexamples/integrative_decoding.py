"""Counter-examples for integrative_decoding's claim checks: metrics dicts built so that each check must say 'not held'."""

K_VALUES = (1, 2, 4, 8, 12, 16)


def _id_vs_greedy(id8=0.867, greedy=0.517):
    "Accuracy on clean ∪ misconception entities (greedy repeats the misconception on half of them)."
    return {"acc_id8": id8, "acc_greedy": greedy}


def _scaling(by_k=(0.533, 0.617, 0.733, 0.867, 0.883, 0.9), vote16=0.95):
    by_k = dict(zip(K_VALUES, by_k))
    return {"acc_id16": by_k[16], "acc_id1": by_k[1], "acc_id_by_k": by_k, "acc_vote16": vote16}


def _control(id8=0.967, greedy=0.967):
    "Control entities (noise spread uniformly): greedy is already right."
    return {"control_acc_id8": id8, "control_acc_greedy": greedy}


def _copy(rate=0.912, prob=0.9):
    return {"copy_rate": rate, "copy_prob": prob}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "id_beats_greedy": [
        _id_vs_greedy(id8=0.517),                          # effect vanished: ID(k=8) = greedy
        _id_vs_greedy(id8=0.683),                          # ID better, but by +0.17 (< +0.2 required)
        _id_vs_greedy(id8=0.45),                           # reversed: ID below greedy
    ],
    "gains_grow_with_k": [
        _scaling(by_k=(0.55, 0.55, 0.567, 0.55, 0.567, 0.583)),   # flat in k: ID(16) − ID(1) = +0.03 (< +0.1)
        _scaling(by_k=(0.6, 0.583, 0.567, 0.55, 0.533, 0.517)),   # reversed: more samples hurt
    ],
    "no_harm_without_misconceptions": [
        _control(id8=0.867),                               # ID hurts the control group by 0.10
        # the check is two-sided: ID changing the control group's accuracy upward by 0.10 also fails it
        _control(id8=0.867, greedy=0.767),
    ],
    "copy_rate_diagnostic": [
        _copy(rate=0.31),                                  # model ignores the draft in its context (corpus copy prob 0.9)
        _copy(rate=0.78),                                  # copies, but below the 0.8 threshold
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"id_beats_greedy": _id_vs_greedy(), "gains_grow_with_k": _scaling(), "no_harm_without_misconceptions": _control(),
            "copy_rate_diagnostic": _copy()}
