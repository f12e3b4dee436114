"""Counter-examples for llm_rationality's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

# A passing smoke-scale run (3 seeds, disagreement-enriched set, 1000 problems per seed).
_FH = [{"alpha": 0.8684, "beta": 0.8684, "lam": 2.2244, "gamma": 0.6086, "delta": 0.6898, "phi": 0.1598},
       {"alpha": 0.8873, "beta": 0.8873, "lam": 2.3194, "gamma": 0.6077, "delta": 0.6871, "phi": 0.1444},
       {"alpha": 0.867, "beta": 0.867, "lam": 2.1463, "gamma": 0.5974, "delta": 0.7052, "phi": 0.1581}]
_FP = [{"alpha": 0.9922, "beta": 0.9922, "lam": 0.9975, "gamma": 1.001, "delta": 1.0172, "phi": 0.3098},
       {"alpha": 1.0013, "beta": 1.0013, "lam": 1.0097, "gamma": 1.0072, "delta": 1.0253, "phi": 0.2923},
       {"alpha": 1.0035, "beta": 1.0035, "lam": 1.0182, "gamma": 0.9984, "delta": 1.0165, "phi": 0.3004}]
_BASE = {
    "problem_set": "disagreement-enriched",
    "r_proxy_ev": [0.9887, 0.9898, 0.9894], "r_proxy_human": [0.5217, 0.4998, 0.5105],
    "r_human_pt": [0.9731, 0.9737, 0.9726], "r_human_ev": [0.5266, 0.5071, 0.5137],
    "fit_human": _FH, "fit_proxy": _FP,
    "true_human": {"alpha": 0.88, "beta": 0.88, "lam": 2.25, "gamma": 0.61, "delta": 0.69, "phi": 0.15},
    "text_mismatch": [0, 0, 0], "text_unparsable": [0, 0, 0], "text_compared": [4000, 4000, 4000], "text_ties": [4, 1, 4],
    "ri_by_w": [[0.173, 0.393, 0.663, 0.845, 0.929], [0.157, 0.381, 0.625, 0.839, 0.923], [0.189, 0.391, 0.654, 0.863, 0.92]],
    "w_grid": [0.0, 0.25, 0.5, 0.75, 1.0],
}
_KEYS = {
    "ev-closer-than-humans": ["r_proxy_ev", "r_proxy_human", "r_human_pt", "r_human_ev", "problem_set"],
    "rationality-profile": ["fit_human", "fit_proxy", "true_human"],
    "text-pipeline": ["text_mismatch", "text_unparsable", "text_compared", "text_ties"],
    "rationality-index": ["ri_by_w", "w_grid"],
}

_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


def _fit(key, i, **changes):
    "The passing fits `key` with seed i's parameters changed."
    return with_seed(_BASE[key], i, {**_BASE[key][i], **changes})


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "ev-closer-than-humans": [
        # the mechanism vanished: the "humans" are themselves EV choosers, so every correlation is ~ the same
        _case("ev-closer-than-humans", r_proxy_human=[0.975, 0.977, 0.976], r_human_pt=[0.951, 0.949, 0.953],
              r_human_ev=[0.979, 0.978, 0.980]),
        # EV proxy gap only, one seed: 0.9898 − 0.795 = 0.195 ≤ 0.2
        _case("ev-closer-than-humans", r_proxy_human=_seed("r_proxy_human", 1, 0.795)),
        # humans gap only, one seed: PT no better than EV for the humans
        _case("ev-closer-than-humans", r_human_pt=_seed("r_human_pt", 2, 0.70)),
    ],
    "rationality-profile": [
        # the loss-domain bug (γ used for losses): δ recovered at γ's value on every seed, λ off
        _case("rationality-profile", fit_human=[{**f, "delta": 0.585, "lam": 2.61} for f in _FH]),
        # humans' α off by 0.12 on one seed
        _case("rationality-profile", fit_human=_fit("fit_human", 0, alpha=0.76)),
        # humans' λ off by 0.35 on one seed (within ±0.3 fails)
        _case("rationality-profile", fit_human=_fit("fit_human", 1, lam=2.60)),
        # the EV proxy's γ away from 1 by 0.2 on one seed
        _case("rationality-profile", fit_proxy=_fit("fit_proxy", 2, gamma=0.80)),
        # an unidentified φ/α trade-off: the proxy's α at 0.8 with a compensating φ
        _case("rationality-profile", fit_proxy=_fit("fit_proxy", 0, alpha=0.80, phi=0.62)),
    ],
    "text-pipeline": [
        # the prompt drops the sign of losses: the stand-in disagrees with EV on many problems
        _case("text-pipeline", text_mismatch=[412, 398, 405]),
        # one problem off on one seed
        _case("text-pipeline", text_mismatch=_seed("text_mismatch", 2, 1)),
        # a parser that fails on some answer forms: unparsable answers (their P(B) excluded)
        _case("text-pipeline", text_unparsable=_seed("text_unparsable", 0, 200)),
    ],
    "rationality-index": [
        # flat: the index does not depend on w (e.g. computed on the wrong subset)
        _case("rationality-index", ri_by_w=[[0.5] * 5] * 3),
        # one seed not strictly increasing at the top (0.863 → 0.85)
        _case("rationality-index", ri_by_w=_seed("ri_by_w", 2, [0.189, 0.391, 0.654, 0.863, 0.85])),
        # reversed: the index counts the PT choice instead of the EV choice
        _case("rationality-index", ri_by_w=[[round(1 - v, 3) for v in c] for c in _BASE["ri_by_w"]]),
    ],
}
