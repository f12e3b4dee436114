"""TEAL: calibration, thresholds, hooks (TEAL / random / CATS), greedy allocation, sparse GEMV, HF path, the miniature."""
from __future__ import annotations

import json, math

import numpy as np
import pytest
import torch

import iclrbench.explorers.teal as teal_explorer
import iclrbench.papers.teal as teal

transformers = pytest.importorskip("transformers")
from iclrbench.blocks import hf
from iclrbench.views.static import static_view
from static_view_checks import assert_static_view


@pytest.fixture(scope="module")
def llama():
    torch.manual_seed(0)
    m = hf.tiny_random_model("llama", vocab_size=128, hidden_size=64, intermediate_size=172, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2)
    ids = torch.randint(0, 128, (8, 64), generator=torch.Generator().manual_seed(0))
    return m, ids, teal.calibrate(m, [ids[:4], ids[4:]])


def test_p0_is_identity_and_achieved_sparsity_matches_target(llama):
    m, ids, cal = llama
    ref = m(ids).logits
    with teal.ActivationSparsifier(m, teal.uniform_rules(cal, 0.0), mode="all"):
        assert torch.equal(m(ids).logits, ref)
    # one projection at a time (sparsifying upstream sites shifts downstream inputs): achieved = target on calibration data
    for p in (0.25, 0.65):
        for name in cal.n_params:
            with teal.ActivationSparsifier(m, {name: ("magnitude", cal.threshold(name, p))}, mode="all") as s:
                m(ids)
            assert abs(s.achieved()[name] - p) < 0.01, (p, name, s.achieved())
    with teal.ActivationSparsifier(m, teal.uniform_rules(cal, 0.5), mode="all") as s:
        m(ids)
    assert len(s.achieved()) == 14 and all(abs(v - 0.5) < 0.1 for v in s.achieved().values())


def test_hooked_output_equals_manual_masked_computation(llama):
    m, ids, cal = llama
    name = "model.layers.0.mlp.down_proj"
    t = cal.threshold(name, 0.5)
    mod = dict(m.named_modules())[name]
    seen = {}
    h = mod.register_forward_hook(lambda mm, a, out: seen.update(x=a[0].detach().clone(), y=out.detach().clone()))
    with teal.ActivationSparsifier(m, {name: ("magnitude", t)}, mode="all"):
        m(ids[:2])
    h.remove()
    x = seen["x"]                            # the hook saw the (already sparsified) input
    assert float((x == 0).float().mean()) == pytest.approx(0.5, abs=0.05)
    assert torch.allclose(seen["y"], x @ mod.weight.T, atol=1e-5)
    # and it is the dense input masked at |x| <= t
    h = mod.register_forward_hook(lambda mm, a, out: seen.update(xd=a[0].detach().clone()))
    m(ids[:2]); h.remove()
    assert torch.equal(seen["xd"] * (seen["xd"].abs() > t), x)


def test_modes_last_half_and_decode_only_with_generate(llama):
    m, ids, cal = llama
    ref = m(ids).logits
    with teal.ActivationSparsifier(m, teal.uniform_rules(cal, 0.5), mode="last_half"):
        out = m(ids).logits
    assert torch.allclose(out[:, :32], ref[:, :32], atol=1e-6) and not torch.allclose(out[:, 32:], ref[:, 32:])
    with teal.ActivationSparsifier(m, teal.uniform_rules(cal, 0.5), mode="decode_only") as s:
        assert torch.equal(m(ids).logits, ref)                              # prefill (T > 1) stays dense
        g = m.generate(ids[:1, :8], max_new_tokens=6, do_sample=False)       # KV cache: decode steps have T = 1
    assert g.shape == (1, 14) and s.achieved() and all(0.2 < v < 0.8 for v in s.achieved().values())


def test_random_and_cats_baselines(llama):
    m, ids, cal = llama
    with teal.ActivationSparsifier(m, teal.random_rules(cal, 0.4), mode="all", seed=1) as s:
        m(ids)
    assert all(abs(v - 0.4) < 0.02 for v in s.achieved().values())
    share = teal.cats_share(cal)
    n = {k: v for k, v in cal.n_params.items()}
    up_down = sum(v for k, v in n.items() if k.endswith(("up_proj", "down_proj")))
    assert share == pytest.approx(up_down / sum(n.values()))
    rules, p_int = teal.cats_rules(cal, 0.3)
    assert p_int == pytest.approx(0.3 / share)
    with teal.ActivationSparsifier(m, cats=rules, mode="all") as s:
        m(ids)
    assert all(abs(v - p_int) < 0.03 for v in s.achieved().values())
    assert teal.cats_rules(cal, share + 0.01)[0] is None                  # above the cap CATS cannot go


