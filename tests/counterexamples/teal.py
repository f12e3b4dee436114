"""Counter-examples for teal's claim checks: metrics dicts built so that each check must say 'not held'."""
import copy

# Tiny char-level Llama, 3 seeds; perplexities on the sparsity grid ps = (0, 0.25, 0.4, 0.5, 0.65).
_PS = [0.0, 0.25, 0.4, 0.5, 0.65]
_DENSE = [4.62, 4.55, 4.71]
_TEAL = [[4.62, 4.66, 4.74, 4.83, 5.10], [4.55, 4.59, 4.66, 4.75, 5.01], [4.71, 4.75, 4.83, 4.93, 5.22]]
_RANDOM = [[4.62, 5.35, 6.10, 6.85, 8.40], [4.55, 5.27, 6.02, 6.74, 8.29], [4.71, 5.46, 6.22, 6.98, 8.57]]
_CATS = [[4.62, 4.71, 4.93, 5.18, 5.95], [4.55, 4.63, 4.85, 5.09, 5.83], [4.71, 4.80, 5.03, 5.29, 6.08]]
_GREEDY = [[4.62, 4.65, 4.71, 4.78, 5.01], [4.55, 4.58, 4.63, 4.70, 4.93], [4.71, 4.74, 4.80, 4.87, 5.12]]
_GREEDY_EFF = [0.0, 0.2497, 0.3996, 0.4998, 0.6495]
# achieved effective sparsity on the held-out positions (parameter-weighted zeroed fraction): uniform and greedy
_TEAL_ACH = [0.0, 0.2561, 0.4073, 0.5069, 0.6548]
_GREEDY_ACH = [0.0, 0.2534, 0.4040, 0.5021, 0.6530]


def _seed(curves, s, curve):
    "Copy of the per-seed curves with seed s's curve replaced."
    c = copy.deepcopy(curves); c[s] = list(curve); return c


def _per_seed(dense=True, **curves):
    "per_seed records holding only the given curves (and ppl_dense where the check reads it)."
    return [{**({"ppl_dense": _DENSE[s]} if dense else {}), **{k: list(v[s]) for k, v in curves.items()}} for s in range(len(_DENSE))]


def _random(teal=_TEAL, random=_RANDOM):
    return {"ps": list(_PS), "per_seed": _per_seed(teal=teal, random=random)}


def _25(teal=_TEAL):
    return {"ps": list(_PS), "per_seed": _per_seed(teal=teal)}


def _cats(teal=_TEAL, cats=_CATS, cap=0.672):
    return {"ps": list(_PS), "per_seed": _per_seed(False, teal=teal, cats=cats), "cats_cap": cap}


def _greedy(teal=_TEAL, greedy=_GREEDY, greedy_ach=(_GREEDY_ACH,) * 3):
    return {"ps": list(_PS), "per_seed": _per_seed(False, teal=teal, greedy=greedy, greedy_effective=[_GREEDY_EFF] * 3,
                                                   greedy_effective_achieved=list(greedy_ach), teal_effective_achieved=[_TEAL_ACH] * 3)}


def _kernel(err=2.4e-7):
    return {"gemv_max_abs_err": err}


def _speed(speedup_at_half=None, ps=_PS):
    "Benchmark rows (p × threads 1, 2); speedup_at_half: {threads: speed-up at p = 0.5} overriding the default 1.71 / 1.62."
    dense = {1: 6.10, 2: 3.45}
    base = {0.0: 0.97, 0.25: 1.24, 0.4: 1.47, 0.5: 1.71, 0.65: 2.18}
    rows = []
    for p in ps:
        for t in (1, 2):
            sp = base[p] * (1.0 if t == 1 else 0.95)
            if p == 0.5 and speedup_at_half and t in speedup_at_half: sp = speedup_at_half[t]
            rows.append({"p": p, "threads": t, "dense_ms": dense[t], "sparse_ms": round(dense[t] / sp, 3), "speedup": round(sp, 3)})
    return {"speed": rows, "load_avg": 1.3}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "magnitude-beats-random": [
        _random(teal=_RANDOM),                                    # effect vanished: TEAL's thresholds cost as much as random masks
        _random(teal=_seed(_TEAL, 1, [4.55, 4.78, 5.12, 5.56, 6.43])),  # one seed: cost ratio 0.46 at 50 % (≤ 0.3 required)
    ],
    "free-at-25": [
        _25(teal=_seed(_TEAL, 2, [4.71, 5.04, 5.31, 5.62, 6.35])),  # one seed: PPL at 25 % is 1.07× dense (≤ 1.05 required)
        _25(teal=_RANDOM),                                        # magnitude criterion lost: TEAL degrades like random masks
    ],
    "beats-cats": [
        _cats(teal=_CATS),                                        # effect vanished: TEAL's PPL equals CATS's
        _cats(cats=_seed(_CATS, 0, [4.62, 4.64, 4.72, 4.90, 5.55])),  # one seed: CATS better than TEAL at 40 % (4.72 < 4.74)
    ],
    "greedy-beats-uniform": [
        _greedy(greedy=_TEAL),                                    # effect vanished: greedy allocation = uniform allocation
        _greedy(greedy=_seed(_GREEDY, 2, [4.71, 4.76, 4.85, 4.98, 5.27])),  # one seed: greedy worse than uniform at 50 %
        # greedy's lower PPL bought with less sparsity: achieved 0.458 vs uniform's 0.507 on one seed (|gap| ≤ 0.02 required)
        _greedy(greedy_ach=_seed([_GREEDY_ACH] * 3, 1, [0.0, 0.2302, 0.3655, 0.4581, 0.6102])),
    ],
    "sparse-gemv-exact": [
        _kernel(3.1e-2),                                          # kernel reads wrong rows: error of the size of W's entries
        _kernel(2.5e-4),                                          # small but above the 1e-4 tolerance
    ],
    "decode-speedup": [
        _speed({1: 1.02, 2: 0.98}),                               # no speed-up at 50 % on either thread count
        _speed({2: 1.28}),                                        # only the 2-thread row falls below 1.4×
        _speed(ps=[0.0, 0.25, 0.4, 0.65]),                        # benchmark has no p = 0.5 rows
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"magnitude-beats-random": _random(), "free-at-25": _25(), "beats-cats": _cats(), "greedy-beats-uniform": _greedy(),
            "sparse-gemv-exact": _kernel(), "decode-speedup": _speed()}
