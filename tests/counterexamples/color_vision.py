"""Counter-examples for color_vision's claim checks: metrics dicts built so that each check must say 'not held'."""
import copy
from counterexamples._build import case_builder, with_seed

# A passing full-scale run (seeds 0-2), numbers of the kind the notebook's section 13 reports.
_BASE = {
    "sv2_motion": [0.243, 0.256, 0.237], "sv2_no_motion": [0.0024, 0.0027, 0.0023],
    "dims_no_motion": [1, 1, 1], "sv_no_motion": [[1.0, 0.0024, 0.0021], [1.0, 0.0027, 0.0017], [1.0, 0.0023, 0.0019]],
    "probe_r2_motion": [[0.93, 0.91, 0.87], [0.94, 0.92, 0.88], [0.92, 0.90, 0.86]],
    "probe_r2_no_motion": [[0.71, 0.66, 0.41], [0.70, 0.64, 0.43], [0.72, 0.65, 0.40]],
    "dims_N1": [1, 1, 1], "sv_N1": [[1.0], [1.0], [1.0]], "dims_all_cells_N1": [1, 1, 1],
    "dims_N2": [2, 2, 2], "sv_N2": [[1.0, 0.247], [1.0, 0.249], [1.0, 0.236]], "dims_all_cells_N2": [2, 2, 2],
    "dims_N3": [3, 3, 3], "sv_N3": [[1.0, 0.243, 0.114], [1.0, 0.256, 0.140], [1.0, 0.237, 0.115]], "dims_all_cells_N3": [3, 3, 3],
    "dims_N4": [4, 4, 4], "sv_N4": [[1.0, 0.247, 0.171, 0.061], [1.0, 0.242, 0.168, 0.052], [1.0, 0.243, 0.174, 0.042]],
    "dims_all_cells_N4": [4, 3, 3],
    "boost_dims_before": [3, 3, 3], "boost_dims_at_switch": [3, 3, 3], "boost_dims_after": [4, 4, 4], "boost_steps": 1500,
    "boost_sv_after": [[1.0, 0.251, 0.175, 0.052], [1.0, 0.257, 0.188, 0.047], [1.0, 0.245, 0.179, 0.044]],
    "boost_dims_all_cells_after": [4, 3, 3],
    "boost_eye_sv": [[1.0, 0.412, 0.153, 0.061], [1.0, 0.409, 0.151, 0.060], [1.0, 0.415, 0.152, 0.062]],
}
_N = [f"{k}_N{n}" for n in (1, 2, 3, 4) for k in ("dims", "sv", "dims_all_cells")]
_KEYS = {
    "motion-makes-colour": ["sv2_motion", "sv2_no_motion"],
    "no-motion-colour-blind": ["dims_no_motion", "sv_no_motion"],
    "percept-carries-colour": ["probe_r2_motion", "probe_r2_no_motion"],
    "dims-track-cone-count": _N,
    "dimensionality-boosting": ["boost_dims_before", "boost_dims_at_switch", "boost_dims_after", "boost_steps",
                                "boost_sv_after", "boost_dims_all_cells_after", "boost_eye_sv"],
}


_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "motion-makes-colour": [
        # eye motion no longer matters: the motion run is as colour-blind as the control (every seed)
        _case("motion-makes-colour", sv2_motion=[0.0025, 0.0026, 0.0022]),
        # ≥ 0.10 only, one seed: 2nd sv 0.08 (still ≥ 5x the control's 0.0027)
        _case("motion-makes-colour", sv2_motion=_seed("sv2_motion", 1, 0.081)),
        # ≥ 5x the control only, one seed: the control reaches 0.06, so 0.256 < 0.30 (still ≥ 0.10)
        _case("motion-makes-colour", sv2_no_motion=_seed("sv2_no_motion", 1, 0.060)),
    ],
    "no-motion-colour-blind": [
        # one seed's control gains a second dimension (2nd sv 0.051 ≥ 0.04)
        _case("no-motion-colour-blind", dims_no_motion=[1, 2, 1],
              sv_no_motion=_seed("sv_no_motion", 1, [1.0, 0.051, 0.0019])),
        # the control behaves like the motion run: 3 dimensions on every seed
        _case("no-motion-colour-blind", dims_no_motion=[3, 3, 3],
              sv_no_motion=[[1.0, 0.243, 0.114], [1.0, 0.256, 0.140], [1.0, 0.237, 0.115]]),
    ],
    "percept-carries-colour": [
        # one cone type (S) on one seed no better with motion than without
        _case("percept-carries-colour", probe_r2_motion=_seed("probe_r2_motion", 2, [0.92, 0.90, 0.40])),
        # eye motion no longer matters: the probe gives the same R² with and without motion
        _case("percept-carries-colour", probe_r2_motion=copy.deepcopy(_BASE["probe_r2_no_motion"])),
    ],
    "dims-track-cone-count": [
        # N = 1 can only fail if the type-mean identity vector is zero (sv [0]); dims ≤ N always, so this is the only way
        _case("dims-track-cone-count", dims_N1=[1, 0, 1], sv_N1=[[1.0], [0.0], [1.0]], dims_all_cells_N1=[1, 0, 1]),
        # N = 2 only: one seed stays 1-dimensional (2nd sv 0.031)
        _case("dims-track-cone-count", dims_N2=[2, 1, 2], sv_N2=_seed("sv_N2", 1, [1.0, 0.031]), dims_all_cells_N2=[2, 1, 2]),
        # N = 3 only: one seed's third dimension still forming (3rd sv 0.033)
        _case("dims-track-cone-count", dims_N3=[3, 3, 2], sv_N3=_seed("sv_N3", 2, [1.0, 0.237, 0.033]),
              dims_all_cells_N3=[3, 3, 2]),
        # N = 4 only: 2 of 3 seeds stay trichromatic (one alone is tolerated by the check)
        _case("dims-track-cone-count", dims_N4=[4, 3, 3],
              sv_N4=[[1.0, 0.247, 0.171, 0.061], [1.0, 0.242, 0.168, 0.029], [1.0, 0.243, 0.174, 0.021]],
              dims_all_cells_N4=[4, 3, 3]),
    ],
    "dimensionality-boosting": [
        # boosting has no effect: still 3 after continued training on every seed (4th sv 0.018-0.028)
        _case("dimensionality-boosting", boost_dims_after=[3, 3, 3], boost_dims_all_cells_after=[3, 3, 3],
              boost_sv_after=[[1.0, 0.251, 0.175, 0.018], [1.0, 0.257, 0.188, 0.028], [1.0, 0.245, 0.179, 0.025]]),
        # "after = 4" only: 2 of 3 seeds stay at 3
        _case("dimensionality-boosting", boost_dims_after=[4, 3, 3], boost_dims_all_cells_after=[4, 3, 3],
              boost_sv_after=[[1.0, 0.251, 0.175, 0.052], [1.0, 0.257, 0.188, 0.031], [1.0, 0.245, 0.179, 0.027]]),
        # "before = 3" only: on 2 of 3 seeds the trichromat had not reached 3 dimensions before the switch
        _case("dimensionality-boosting", boost_dims_before=[3, 2, 2], boost_dims_at_switch=[3, 2, 2]),
    ],
}