def test_histogram_threshold_matches_quantile_for_gaussian():
    x = torch.randn(400_000, generator=torch.Generator().manual_seed(0))
    for p in (0.25, 0.5, 0.65):
        t_h = teal.histogram_threshold(x, p)
        assert t_h == pytest.approx(float(x.abs().quantile(p)), rel=0.02)
        assert t_h == pytest.approx(math.sqrt(2) * float(torch.special.erfinv(torch.tensor(p))), rel=0.02)


def test_effective_sparsity_weights_by_parameters(llama):
    m, ids, cal = llama
    sps = {n: (0.8 if cal.sites[n] in ("k_proj", "v_proj") else 0.0) for n in cal.n_params}
    eff = teal.effective_sparsity(sps, cal.n_params)
    kv = sum(v for k, v in cal.n_params.items() if cal.sites[k] in ("k_proj", "v_proj"))
    assert eff == pytest.approx(0.8 * kv / sum(cal.n_params.values())) and eff < 0.1    # GQA k/v are small


def test_greedy_block_allocation_reaches_target_and_prefers_cheap_sites():
    model, cal, hidden0, names = _tiny_block()
    rows = teal.greedy_allocate_block(teal.model_block_fn(model, 0), hidden0, names, cal, model, base_step=0.1, target=0.5)
    assert rows[0]["effective"] == 0 and rows[-1]["effective"] >= 0.5
    assert all(b["effective"] > a["effective"] for a, b in zip(rows, rows[1:]))
    sps = teal.greedy_sparsities({0: rows}, 0.4)
    assert abs(teal.effective_sparsity(sps, cal.n_params) - 0.4) < 0.05


def _tiny_block():
    from iclrbench.blocks.lm import LMConfig, TinyLM
    torch.manual_seed(0)
    model = TinyLM(LMConfig(vocab_size=64, arch="llama", n_layer=1, n_head=2, d_model=32, d_ff=86, max_len=32)).eval()
    x = torch.randint(0, 64, (4, 32), generator=torch.Generator().manual_seed(1))
    cal = teal.calibrate(model, [x])
    with torch.no_grad():
        _, hidden = model(x, return_hidden=True)
    return model, cal, hidden[0], list(cal.n_params)


def test_greedy_error_is_the_official_norm_over_positions():
    "Issue 22: the block-output error is official `calculate_activation_error`: ‖·‖₂ over the last 25 % of positions (dim=1), mean over the rest."
    model, cal, h, names = _tiny_block()
    block = teal.model_block_fn(model, 0)
    for norm, dim in (("positions", 1), ("hidden", -1)):
        rows = teal.greedy_allocate_block(block, h, names, cal, model, base_step=0.1, target=0.3, error_norm=norm)
        start = int(h.shape[1] * (1 - 0.25))
        with torch.no_grad():
            dense = block(h)
            for row in rows[1:4]:
                with teal.ActivationSparsifier(model, teal.rules_from_sparsities(cal, row["sparsities"]), mode="all"):
                    new = block(h)
                ref = torch.norm(dense[:, start:] - new[:, start:], dim=dim).mean()       # official formula (dim=1)
                assert row["error"] == pytest.approx(float(ref), rel=1e-5)
                # the official 'Baseline Error': uniform allocation at the row's effective sparsity
                with teal.ActivationSparsifier(model, teal.uniform_rules(cal, row["effective"]), mode="all"):
                    uni = block(h)
                assert row["uniform_error"] == pytest.approx(float(torch.norm(dense[:, start:] - uni[:, start:], dim=dim).mean()), rel=1e-5)
    # the two norms are different quantities (positions: per hidden unit over 8 positions; hidden: per token over 32 units)
    a = teal.greedy_allocate_block(block, h, names, cal, model, base_step=0.1, target=0.3, error_norm="positions")[1]["error"]
    b = teal.greedy_allocate_block(block, h, names, cal, model, base_step=0.1, target=0.3, error_norm="hidden")[1]["error"]
    assert a != pytest.approx(b, rel=1e-3)
    with pytest.raises(ValueError, match="'error_norm'"):
        teal.greedy_allocate_block(block, h, names, cal, model, error_norm="tokens")


def test_greedy_check_requires_equal_achieved_sparsity():
    "Issue 22: greedy vs uniform is only a fair comparison at equal achieved effective sparsity."
    def m(greedy_ppl, greedy_ach, teal_ach=0.50):
        return {"ps": [0.5], "per_seed": [{"teal": [5.0], "greedy": [greedy_ppl], "greedy_effective": [0.5],
                                           "greedy_effective_achieved": [greedy_ach], "teal_effective_achieved": [teal_ach]}]}
    assert teal._check_greedy(m(4.9, 0.505))[0] is True
    assert teal._check_greedy(m(4.9, 0.505 - 0.03))[0] is False           # lower PPL bought with 2.5 points less sparsity
    assert teal._check_greedy(m(5.1, 0.50))[0] is False                   # equal sparsity, greedy worse
    no_ach = m(4.9, 0.5); del no_ach["per_seed"][0]["greedy_effective_achieved"]
    assert teal._check_greedy(no_ach)[0] is None                          # not recorded: not measured
    assert teal._check_greedy({"ps": [0.5], "per_seed": [{"teal": [5.0]}]})[0] is None   # greedy not run


