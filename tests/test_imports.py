"""`import iclrbench`, the CLI and `iclrbench list` stay light (no torch, scikit-learn, plotly, no paper module), and the
package has no import cycle."""
from __future__ import annotations

import ast, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "plotly", "ipywidgets", "sklearn", "papermill", "pandas")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return set(out.stdout.split())


def test_import_iclrbench_is_light():
    mods = _modules_after("import iclrbench, iclrbench.core, iclrbench.run.cli, iclrbench.core.settings, iclrbench.run.claims")
    heavy = {m for m in mods if m.split(".")[0] in HEAVY}
    assert not heavy, f"importing iclrbench pulled in {sorted(heavy)[:10]}"
    assert not [m for m in mods if m.startswith("iclrbench.papers.")]


def test_iclrbench_list_reads_the_card_index_only():
    """`iclrbench list` prints every paper from the card index without importing a paper module or a heavy library."""
    code = "import contextlib, io\nfrom iclrbench.run.cli import main\nwith contextlib.redirect_stdout(io.StringIO()) as buf: main(['list'])\nassert 'mixmax' in buf.getvalue()"
    mods = _modules_after(code)
    assert not {m for m in mods if m.split(".")[0] in HEAVY}, "iclrbench list imported a heavy library"
    assert not [m for m in mods if m.startswith("iclrbench.papers.") or m.startswith("iclrbench.explorers.")]


def _module_level_imports(path: Path, package: str) -> set[str]:
    "iclrbench modules that `path` imports at module level (function-local imports are lazy, not part of the graph)."
    tree, out = ast.parse(path.read_text()), set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("iclrbench")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("iclrbench"):
                out.add(mod)
                out |= {f"{mod}.{a.name}" for a in node.names}   # `from pkg import module`
    return out


def test_no_import_cycle():
    """The module-level import graph of iclrbench is acyclic (a package's __init__ counts as the package)."""
    files = {}
    for f in (ROOT / "iclrbench").rglob("*.py"):
        rel = f.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        files[name] = f
    graph = {}
    for name, f in files.items():
        package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        graph[name] = {m for m in _module_level_imports(f, package) if m in files and m != name}
    # a module imports its parent packages too (Python runs their __init__ first)
    for name in files:
        parts = name.split(".")
        graph[name] |= {".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in files} - {name}
    seen, stack, cycle = {}, [], []
    def visit(n):
        seen[n] = "open"; stack.append(n)
        for m in sorted(graph[n]):
            if m.startswith(n + "."): continue   # a package importing its own submodules is not a cycle
            if seen.get(m) == "open":
                cycle.extend(stack[stack.index(m):] + [m]); return True
            if m not in seen and visit(m): return True
        seen[n] = "done"; stack.pop(); return False
    for n in sorted(graph):
        if n not in seen and visit(n): break
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_package_sources_compile_without_warnings():
    """No invalid escape sequences and the like: nbdev copies notebook summaries into docstrings (the package's
    `__init__` docstring is not a raw string), so a LaTeX backslash there would warn on every import."""
    import warnings
    from pathlib import Path
    import iclrbench
    for path in sorted(Path(iclrbench.__file__).parent.rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
