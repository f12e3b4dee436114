"""Every paper that computes with torch runs on the device its `device` parameter names (issue 23).

The harness makes that device torch's default device while the paper's code runs (`on_device`), so factories and new
modules land there without any plumbing. Three things escape a default device, and a static lint finds them in every
paper module and shared block: `torch.from_numpy` (always on the CPU), `tensor.numpy()` without `.cpu()` (fails on a
GPU tensor), and `torch.Generator()` without a device (a CPU generator cannot sample on a GPU). A line may opt out
with a `# device: ok` comment saying why. CI has no GPU: the CUDA path itself is checked by
`scripts/gpu_check.sh` on a GPU machine."""
from __future__ import annotations

import ast, importlib.util, re
from pathlib import Path

import pytest

from iclrbench.core import load_paper, paper_slugs
from iclrbench.core.runtime import default_device, on_device, to_numpy, torch_generator

ROOT = Path(__file__).resolve().parents[1]
CHOICES = ("cpu", "cuda", "mps", "auto")


def _uses_torch(slug: str) -> bool:
    src = (ROOT / "iclrbench" / "papers" / f"{slug}.py").read_text()
    return bool(re.search(r"^\s*(import torch|from torch)", src, re.M))


TORCH_SLUGS = [s for s in paper_slugs() if _uses_torch(s)]


def device_lint(path: Path) -> list[str]:
    "Lines of `path` that would break under a non-CPU default device."
    src = path.read_text()
    lines, found = src.splitlines(), []
    for i, line in enumerate(lines, 1):
        if "device: ok" in line: continue
        if "torch.from_numpy(" in line: found.append(f"{path.name}:{i}: torch.from_numpy (use torch.as_tensor)")
        for m in re.finditer(r"\.numpy\(\)", line):      # .cpu() right before, or before a chain like .double()
            if not re.search(r"\.cpu\(\)(\.\w+\([^()]*\))*$", line[:m.start()]):
                found.append(f"{path.name}:{i}: .numpy() without .cpu()")
    for node in ast.walk(ast.parse(src)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Generator"
                and not any(k.arg == "device" for k in node.keywords) and "device: ok" not in lines[node.lineno - 1]):
            found.append(f"{path.name}:{node.lineno}: torch.Generator() without device=")
    return found


@pytest.mark.parametrize("slug", TORCH_SLUGS)
def test_torch_paper_declares_device(slug):
    mod = load_paper(slug)
    p = {q.name: q for q in mod.PARAMS}.get("device")
    assert p is not None, f"{slug} computes with torch but has no 'device' parameter"
    assert p.kind == "str" and tuple(p.choices) == CHOICES
    for scale, preset in mod.SCALES.items():                  # the claims table is checked on the CPU, bit for bit
        if scale == "paper":                                  # meant for one GPU: it may take one where there is one
            assert preset.get("device") in ("cpu", "auto"), f"{slug}: scale 'paper' must default to device 'cpu' or 'auto'"
        else: assert preset.get("device") == "cpu", f"{slug}: scale {scale!r} must default to device='cpu'"


@pytest.mark.parametrize("slug", TORCH_SLUGS)
def test_torch_paper_is_free_of_device_traps(slug):
    assert device_lint(ROOT / "iclrbench" / "papers" / f"{slug}.py") == []


def test_blocks_are_free_of_device_traps():
    found = [f for path in sorted((ROOT / "iclrbench" / "blocks").glob("*.py")) for f in device_lint(path)]
    assert found == []


def test_lint_finds_each_trap(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch\nx = torch.from_numpy(a)\ny = t.numpy()\nz = t.cpu().numpy()\n"
                 "g = torch.Generator().manual_seed(0)\nh = torch.Generator(device=d)\nw = t.numpy()  # device: ok\n")
    assert [s.split(": ", 1)[1] for s in device_lint(f)] == [
        "torch.from_numpy (use torch.as_tensor)", ".numpy() without .cpu()", "torch.Generator() without device="]


def test_missing_gpu_is_a_clear_error_before_work():
    import torch
    if torch.cuda.is_available(): pytest.skip("a GPU is present")
    mod = load_paper(TORCH_SLUGS[0])
    with pytest.raises(ValueError, match="no CUDA device is available"):
        mod.run("smoke", seed=0, device="cuda")


def test_on_device_sets_and_restores_the_default_device():
    import torch
    with on_device("meta"):
        assert torch.zeros(2).device.type == "meta" and torch.nn.Linear(2, 2).weight.device.type == "meta"
    assert default_device().type == "cpu"
    with on_device("cpu"): assert torch.ones(1).device.type == "cpu"
    assert torch.rand(3, generator=torch_generator(4)).tolist() == torch.rand(3, generator=torch_generator(4)).tolist()
    assert to_numpy(torch.arange(3)).tolist() == [0, 1, 2]


def test_harness_runs_the_paper_under_its_device():
    "The paper's per-seed code sees its device as torch's default device; 'auto' on a CPU-only machine is the CPU."
    import torch
    from iclrbench.core import Claim, Paper, Param
    from iclrbench.core.experiment import experiment
    seen = []
    paper = Paper(slug="devtoy", title="t", authors="a", summary="s")
    params = [Param("device", "str", "torch device", choices=CHOICES)]
    claims = [Claim("c", "always", "-", "x", check=lambda m: (True, "ok"), scales=("smoke",))]

    def one_seed(p, seed, ctx):
        seen.append((torch.zeros(1).device.type, ctx.device.type))
        return {"x": 1.0}
    run = experiment(paper, params, {"smoke": dict(device="cpu"), "full": dict(device="cpu")}, claims, per_seed=one_seed)
    run("smoke", progress=False)
    run("smoke", progress=False, device="auto")
    expect = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert seen == [("cpu", "cpu"), (expect, expect)]
