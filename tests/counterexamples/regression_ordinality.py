"""Counter-examples for regression_ordinality's claim checks: metrics dicts built so that each check must say 'not held'."""

# Smoke-scale run (3 seeds): per-seed test MSE (targets y ~ U[0, 1]) and conditional spread of the features.
_MSE = {"baseline": [0.0213, 0.0198, 0.0231], "MT": [0.0172, 0.0160, 0.0189], "ROT": [0.0190, 0.0181, 0.0204],
        "MT+ROT": [0.0141, 0.0133, 0.0152]}
_SPREAD = {"baseline": [0.312, 0.298, 0.327], "MT": [0.241, 0.236, 0.259], "ROT": [0.141, 0.150, 0.137],
           "MT+ROT": [0.122, 0.128, 0.119]}
_H_ZY = {"baseline": [-3.21, -3.35, -3.08], "MT": [-3.92, -4.01, -3.77], "ROT": [-5.64, -5.48, -5.71],
         "MT+ROT": [-6.02, -5.93, -6.15]}


def _set(xs, i, v):
    "Copy of the per-seed list xs with seed i replaced by v."
    xs = list(xs); xs[i] = v; return xs


def _mt_rot(mt_rot=_MSE["MT+ROT"], base=_MSE["baseline"]):
    return {"test_mse_MT+ROT": list(mt_rot), "test_mse_baseline": list(base)}


def _mt(mt=_MSE["MT"], base=_MSE["baseline"]):
    return {"test_mse_MT": list(mt), "test_mse_baseline": list(base)}


def _tight(rot=_SPREAD["ROT"]):
    d = {f"spread_{r}": list(v) for r, v in _SPREAD.items()}
    d.update({f"h_zy_{r}": list(v) for r, v in _H_ZY.items()})
    d.update(spread_ROT=list(rot), test_mse_ROT=list(_MSE["ROT"]))
    return d


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "mt-rot-improves": [
        _mt_rot(mt_rot=_MSE["baseline"]),                  # effect vanished: MT+ROT's test MSE equals the baseline's
        _mt_rot(mt_rot=_set(_MSE["MT+ROT"], 1, 0.0182)),   # one seed improves by only 8 % (< 0.8× baseline required)
    ],
    "mt-improves": [
        _mt(mt=_MSE["baseline"]),                          # effect vanished: 8 heads give the baseline's MSE
        _mt(mt=_set(_MSE["MT"], 2, 0.0246)),               # one seed: MT worse than the baseline
    ],
    "rot-tightens": [
        _tight(rot=_SPREAD["baseline"]),                   # regulariser without effect: ROT spread = unregularised spread
        _tight(rot=_set(_SPREAD["ROT"], 0, 0.271)),        # one seed tightens by only 13 % (< 0.8× baseline required)
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"mt-rot-improves": _mt_rot(), "mt-improves": _mt(), "rot-tightens": _tight()}
