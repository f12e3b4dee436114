"""The shared DPO core: loss values, gradients, masks, and a preference loop on a tiny random HF model."""
from __future__ import annotations

import math

import pytest
import torch

from iclrbench.blocks.preference import completion_logprobs, dpo_loss, ipo_loss, pack_pairs, train_preferences


def test_dpo_loss_values_and_rewards():
    z = torch.zeros(3)
    l, rw, rl = dpo_loss(z, z, z, z, beta=0.1)
    assert torch.allclose(l, torch.full((3,), math.log(2)))
    pw, pl, rw_, rl_ = torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]), torch.tensor([-2.5])
    l, cr, rr = dpo_loss(pw, pl, rw_, rl_, beta=0.5)
    m = (-1 + 2) - (-3 + 2.5)
    assert l.item() == pytest.approx(-math.log(1 / (1 + math.exp(-0.5 * m))))
    assert cr.item() == pytest.approx(0.5) and rr.item() == pytest.approx(-0.25)
    # reference-free drops the reference terms; label smoothing mixes the flipped label
    assert dpo_loss(pw, pl, beta=1.0, reference_free=True)[0].item() == pytest.approx(math.log1p(math.exp(-2.0)))
    ls = dpo_loss(pw, pl, rw_, rl_, beta=0.5, label_smoothing=0.2)[0].item()
    assert ls == pytest.approx(0.8 * math.log1p(math.exp(-0.5 * m)) + 0.2 * math.log1p(math.exp(0.5 * m)))
    assert ipo_loss(pw, pl, rw_, rl_, beta=0.5).item() == pytest.approx((m - 1.0) ** 2)


def test_dpo_gradient_matches_finite_differences():
    torch.manual_seed(0)
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    beta = torch.rand(6, dtype=torch.float64) + 0.1
    f = lambda x: dpo_loss(x[0], x[1], x[2], x[3], beta=beta, reduction="mean")[0]
    assert torch.autograd.gradcheck(f, (x,))


def test_bad_arguments_raise():
    z = torch.zeros(2)
    with pytest.raises(ValueError, match="'beta'"): dpo_loss(z, z, z, z, beta=0.0)
    with pytest.raises(ValueError, match="'beta'"): dpo_loss(z, z, z, z, beta=torch.tensor([0.1, -1.0]))
    with pytest.raises(ValueError, match="'label_smoothing'"): dpo_loss(z, z, z, z, label_smoothing=0.7)
    with pytest.raises(ValueError, match="'ref_chosen'"): dpo_loss(z, z)
    with pytest.raises(ValueError, match="'completions'"): pack_pairs([[1]], [[2], [3]])


def _tiny_llama(vocab=32, seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                      intermediate_size=64, max_position_embeddings=64, pad_token_id=0)
    return LlamaForCausalLM(cfg).eval()


def test_completion_logprobs_mask_prompt_and_padding_on_tiny_hf_model():
    model = _tiny_llama()
    prompts, comps = [[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14, 15]]
    ids, att, cm = pack_pairs(prompts, comps, pad_id=0)
    lp = completion_logprobs(model, ids, cm, att)
    # reference: each row alone, unpadded, summed over its completion tokens
    for i, (p, c) in enumerate(zip(prompts, comps)):
        x = torch.tensor([p + c])
        with torch.no_grad():
            logits = model(input_ids=x).logits[0, :-1].log_softmax(-1)
        want = sum(logits[t - 1, x[0, t]].item() for t in range(len(p), len(p) + len(c)))
        assert lp[i].item() == pytest.approx(want, abs=1e-4)
    # left padding gives the same numbers (position ids skip the padding)
    ids2, att2, cm2 = pack_pairs(prompts, comps, pad_id=0, left_pad=True)
    assert torch.allclose(completion_logprobs(model, ids2, cm2, att2), lp, atol=1e-4)
    # changing a (right-)padding token does not change the result
    assert att[0, -1] == 0
    ids3 = ids.clone(); ids3[0, -1] = 3
    assert torch.allclose(completion_logprobs(model, ids3, cm, att), lp, atol=1e-5)


def test_dpo_training_raises_chosen_over_rejected_on_tiny_hf_model():
    import copy
    policy = _tiny_llama(seed=1)
    reference = copy.deepcopy(policy)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 32, (3,), generator=g).tolist() for _ in range(16)]
    good = [[20, 21]] * 16
    bad = [[22, 23]] * 16
    ch = pack_pairs(prompts, good); rj = pack_pairs(prompts, bad)
    with torch.no_grad():
        before = (completion_logprobs(policy, ch[0], ch[2], ch[1]) - completion_logprobs(policy, rj[0], rj[2], rj[1])).mean()
    losses = train_preferences(policy, reference, ch, rj, beta=0.5, steps=30, lr=3e-3, batch_size=8)
    assert losses[0] == pytest.approx(math.log(2), abs=1e-4)       # policy = reference at the start
    with torch.no_grad():
        after = (completion_logprobs(policy, ch[0], ch[2], ch[1]) - completion_logprobs(policy, rj[0], rj[2], rj[1])).mean()
    assert after > before + 1.0 and losses[-1] < 0.5 * losses[0]
