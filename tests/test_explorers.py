"""Every paper's explorer, built headless and driven from Python: every control moved across its range."""
from __future__ import annotations

import time

import ipywidgets as widgets
import pytest

from iclrbench.core import paper_slugs
from iclrbench.run.bench import control_values
from iclrbench.views.explorer import Explorer, figure_signature

from conftest import machine_slowness

# one xdist group per paper: every test that needs a paper's cached smoke result runs in the same worker
SLUGS = [pytest.param(s, marks=pytest.mark.xdist_group(s)) for s in paper_slugs()]


def _values(c: widgets.Widget) -> list:
    "Values that move a control across its whole range (the benchmarks move controls the same way)."
    return control_values(c)


def _latency(t0: float, c0: float) -> float:
    """Seconds an interaction cost: the smaller of wall time and this process's CPU time. Wall time alone grows when
    another xdist worker shares the 2 cores; CPU time alone grows when torch runs several threads. The smaller is
    what a reader on a quiet machine would wait, bounded either way."""
    return min(time.perf_counter() - t0, time.process_time() - c0)


# Interaction limits on the reference machine (2 cores, idle): a slider or dropdown answers within 2 s, a button
# (which may start a computation and says so in the status line) within 5 s.
SLIDER_LIMIT_S, BUTTON_LIMIT_S = 2.0, 5.0
def test_machine_slowness_is_measured():
    s = machine_slowness()
    print(f"machine slowness vs the reference: {s:.2f}x")
    assert 1.0 <= s < 50, "the reference workload ran implausibly slowly"


def _walk(w: widgets.Widget):
    "Every widget under `w` (its children, depth first)."
    yield w
    for c in getattr(w, "children", ()) or ():
        yield from _walk(c)


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_every_control_moves_the_figures_without_errors(slug, smoke_result):
    from iclrbench.core import load_paper
    mod = load_paper(slug)
    ex = mod.explore(smoke_result(slug))
    assert isinstance(ex, Explorer) and isinstance(ex, widgets.Widget)
    assert ex.errors == [], ex.errors
    assert ex.controls and ex.figures
    # an audio player without sound is an empty blob a browser refuses to load (a console error on the static page)
    empty = [w for w in _walk(ex) if isinstance(w, widgets.Audio) and not w.value]
    assert not empty, f"{slug}: {len(empty)} audio player(s) with no sound; build them only when there is audio"
    slow, slowness = [], machine_slowness()
    slider_limit, button_limit = SLIDER_LIMIT_S * slowness, BUTTON_LIMIT_S * slowness
    for name, c in ex.controls.items():
        if getattr(c, "disabled", False):
            continue
        before = {n: figure_signature(f) for n, f in ex.figures.items()}
        changed = False
        if isinstance(c, widgets.Button):
            t0, c0 = time.perf_counter(), time.process_time()
            c.click()
            dt = _latency(t0, c0)
            if dt > button_limit:
                slow.append((name, "click", round(dt, 2)))
            changed = any(figure_signature(f) != before[n] for n, f in ex.figures.items())
        else:
            values = _values(c)
            assert values, f"{slug}: no way to move control {name!r} ({type(c).__name__})"
            for v in values:
                t0, c0 = time.perf_counter(), time.process_time()
                c.value = v
                dt = _latency(t0, c0)
                if dt > slider_limit:
                    slow.append((name, v, round(dt, 2)))
                assert ex.errors == [], f"{slug}: control {name!r} = {v!r} raised:\n{ex.errors[-1]}"
                changed |= any(figure_signature(f) != before[n] for n, f in ex.figures.items())
        assert ex.errors == [], f"{slug}: control {name!r} raised:\n{ex.errors[-1]}"
        assert changed, f"{slug}: moving control {name!r} changed no figure"
    if slow:  # measure the machine again: it may have slowed down while the controls moved
        slowness = max(slowness, machine_slowness())
        slow = [s_ for s_ in slow if s_[2] > (BUTTON_LIMIT_S if s_[1] == "click" else SLIDER_LIMIT_S) * slowness]
    assert not slow, (f"{slug}: interactions slower than {SLIDER_LIMIT_S} s (slider) / {BUTTON_LIMIT_S} s (button) "
                      f"x machine slowness {slowness:.2f}: {slow}")


@pytest.mark.parametrize("slug", SLUGS)
def test_explorer_errors_are_visible(slug, smoke_result):
    """A callback that raises is recorded in `errors` and shown in the status line, not swallowed."""
    from iclrbench.core import load_paper
    ex = load_paper(slug).explore(smoke_result(slug))
    def broken(changed=None):
        raise RuntimeError("deliberately broken")
    ex.refresh = broken
    c = next(c for c in ex.controls.values() if not isinstance(c, widgets.Button) and _values(c))
    c.value = _values(c)[0]
    assert ex.errors and "deliberately broken" in ex.status.value
