"""Counter-examples for dreamweaver's claim checks: metrics dicts built so that each check must say 'not held'."""
from counterexamples._build import case_builder, with_seed

_F = ("shape", "colour", "direction", "x", "y")
# A run (3 seeds) in which every gated claim holds: numbers of the shape a converged run would produce.
_BASE = {
    "direction_chance": [0.28, 0.27, 0.29],
    **{f"info_{f}_dreamweaver": v for f, v in zip(_F, ([0.97, 0.95, 0.96], [0.99, 0.98, 0.99], [0.93, 0.91, 0.94],
                                                      [0.95, 0.94, 0.96], [0.94, 0.95, 0.93]))},
    **{f"info_{f}_reconstruct": v for f, v in zip(_F, ([0.96, 0.94, 0.95], [0.99, 0.99, 0.98], [0.41, 0.38, 0.44],
                                                      [0.96, 0.95, 0.95], [0.95, 0.96, 0.94]))},
    **{f"info_{f}_monolithic": v for f, v in zip(_F, ([0.95, 0.94, 0.95], [0.99, 0.98, 0.98], [0.90, 0.89, 0.92],
                                                     [0.95, 0.93, 0.95], [0.94, 0.94, 0.92]))},
    "D_dreamweaver": [0.52, 0.48, 0.55], "D_monolithic": [0.21, 0.24, 0.19],
    "swap_success_dreamweaver": [0.81, 0.76, 0.84], "swap_changed_dreamweaver": [0.88, 0.85, 0.9],
    "swap_rollout_dreamweaver": [0.93, 0.9, 0.95],
}
_KEYS = {
    "dynamic-needs-future": ["info_direction_dreamweaver", "info_direction_reconstruct", "direction_chance"],
    "static-both": [f"info_{f}_{v}" for f in ("colour", "shape") for v in ("dreamweaver", "reconstruct")],
    "blocks-vs-monolithic": ["D_dreamweaver", "D_monolithic"] + [f"info_{f}_{v}" for f in _F for v in ("dreamweaver", "monolithic")],
    "imagination": [f"swap_{k}_dreamweaver" for k in ("success", "changed", "rollout")],
}
_case = case_builder(_BASE, _KEYS)


def _seed(key, i, v):
    "The passing per-seed list `key` with seed i set to v."
    return with_seed(_BASE[key], i, v)


COUNTEREXAMPLES: dict[str, list[dict]] = {
    "dynamic-needs-future": [
        # the mechanism vanished: the reconstruction-only model decodes direction as well as the multi-future one
        _case("dynamic-needs-future", info_direction_reconstruct=list(_BASE["info_direction_dreamweaver"])),
        # nothing learned: both at chance (the smoke run's failure mode)
        _case("dynamic-needs-future", info_direction_dreamweaver=[0.26, 0.27, 0.25], info_direction_reconstruct=[0.27, 0.26, 0.28]),
        # one seed's multi-future model below 0.85
        _case("dynamic-needs-future", info_direction_dreamweaver=_seed("info_direction_dreamweaver", 1, 0.83)),
        # one seed's gap 0.15 < 0.2
        _case("dynamic-needs-future", info_direction_reconstruct=_seed("info_direction_reconstruct", 2, 0.79)),
    ],
    "static-both": [
        # one seed's reconstruction model misses shape
        _case("static-both", info_shape_reconstruct=_seed("info_shape_reconstruct", 0, 0.62)),
        # one seed's multi-future model misses colour
        _case("static-both", info_colour_dreamweaver=_seed("info_colour_dreamweaver", 2, 0.71)),
        # nothing learned (the smoke run's numbers)
        _case("static-both", info_shape_dreamweaver=[0.51, 0.49, 0.50], info_colour_dreamweaver=[0.69, 0.70, 0.68],
              info_shape_reconstruct=[0.48, 0.50, 0.47], info_colour_reconstruct=[0.74, 0.72, 0.73]),
    ],
    "blocks-vs-monolithic": [
        # blocks no more disentangled than the monolithic slot
        _case("blocks-vs-monolithic", D_monolithic=list(_BASE["D_dreamweaver"])),
        # a margin of 0.05 < 0.1 on the mean
        _case("blocks-vs-monolithic", D_dreamweaver=[0.27, 0.29, 0.23]),
    ],
    "imagination": [
        # swapping the direction block does nothing to the decoded motion
        _case("imagination", swap_success_dreamweaver=[0.0, 0.0, 0.0], swap_changed_dreamweaver=[0.0, 0.0, 0.0]),
        # swaps change the motion at random (chance of hitting the donor's direction ≈ 1/3)
        _case("imagination", swap_success_dreamweaver=[0.34, 0.31, 0.36]),
    ],
}