def test_greedy_curves_record_achieved_effective_sparsity():
    "Both allocations' achieved effective sparsity is the parameter-weighted zeroed fraction the hooks count on the held-out positions."
    torch.manual_seed(0)
    from iclrbench.blocks.lm import LMConfig, TinyLM
    model = TinyLM(LMConfig(vocab_size=64, arch="llama", n_layer=2, n_head=2, d_model=32, d_ff=86, max_len=32)).eval()
    g = torch.Generator().manual_seed(3)
    xc, x = torch.randint(0, 64, (4, 32), generator=g), torch.randint(0, 64, (4, 32), generator=g)
    sm = teal.SeedModel(0, model, teal.calibrate(model, [xc]), xc, x, torch.randint(0, 64, (4, 32), generator=g), 0.0)
    out = teal.teal_experiment(sm, ps=(0.0, 0.5), greedy=True, base_step=0.1, site_groups=False)
    assert out["teal_effective_achieved"][0] == 0.0 and out["greedy_effective_achieved"][0] == 0.0
    for key in ("teal_effective_achieved", "greedy_effective_achieved"):
        assert 0.3 < out[key][1] < 0.7                                     # near the 50 % target (held-out drift allowed)
    assert abs(out["greedy_effective"][1] - 0.5) < 0.02                    # the table row closest to the target


def test_cats_check_is_not_measured_above_the_cap():
    "Issue 22: CATS above its cap is 'not measured' (None), not 'not held'."
    m = {"ps": [0.4], "cats_cap": 0.38, "per_seed": [{"teal": [4.7], "cats": [None]}, {"teal": [4.6], "cats": [4.9]}]}
    held, msg = teal._check_cats(m)
    assert held is None and "cap" in msg
    m["per_seed"][0]["cats"] = [4.9]; m["cats_cap"] = 0.45
    assert teal._check_cats(m)[0] is True
    m["per_seed"][1]["cats"] = [4.5]
    assert teal._check_cats(m)[0] is False


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 0.9])
def test_sparse_gemv_equals_dense_masked_product(p):
    g = torch.Generator().manual_seed(2)
    W = torch.randn(700, 300, generator=g)
    x = torch.randn(700, generator=g)
    t = float(x.abs().quantile(p)) if p else -1.0
    assert torch.allclose(teal.sparse_gemv(W, x, t), (x * (x.abs() > t)) @ W, atol=1e-4)
    lin = hf.tiny_random_model("gpt2").transformer.h[0].mlp.c_fc              # Conv1D: already input-major
    xx = torch.randn(64, generator=g)
    assert torch.allclose(teal.sparse_gemv(hf.input_major_weight(lin), xx, 0.5),
                          (xx * (xx.abs() > 0.5)) @ lin.weight, atol=1e-5)


def test_benchmark_runs_small():
    rows = teal.gemv_speed_benchmark(ps=(0.0, 0.5), threads=(1,), hidden=64, intermediate=128, kv_dim=16, n_blocks=1, steps=3, warmup=1)
    assert [r["p"] for r in rows] == [0.0, 0.5] and all(r["dense_ms"] > 0 and r["sparse_ms"] > 0 for r in rows)


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="'sparsity'"):
        teal.random_rules(None, 1.2)
    with pytest.raises(ValueError, match="'mode'"):
        teal.ActivationSparsifier(hf.tiny_random_model("llama"), mode="sometimes")
    with pytest.raises(ValueError, match="'d_model'"):
        teal.run("smoke", d_model=100)


