"""`import iclrbench` (and the CLI module) must stay light: no torch, no plotly, no paper modules."""
from __future__ import annotations

import subprocess, sys


def _modules_after(stmt: str) -> set[str]:
    code = f"import sys; {stmt}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_iclrbench_is_light():
    mods = _modules_after("import iclrbench, iclrbench.core, iclrbench.cli, iclrbench.settings, iclrbench.claims")
    heavy = {m for m in mods if m.split(".")[0] in ("torch", "plotly", "ipywidgets", "sklearn", "papermill", "pandas")}
    assert not heavy, f"importing iclrbench pulled in {sorted(heavy)[:10]}"
    assert not [m for m in mods if m.startswith("iclrbench.papers.")]


def test_paper_modules_import_without_torch_or_plotly():
    """`iclrbench list` imports every paper module; torch and scikit-learn (1–2 s each) load only where used."""
    from iclrbench.core import paper_slugs
    stmt = "; ".join(f"import iclrbench.papers.{s}" for s in paper_slugs())
    mods = _modules_after(stmt)
    heavy = {m.split(".")[0] for m in mods} & {"torch", "sklearn", "papermill"}
    assert not heavy, f"paper modules import {sorted(heavy)} at module level (each adds a second or more)"
