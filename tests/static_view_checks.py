"""The checks every paper's `static_view(result)` must pass (shared by tests/test_site.py and the paper tests)."""
from __future__ import annotations

import json


def assert_static_view(fig) -> list:
    "The view's client-side controls exist, every step/button shows different data, the figure is small; returns the controls."
    controls = list(fig.layout.sliders or ()) + list(fig.layout.updatemenus or ())
    assert controls, "a static view offers sliders or buttons"
    args = [json.dumps(s.args, default=str) for c in controls for s in (getattr(c, "steps", None) or getattr(c, "buttons", None) or ())]
    assert len(args) >= 2 and len(set(args)) == len(args), "every step of a control shows something different"
    assert len(fig.to_json()) < 2_000_000, "a static view is a small precomputed grid"
    return controls