@pytest.mark.slow
def test_claim_checks_can_fail_and_seeded():
    kw = dict(n_seeds=1, steps=20, n_eval=4, d_model=64, speed_blocks=0, progress=False)
    r, r2 = teal.run("smoke", **kw), teal.run("smoke", **kw)
    assert json.dumps(r.to_dict(False)["metrics"]) == json.dumps(r2.to_dict(False)["metrics"])
    # the docs' static view from the JSON round trip (no live model: nothing is retrained): p × projection type
    from iclrbench.core import Result
    ex = teal_explorer.explore(Result.from_dict(json.loads(json.dumps(r.to_dict()))))
    fig = static_view(ex)
    assert_static_view(fig)
    assert len(fig.layout.sliders[0].steps) == len(teal_explorer.TealExplorer.STATIC_GRID["hist_p"]) * 4
    assert not ex.errors and not ex._retrained
    bad = json.loads(json.dumps(r.to_dict(False)["metrics"]))
    for s in bad["per_seed"]:
        s["random"] = [2.0 * s["ppl_dense"]] * 5; s["teal"] = [1.9 * s["ppl_dense"]] * 5; s["cats"] = [v * 0.5 if v else v for v in s["teal"]]
        s["greedy"] = [v * 2 for v in s["teal"]]; s["greedy_effective"] = s["teal"]
        s["greedy_effective_achieved"] = list(s["teal_effective_achieved"])
    bad["gemv_max_abs_err"] = 0.1
    bad["speed"] = [dict(p=0.5, threads=1, dense_ms=1.0, sparse_ms=1.0, speedup=1.0, ideal=2.0)]
    bad["load_avg"] = 1.0
    for c in teal.CLAIMS:
        held, msg = c.check(bad)
        assert not held and msg, c.id



def test_speed_check_is_not_measured_without_the_benchmark_and_fails_without_its_rows():
    assert teal._check_speed({})[0] is None                                    # speed_blocks=0: nothing measured
    assert teal._check_speed({"speed": [dict(p=0.25, speedup=3.0)]})[0] is False   # ran, but no p = 0.5 rows


@pytest.mark.parametrize("p", [0.0, 0.37, 0.5, 0.9, 1.0])
def test_compiled_sparse_gemv_equals_embedding_bag_and_the_masked_dense_product(p):
    """The numba kernel reads only active rows (1, 2, 3 left over after groups of four) and gives x_masked @ W_T."""
    g = torch.Generator().manual_seed(3)
    W = torch.randn(203, 77, generator=g) * 0.02
    x = torch.randn(203, generator=g)
    t = float(x.abs().quantile(p)) if 0 < p < 1 else (-1.0 if p == 0 else float(x.abs().max()) + 1)
    dense = (x * (x.abs() > t)) @ W
    fast = teal.sparse_gemv(W, x, t, kernel="numba")
    ref = teal.sparse_gemv(W, x, t, kernel="embedding_bag")
    assert torch.allclose(fast, dense, atol=1e-6) and torch.allclose(ref, dense, atol=1e-6)
    assert torch.equal(teal.sparse_gemv(W, x, t), fast)                     # 'auto' takes the compiled kernel here


def test_sparse_gemv_falls_back_and_refuses_clearly():
    W, x = torch.randn(10, 4, dtype=torch.float64), torch.randn(10, dtype=torch.float64)
    assert torch.allclose(teal.sparse_gemv(W, x, 0.5), (x * (x.abs() > 0.5)) @ W)    # float64: embedding_bag
    with pytest.raises(ValueError, match="'numba'"):
        teal.sparse_gemv(W, x, 0.5, kernel="numba")
    with pytest.raises(ValueError, match="'kernel'"):
        teal.sparse_gemv(W.float(), x.float(), 0.5, kernel="triton")


def test_threaded_sparse_gemv_gives_the_one_thread_sums():
    """With more than one torch thread the compiled kernel splits the output into column slices on numba's threads;
    each output is the same sum in the same row order, so the result is identical to one thread's."""
    import torch
    from iclrbench.papers import teal
    if teal._gemv_active_rows is None: pytest.skip("numba is not installed")
    g = torch.Generator().manual_seed(0)
    W, x = torch.randn(512, 777, generator=g), torch.randn(512, generator=g)      # 777: slices of unequal width
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1); one = teal.sparse_gemv(W, x, threshold=0.5, kernel="numba")
        torch.set_num_threads(2); two = teal.sparse_gemv(W, x, threshold=0.5, kernel="numba")
    finally: torch.set_num_threads(before)
    assert torch.equal(one, two)
    masked = torch.where(x.abs() > 0.5, x, torch.zeros(()))
    assert torch.allclose(two, masked @ W, atol=1e-4)


def test_seeds_in_worker_processes_give_the_same_numbers():
    "`workers=2` trains and measures the seeds in two processes: the same metrics and models as one after another."
    import json
    from iclrbench.papers import teal
    tiny = dict(n_seeds=2, steps=30, n_eval=8)
    a = teal.run("smoke", seed=3, progress=False, workers=1, **tiny)
    b = teal.run("smoke", seed=3, progress=False, workers=2, **tiny)
    assert json.dumps(a.to_dict(False)["metrics"], sort_keys=True) == json.dumps(b.to_dict(False)["metrics"], sort_keys=True)
    assert sorted(b.objects["models"]) == [3, 4] and b.timings.get("seeds (parallel)", 0) > 0
    wa, wb = a.objects["models"][4].model.state_dict(), b.objects["models"][4].model.state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
