"""Helpers the counter-example files share: each builds its dicts from one passing run and breaks one thing at a time."""
from __future__ import annotations

import copy
from typing import Any, Callable, Mapping, Sequence


def case_builder(base: Mapping[str, Any], keys: Mapping[str, Sequence[str]]) -> Callable[..., dict]:
    """`case(claim, **changes)`: the passing run's values of the keys `claim`'s check reads, with `changes` applied."""
    def case(claim: str, **changes) -> dict:
        d = {k: copy.deepcopy(base[k]) for k in keys[claim]}
        d.update(changes)
        return d
    return case


def with_seed(values: Sequence[Any], i: int, value: Any) -> list:
    "A copy of the per-seed list `values` with seed i's value replaced by `value`."
    out = copy.deepcopy(list(values))
    out[i] = value
    return out
