"""Counter-examples for transformer_group_sparsity's claim checks: metrics dicts built so that each check must say 'not held'."""

# Smoke-scale run (3 seeds, D = 8 key positions): pre-training result per seed and downstream accuracy (mean of reps).
_SEL = {"test_acc": [0.993, 0.989, 0.995], "attn_jstar": [0.91, 0.88, 0.93], "attn_jstar_is_max": [True, True, True],
        "cos_v1": [0.992, 0.987, 0.995]}
_DOWN = {"8": {"pre-trained": [0.81, 0.78, 0.83], "logistic": [0.58, 0.56, 0.60]},
         "32": {"pre-trained": [0.95, 0.94, 0.96], "logistic": [0.71, 0.69, 0.73]}}


def _set(xs, i, v):
    "Copy of the per-seed list xs with seed i replaced by v."
    xs = list(xs); xs[i] = v; return xs


def _selection(**per_seed):
    d = {"seeds": [0, 1, 2], **{k: list(v) for k, v in _SEL.items()}}
    d.update({k: list(v) for k, v in per_seed.items()})
    return d


def _transfer(n=None, method="pre-trained", values=None):
    "Downstream accuracies with sample size n's `method` list replaced by values."
    d = {k: {m: list(v) for m, v in x.items()} for k, x in _DOWN.items()}
    if n is not None: d[n][method] = list(values)
    return {"downstream": d}


def _digits(attn=0.64, top=True, acc=0.874):
    return {"digits_attn_jstar": attn, "digits_attn_is_max": top, "digits_test_acc": acc}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "selection": [
        _selection(test_acc=_set(_SEL["test_acc"], 1, 0.912)),     # one seed: test accuracy 0.912 (≥ 0.95 required)
        _selection(attn_jstar=_set(_SEL["attn_jstar"], 2, 0.55)),  # one seed: attention on j* 0.55, still the largest (≥ 0.7 required)
        # 'largest' cannot fail alone: the per-key attention masses sum to 1, so ≥ 0.7 on j* makes it the largest;
        # this seed attends to another position (attention on j* 0.21): breaks both attention conditions
        _selection(attn_jstar=_set(_SEL["attn_jstar"], 0, 0.21), attn_jstar_is_max=_set(_SEL["attn_jstar_is_max"], 0, False)),
        _selection(cos_v1=_set(_SEL["cos_v1"], 0, 0.81)),          # one seed: v1 not aligned with v* (cos 0.81 < 0.95)
    ],
    "transfer": [
        _transfer("8", values=[0.81, 0.59, 0.83]),                 # n = 8, one seed: pre-trained only +0.03 over logistic
        _transfer("32", values=[0.95, 0.94, 0.77]),                # n = 32, one seed: pre-trained only +0.04 over logistic
        _transfer("8", values=_DOWN["8"]["logistic"]),             # effect vanished at n = 8: pre-trained = logistic regression
    ],
    "real_images": [
        _digits(attn=0.14, top=False),                             # attention not on the label-carrying slot (acc still 0.874)
        _digits(acc=0.71),                                         # attention on j* is largest, but test acc 0.71 (> 0.75 required)
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"selection": _selection(), "transfer": _transfer(), "real_images": _digits()}
