"""Notebooks are the source of truth: exporting and cleaning them on a clean checkout changes nothing."""
from __future__ import annotations

import json, shutil, subprocess, sys
from pathlib import Path

import pytest

from iclrbench.site.readme import render_readme

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    exe = BIN / name
    return str(exe) if exe.exists() else (shutil.which(name) or pytest.skip(f"{name} not installed"))


def _checkout_copy(tmp: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.split(b"\0")
    dst = tmp / "repo"
    for f in filter(None, files):
        src = ROOT / f.decode()
        if src.is_file():
            (dst / f.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f.decode())
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q", "."], cwd=dst, check=True)
    subprocess.run(git + ["add", "-A"], cwd=dst, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=dst, check=True)
    return dst


@pytest.mark.slow
def test_nbdev_export_and_clean_change_nothing(tmp_path):
    repo = _checkout_copy(tmp_path)
    for cmd in ("nbdev-export", "nbdev-clean"):
        out = subprocess.run([_tool(cmd)], cwd=repo, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert status == "", f"nbdev-export / nbdev-clean changed files (edit the notebooks, then `make sync`):\n{status}"


def test_card_index_is_current():
    """`iclrbench/papers/_cards.json` is what `make sync` writes from the paper modules (run it after editing a card)."""
    from iclrbench.core.registry import CARD_INDEX, build_card_index
    from iclrbench.core.records import to_jsonable
    stored = json.loads(CARD_INDEX.read_text())
    fresh = json.loads(json.dumps(to_jsonable(build_card_index())))
    assert sorted(stored) == sorted(fresh), "papers added or removed: run `make sync`"
    for slug in fresh:
        assert stored[slug] == fresh[slug], f"the card index entry of {slug} is stale: run `make sync`"


def test_readme_is_generated_from_index_notebook():
    expected = render_readme(ROOT / "nbs" / "index.ipynb", None)
    assert (ROOT / "README.md").read_text() == expected, "README.md is stale: run `make readme`"
    first_code = expected.split("```bash", 1)[1].split("```", 1)[0]
    assert "make reproduce" in first_code and "make test" in first_code


NOTEBOOKS = sorted((ROOT / "nbs").rglob("*.ipynb"))


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_notebooks_are_clean(nb_path):
    nb = json.loads(nb_path.read_text())
    assert nb["metadata"].get("kernelspec", {}).get("name") == "python3"
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert c.get("outputs") == [] and c.get("execution_count") is None, "outputs saved in git: run `make clean-nbs` (strips outputs, then nbdev-clean)"


PAPER_NBS = sorted((ROOT / "nbs" / "papers").glob("*.ipynb"))


@pytest.mark.parametrize("nb_path", PAPER_NBS, ids=[p.stem for p in PAPER_NBS])
def test_paper_notebooks_keep_the_contract(nb_path):
    nb = json.loads(nb_path.read_text())
    srcs = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert any(f"#| default_exp papers.{nb_path.stem}" in s for s in srcs)
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    joined = "\n".join(srcs)
    for needed in ("publish_result(result)", "explore(", "claims_verdict(result)"):
        assert needed in joined, f"the notebook never calls {needed}"
    assert (ROOT / "iclrbench" / "papers" / f"{nb_path.stem}.py").exists()


def test_clean_on_save_hook_and_make_clean_nbs_strip_outputs(tmp_path):
    """The pre-save hook `make lab` installs strips outputs of notebooks under nbs/ and keeps the parameters tag."""
    import jupyter_server.services.contents.filemanager as fm
    from iclrbench.site.hygiene import clean_on_save, strip_outputs
    nb = json.loads((ROOT / "nbs" / "papers" / "mixmax.ipynb").read_text())
    for c in nb["cells"]:
        if c["cell_type"] == "code": c["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x"}]; c["execution_count"] = 1
    root = tmp_path / "nbs" / "papers"; root.mkdir(parents=True)
    mgr = fm.FileContentsManager(root_dir=str(tmp_path), pre_save_hook="iclrbench.site.hygiene.clean_on_save")
    mgr.save({"type": "notebook", "format": "json", "content": json.loads(json.dumps(nb))}, "nbs/papers/mixmax.ipynb")
    saved = json.loads((root / "mixmax.ipynb").read_text())
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in saved["cells"] if c["cell_type"] == "code")
    assert any("parameters" in c.get("metadata", {}).get("tags", []) for c in saved["cells"])
    dirty = tmp_path / "dirty.ipynb"; dirty.write_text(json.dumps(nb))
    assert strip_outputs([dirty]) == [dirty] and strip_outputs([dirty]) == []
