"""Patch-level training: patch inputs, bag-of-next-patch loss, HF path, FLOP accounting, runs."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import iclrbench.explorers.patch_level_training as ple
import iclrbench.papers.patch_level_training as plt
from iclrbench.blocks.lm import LMConfig, TinyLM, token_losses
from iclrbench.views.static import static_view
from static_view_checks import assert_static_view


def _tiny():
    torch.manual_seed(0)
    return TinyLM(LMConfig(vocab_size=60, arch="gpt", n_layer=1, n_head=2, d_model=16, max_len=16))


def test_k1_is_next_token_prediction_and_k4_matches_hand_computation():
    m = _tiny()
    ids = torch.randint(0, 60, (2, 16), generator=torch.Generator().manual_seed(1))
    assert torch.allclose(plt.patch_loss(m, ids, 1), token_losses(m, ids[:, :-1], ids[:, 1:]), atol=1e-5)
    K = 4
    e = torch.stack([m.tok_emb(ids[:, p * K:(p + 1) * K]).mean(1) for p in range(4)], 1)
    logits = m.forward_embeddings(e)
    hand = torch.zeros(2)
    for b in range(2):
        terms = [-torch.log_softmax(logits[b, p], -1)[ids[b, (p + 1) * K + k]] for p in range(3) for k in range(K)]
        hand[b] = torch.stack(terms).mean()
    assert torch.allclose(plt.patch_loss(m, ids, K), hand, atol=1e-5)
    # the bag is unordered: permuting tokens inside each target patch leaves the loss unchanged
    perm = ids.clone().view(2, 4, 4)[:, :, [3, 1, 0, 2]].reshape(2, 16)
    perm[:, :4] = ids[:, :4]
    lg_same = plt.bag_of_next_patch_nll(logits, perm, K)
    assert torch.allclose(lg_same, hand, atol=1e-5)


def test_indivisible_length_raises_and_gradients_reach_the_embedding():
    m = _tiny()
    with pytest.raises(ValueError, match="divisible"):
        plt.patch_loss(m, torch.zeros(2, 15, dtype=torch.long), 4)
    with pytest.raises(ValueError, match="'K'"):
        plt.relative_cost(0, 0.5)
    ids = torch.randint(0, 60, (2, 16))
    plt.patch_loss(m, ids, 4).mean().backward()
    g = m.tok_emb.weight.grad
    assert g is not None and g[ids.unique()].abs().sum() > 0


def test_hf_patch_loss_on_tiny_llama():
    pytest.importorskip("transformers")
    from iclrbench.blocks.hf import tiny_random_model
    m = tiny_random_model("llama", hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=4)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(3))
    assert plt.patch_causal_lm_loss(m, ids, 1).item() == pytest.approx(m(input_ids=ids, labels=ids).loss.item(), rel=1e-5)
    K = 4
    e = m.get_input_embeddings()(ids).view(2, 4, 4, -1).mean(2)
    logits = m(inputs_embeds=e, position_ids=torch.arange(4)[None].expand(2, -1)).logits
    hand = torch.stack([-torch.log_softmax(logits[b, p], -1)[ids[b, (p + 1) * K + k]] for b in range(2) for p in range(3)
                        for k in range(K)]).mean()
    assert plt.patch_causal_lm_loss(m, ids, K).item() == pytest.approx(hand.item(), rel=1e-5)
    keys = {k: v.shape for k, v in m.state_dict().items()}
    plt.patch_causal_lm_loss(m, ids, K).backward()
    assert {k: v.shape for k, v in m.state_dict().items()} == keys        # switching K keeps every parameter
    assert m.get_input_embeddings().weight.grad is not None


def test_plan_and_flops_are_exact():
    plan = plt.plan_steps(300, 4, 2 / 3)
    assert plan == {"a": (0, 300), "b": (0, 150), "c": (50, 100), "d": (0, 100)}
    assert plt.relative_cost(4, 2 / 3) == pytest.approx(0.5) and plt.relative_cost(1, 0.7) == 1.0


def test_fresh_stream_never_repeats_and_repeated_corpus_does():
    src = plt.BigramSource()
    assert 2.0 < src.entropy < 4.5 and np.allclose(src.P.sum(1), 1)
    fresh = plt.make_data("fresh", src, 0)
    a, b = fresh(8, 32), fresh(8, 32)
    assert not torch.equal(a, b)
    rep = plt.make_data("repeated", src, 0, corpus_tokens=1024)
    seen = torch.cat([rep(8, 32).reshape(-1) for _ in range(50)])
    assert len(np.unique(seen.numpy())) <= 1024
    with pytest.raises(ValueError, match="'regime'"):
        plt.make_data("both", src, 0)


def test_train_run_reports_flops_and_switch():
    src = plt.BigramSource()
    cfg = LMConfig(vocab_size=src.V, arch="gpt", n_layer=1, n_head=2, d_model=16, max_len=8)
    ev = torch.from_numpy(src.sample(8, 9, np.random.default_rng(0)))
    o = plt.train_run(cfg, plt.make_data("fresh", src, 0), 6, 3, K=4, batch=4, eval_x=ev, eval_every=3)
    from iclrbench.blocks.lm import flops_per_token
    assert o["flops"] == pytest.approx(9 * flops_per_token(cfg, 8) * 4 * 8)
    assert o["switch_flops"] == pytest.approx(3 * flops_per_token(cfg, 8) * 4 * 8)
    assert o["tokens"] == 3 * 4 * 4 * 8 + 6 * 4 * 8


@pytest.mark.slow
def test_same_seed_same_numbers_and_checks_can_fail():
    kw = dict(n_seeds=1, token_steps=24, d_model=32, contrast_seeds=0, progress=False)
    r, r2 = plt.run("smoke", **kw), plt.run("smoke", **kw)
    assert json.dumps(r.to_dict(False)["metrics"]) == json.dumps(r2.to_dict(False)["metrics"])
    # the docs' static view, generated from the explorer from the JSON round trip (one seed, no contrast: the slider
    # steps over K only)
    from iclrbench.core import Result
    ex = ple.explore(Result.from_dict(json.loads(json.dumps(r.to_dict()))))
    assert ex.STATIC_GRID == {"regime": ["fresh"], "K": [1, 2, 4, 8]}
    fig = static_view(ex)
    assert_static_view(fig)
    assert len(fig.layout.sliders[0].steps) == 4 and not ex.errors
    bad = dict(r.metrics)
    bad["fresh_flops_c"] = bad["fresh_flops_a"]
    bad["fresh_loss_c"] = [v + 1 for v in bad["fresh_loss_a"] + bad["fresh_loss_b"]]
    bad["fresh_loss_b"] = bad["fresh_loss_a"]
    for c in plt.CLAIMS:
        held, msg = c.check(bad)
        assert not held and msg, c.id
    assert plt.CLAIMS[0].check(r.metrics)[0]

