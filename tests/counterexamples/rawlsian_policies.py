"""Counter-examples for rawlsian_policies's claim checks: metrics dicts built so that each check must say 'not held'."""
import copy

# Smoke-scale run (N = 50, k = 1, T = 2000, 3 seeds): per-seed growth rates r(10) and r(T) of min-U and max-fg,
# closed forms ζ_R = 265.2, ζ_U = 216.2 (survival) and ζ_R = -56.8, ζ_U = -18.8 (ruin).
_R10_MAXFG, _R10_MINU = [261.5, 259.8, 263.0], [247.8, 249.1, 246.5]
_RT_MINU, _RT_MAXFG = [264.8, 265.9, 263.7], [224.9, 226.3, 223.1]
_CROSS = [98, 107, 90]


def _set(xs, i, v):
    "Copy of the per-seed list xs with seed i replaced by v."
    xs = list(xs); xs[i] = v; return xs


def _short(maxfg=_R10_MAXFG, minu=_R10_MINU):
    return {"r10_maxfg": list(maxfg), "r10_minU": list(minu)}


def _long(minu=_RT_MINU, maxfg=_RT_MAXFG, cross=_CROSS):
    return {"rT_minU": list(minu), "rT_maxfg": list(maxfg), "crossing_time": list(cross)}


def _closed(rt_minu=_RT_MINU, rt_maxfg=_RT_MAXFG, r10_maxfg=_R10_MAXFG):
    return {"zeta_R": 265.2, "zeta_U": 216.2, "rT_minU": list(rt_minu), "rT_maxfg": list(rt_maxfg), "r10_maxfg": list(r10_maxfg)}


def _ruin(maxfg=(-14.5, -13.2, -15.8), minu=(-51.5, -50.2, -53.0)):
    return {"ruin_rT_maxfg": list(maxfg), "ruin_rT_minU": list(minu), "zeta_R_ruin": -56.8, "zeta_U_ruin": -18.8}


# seed-mean r(10) / r(T) per budget k (ζ_R / ζ_U = 265.2/216.2, 1366/1321, 2742/2702 for k = 1, 5, 10)
_SWEEP = {
    "1": {"r10": {"min-U": 247.8, "max-g": 248.5, "max-fg": 261.5, "max-f": 260.2},
          "rT": {"min-U": 264.8, "max-g": 264.1, "max-fg": 224.9, "max-f": 225.6}},
    "5": {"r10": {"min-U": 1290.0, "max-g": 1293.0, "max-fg": 1338.0, "max-f": 1334.0},
          "rT": {"min-U": 1362.0, "max-g": 1360.0, "max-fg": 1326.0, "max-f": 1325.0}},
    "10": {"r10": {"min-U": 2630.0, "max-g": 2634.0, "max-fg": 2712.0, "max-f": 2708.0},
           "rT": {"min-U": 2739.0, "max-g": 2737.0, "max-fg": 2706.0, "max-f": 2705.0}},
}


def _budgets(k=None, when=None, **rates):
    "Budget sweep with the rates of budget k at time `when` ('r10' or 'rT') overridden."
    s = copy.deepcopy(_SWEEP)
    if k is not None: s[k][when].update(rates)
    return {"budget_sweep": s}


def _hetero(short=0.31, long=0.74, winrate_long=0.69):
    return {"hetero_share_short": short, "hetero_share_long": long, "hetero_T_long": 6000,
            "hetero_winrate_short": 0.38, "hetero_winrate_long": winrate_long}


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "short_run_utilitarian_lead": [
        _short(maxfg=_R10_MINU),                       # effect vanished: max-fg's r(10) equals min-U's on every seed
        _short(maxfg=_set(_R10_MAXFG, 1, 251.2)),      # one seed leads by only 2.1 (> 5 required); others hold
    ],
    "long_run_rawlsian_wins": [
        _long(minu=_set(_RT_MINU, 2, 235.4)),          # one seed: min-U ahead at T by only 12.3 (> 20 required)
        _long(cross=_set(_CROSS, 0, 8)),               # one seed: min-U ahead from t = 8 (no utilitarian lead; ≥ 20 required)
        _long(cross=_set(_CROSS, 1, 1460)),            # one seed: curves cross only at t = 1460 (≤ 1000 required)
        # crossing None cannot be broken alone: None means min-U is not ahead at T, so that seed's gap fails as well
        _long(minu=_set(_RT_MINU, 1, 221.7), cross=_set(_CROSS, 1, None)),
    ],
    "closed_form_rates": [
        _closed(rt_minu=_set(_RT_MINU, 0, 255.1)),     # one seed: r_minU(T) 3.8 % off ζ_R (< 3 % required)
        _closed(rt_maxfg=_set(_RT_MAXFG, 2, 214.0)),   # one seed: r_maxfg(T) below ζ_U = 216.2
        _closed(rt_maxfg=_set(_RT_MAXFG, 1, 262.4)),   # one seed: r_maxfg(T) not below r_maxfg(10) = 259.8 (no decline)
    ],
    "ruin_flips_order": [
        _ruin(maxfg=(-51.5, -50.2, -53.0)),            # order not flipped: max-fg's rate equals min-U's under ruin
        _ruin(maxfg=(-14.5, -41.1, -15.8)),            # one seed: max-fg ahead by only 9.1 (> 15 required)
    ],
    "fig1a_all_policies_budgets": [
        _budgets("1", "r10", **{"max-g": 261.0}),      # k = 1 early: max-g's r(10) above max-f's (Rawlsian not behind early)
        _budgets("5", "rT", **{"min-U": 1324.0}),      # k = 5 late: min-U's r(T) below max-fg's (Rawlsian not ahead late)
        _budgets("10", "rT", **{"min-U": 2706.0, "max-g": 2706.0, "max-f": 2706.0}),  # k = 10 late: all four tie at T
    ],
    "heterogeneity_long_vs_short": [
        _hetero(long=0.31, winrate_long=0.38),         # effect vanished: same share of min-U-winning cells at both horizons
        _hetero(long=0.18, winrate_long=0.29),         # reversed: fewer winning cells at the long horizon
    ],
}

# the passing dicts the counter-examples are built from (each check holds on these)
_PASSING = {"short_run_utilitarian_lead": _short(), "long_run_rawlsian_wins": _long(), "closed_form_rates": _closed(),
            "ruin_flips_order": _ruin(), "fig1a_all_policies_budgets": _budgets(), "heterogeneity_long_vs_short": _hetero()}
