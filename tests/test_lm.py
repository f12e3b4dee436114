"""The shared tiny-LM core: equivalence with transformers' Llama, causality, hooks of the training loop, evaluation."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from iclrbench.blocks.lm import (CharTokenizer, LMConfig, TinyLM, WordTokenizer, flops_per_token, lr_factor, perplexity,
                          pydoc_corpus, pydoc_documents, random_windows, sequence_logprob, split_documents,
                          token_logprobs, train_lm)


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _model(arch="gpt", **kw):
    torch.manual_seed(0)
    cfg = dict(vocab_size=13, arch=arch, n_layer=2, n_head=2, d_model=16, max_len=16)
    cfg.update(kw)
    return TinyLM(LMConfig(**cfg))


def test_llama_block_equals_transformers_llama():
    """Same weights → same logits as `transformers.LlamaForCausalLM` (RoPE convention, RMSNorm, SwiGLU, tying)."""
    transformers = pytest.importorskip("transformers")
    ours = _model("llama", d_model=32, n_head=4, n_layer=2, max_len=24, tie_weights=False)
    cfg = transformers.LlamaConfig(vocab_size=13, hidden_size=32, intermediate_size=ours.cfg.d_ff, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=24,
                                   rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                                   attention_bias=False, mlp_bias=False)
    ref = transformers.LlamaForCausalLM(cfg).eval()
    sd = {"model.embed_tokens.weight": ours.tok_emb.weight, "model.norm.weight": ours.ln_f.weight,
          "lm_head.weight": ours.lm_head.weight}
    for i, b in enumerate(ours.blocks):
        p = f"model.layers.{i}."
        sd |= {p + "input_layernorm.weight": b.ln1.weight, p + "post_attention_layernorm.weight": b.ln2.weight}
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            sd[p + f"self_attn.{n}.weight"] = getattr(b.attn, n).weight
        for n in ("gate_proj", "up_proj", "down_proj"):
            sd[p + f"mlp.{n}.weight"] = getattr(b.mlp, n).weight
    missing, unexpected = ref.load_state_dict({k: v.detach().clone() for k, v in sd.items()}, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    idx = torch.randint(0, 13, (3, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(ours(idx), ref(idx).logits, atol=1e-5)


@pytest.mark.parametrize("arch", ["gpt", "llama"])
def test_causal_hidden_states_and_embedding_entry_point(arch):
    m = _model(arch)
    x = torch.randint(0, 13, (2, 12), generator=torch.Generator().manual_seed(0))
    logits, hidden = m(x, return_hidden=True)
    assert logits.shape == (2, 12, 13) and len(hidden) == m.cfg.n_layer + 1
    assert all(h.shape == (2, 12, 16) for h in hidden)
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 3) % 13
    assert torch.allclose(m(y)[:, :6], logits[:, :6], atol=1e-5)
    assert not torch.allclose(m(y)[:, 6:], logits[:, 6:])
    assert torch.allclose(m.forward_embeddings(m.tok_emb(x)), logits, atol=1e-6)
    names = {n for n, _ in m.named_modules()}
    expected = {"q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"} | ({"gate_proj"} if arch == "llama" else set())
    assert {f"blocks.0.attn.{n}" for n in expected if n.endswith(("q_proj", "k_proj", "v_proj", "o_proj"))} <= names
    assert {n.split(".")[-1] for n in names} >= expected


def test_config_and_inputs_are_validated():
    with pytest.raises(ValueError, match="arch"):
        LMConfig(vocab_size=5, arch="rnn")
    with pytest.raises(ValueError, match="d_model"):
        LMConfig(vocab_size=5, d_model=10, n_head=4)
    with pytest.raises(ValueError, match="vocab_size"):
        LMConfig(vocab_size=0)
    m = _model()
    with pytest.raises(ValueError, match="max_len"):
        m(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="temperature"):
        m.generate(torch.zeros(1, 2, dtype=torch.long), 3, temperature=0)
    with pytest.raises(ValueError, match="schedule"):
        lr_factor(0, 10, schedule="linear")
    with pytest.raises(ValueError, match="steps"):
        train_lm(m, lambda s: None, steps=0)


def test_generate_is_seeded_and_greedy_is_argmax():
    m = _model()
    p = torch.tensor([[1, 2, 3]])
    a = m.generate(p, 6, generator=torch.Generator().manual_seed(3))
    b = m.generate(p, 6, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.shape == (1, 9)
    g = m.generate(p, 1, greedy=True)
    assert int(g[0, -1]) == int(m(p)[0, -1].argmax())
    # top_k=1 sampling is greedy decoding
    assert torch.equal(m.generate(p, 5, greedy=True), m.generate(p, 5, top_k=1, generator=torch.Generator().manual_seed(0)))


def test_tokenizers_round_trip_and_unknowns():
    text = pydoc_corpus()[:5000]
    t = CharTokenizer(text, specials=("<pad>", "<eos>"))
    assert t.decode(t.encode(text)) == text and (t.pad_id, t.eos_id) == (0, 1)
    with pytest.raises(ValueError, match="alphabet"):
        CharTokenizer(alphabet="ab").encode("abc")
    w = WordTokenizer(pydoc_documents()[:10], max_vocab=300)
    ids = w.encode("The for statement, zqxj!")
    assert w.vocab_size == 300 and w.unk_id in ids and w.decode(w.encode("the for statement.")) == "the for statement."


def test_document_split_is_seeded_and_disjoint():
    docs = pydoc_documents()
    tr, va = split_documents(docs, 0.2, seed=1)
    assert len(va) == round(0.2 * len(docs)) and not set(tr) & set(va)
    assert split_documents(docs, 0.2, seed=1) == (tr, va) and split_documents(docs, 0.2, seed=2) != (tr, va)
    x, y = random_windows(torch.arange(100), 10, 4, torch.Generator().manual_seed(0))
    assert torch.equal(y, x + 1)


def test_perplexity_and_logprobs_match_a_direct_computation():
    m = _model()
    ids = torch.randint(0, 13, (65,), generator=torch.Generator().manual_seed(0))
    x, y = ids[:64].view(4, 16), ids[1:65].view(4, 16)
    nll = F.cross_entropy(m(x).reshape(-1, 13), y.reshape(-1))
    assert math.isclose(perplexity(m, ids, block=16, batch_size=3), math.exp(float(nll.detach())), rel_tol=1e-5)
    idx = torch.randint(0, 13, (2, 8), generator=torch.Generator().manual_seed(1))
    lp = token_logprobs(m, idx)
    direct = torch.log_softmax(m(idx), -1)
    assert torch.allclose(lp[0, 2], direct[0, 2, idx[0, 3]])
    s = sequence_logprob(m, idx, prompt_len=torch.tensor([3, 5]))
    assert torch.allclose(s, torch.stack([lp[0, 2:].sum(), lp[1, 4:].sum()]), atol=1e-6)
    idx2 = idx.clone(); idx2[0, -2:] = 0
    s_pad = sequence_logprob(m, idx2, prompt_len=3, pad_id=0)
    assert torch.allclose(s_pad[0], token_logprobs(m, idx2)[0, 2:5].sum(), atol=1e-6)


@pytest.mark.parametrize("arch", ["gpt", "llama"])
def test_training_lowers_held_out_perplexity(arch):
    text = pydoc_corpus()[:30000]
    tok = CharTokenizer(text)
    ids = torch.tensor(tok.encode(text))
    train, val = ids[:-3000], ids[-3000:]
    torch.manual_seed(0)
    m = TinyLM(LMConfig(vocab_size=tok.vocab_size, arch=arch, n_layer=1, n_head=2, d_model=32, max_len=32))
    before = perplexity(m, val, block=32)
    g = torch.Generator().manual_seed(0)
    log = train_lm(m, lambda s: random_windows(train, 32, 16, g), steps=80, lr=1e-2, progress_bar=False,
                   eval_fn=lambda mm: perplexity(mm, val, block=32), eval_every=40)
    assert [s for s, _ in log.evals] == [40, 80] and len(log.losses) == 80
    assert log.evals[-1][1] < 0.5 * before and log.evals[-1][1] == pytest.approx(perplexity(m, val, block=32))


def test_sample_weight_and_loss_hooks():
    m = _model()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    batch = lambda s: random_windows(torch.arange(200) % 13, 8, 4, torch.Generator().manual_seed(s))
    seen = []
    def zero_weights(losses, step):
        assert not losses.requires_grad
        seen.append(losses.shape)
        return torch.zeros_like(losses)
    train_lm(m, batch, steps=3, weight_decay=0.0, sample_weights=zero_weights, progress_bar=False)
    assert seen == [(4,)] * 3
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())  # zero weights → no update at all
    calls = []
    def custom(model, x, y):
        calls.append(x.shape)
        return F.cross_entropy(model(x).transpose(1, 2), y, reduction="none").mean(1)
    log = train_lm(m, batch, steps=2, loss_fn=custom, progress_bar=False)
    assert calls == [(4, 8)] * 2 and len(log.losses) == 2


def test_lr_schedules_and_flops():
    assert lr_factor(0, 100, 0.1) == pytest.approx(0.1) and lr_factor(10, 100, 0.1) == pytest.approx(1.0)
    assert lr_factor(99, 100, 0.1) == pytest.approx(0.1, abs=0.01)
    assert max(lr_factor(s, 100, schedule="onecycle") for s in range(100)) == pytest.approx(1.0, abs=0.02)
    cfg = LMConfig(vocab_size=100, n_layer=2, d_model=64)
    n = 2 * (4 * 64 * 64 + 2 * 64 * 256) + 64 * 100
    assert flops_per_token(cfg, 32) == 6 * n + 6 * 2 * 32 * 64


# --- issue 25: prompt-masked SFT loss and batched decoding over prompts of unequal length ---

def test_prompt_masked_loss_counts_response_tokens_only():
    from iclrbench.blocks.lm import prompt_masked_loss
    m = _model()
    ids = torch.tensor([[1, 2, 3, 4, 5, 0, 0], [6, 7, 8, 9, 10, 11, 0]])
    lp = token_logprobs(m, ids)                                   # lp[:, t-1] = log p(ids[t] | ids[<t])
    by_hand = -(lp[0, 2:4].sum() + lp[1, 1:5].sum()) / 6           # row 0: targets 3,4; row 1: targets 2..5
    loss = prompt_masked_loss(m, ids, [3, 2], pad_id=0)
    assert torch.allclose(loss, by_hand, atol=1e-6)
    per_row = prompt_masked_loss(m, ids, torch.tensor([3, 2]), pad_id=0, reduction="none")
    assert torch.allclose(per_row, torch.stack([-lp[0, 2:4].mean(), -lp[1, 1:5].mean()]), atol=1e-6)
    assert torch.allclose(prompt_masked_loss(m, ids, 3, pad_id=0, reduction="sum"),
                          -(lp[0, 2:4].sum() + lp[1, 2:5].sum()), atol=1e-5)
    with pytest.raises(ValueError, match="reduction"):
        prompt_masked_loss(m, ids, 3, reduction="avg")
    with pytest.raises(ValueError, match="prompt_lens"):
        prompt_masked_loss(m, ids, [1, 2, 3])
    # usable as train_lm's per-sample loss: training on responses lowers the response loss
    x = torch.tensor([[1, 2, 3, 4, 5, 6]] * 4)
    before = float(prompt_masked_loss(m, x, 3).detach())
    train_lm(m, lambda s: (x, None), steps=20, lr=1e-2, progress_bar=False,
             loss_fn=lambda mm, a, b: prompt_masked_loss(mm, a, 3, reduction="none"))
    assert float(prompt_masked_loss(m, x, 3).detach()) < 0.5 * before


@pytest.mark.parametrize("arch,max_len,positions", [("gpt", 12, "default"), ("gpt", 24, "default"), ("llama", 12, "default"),
                                                    ("llama", 24, "default"), ("gpt", 24, "sinusoidal"), ("llama", 12, "sinusoidal")])
def test_generate_batch_equals_one_by_one_greedy(arch, max_len, positions):
    from iclrbench.blocks.lm import generate_batch, padded_forward
    m = _model(arch, vocab_size=20, max_len=max_len, positions=positions)  # 12: the window slides (recompute); 24: cache
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(1, 20, (int(n),), generator=g).tolist() for n in torch.randint(1, 9, (10,), generator=g)]
    batched = generate_batch(m, prompts, 7, pad_id=0)
    single = [m.generate(torch.tensor([p]), 7, greedy=True)[0, len(p):].tolist() for p in prompts]
    assert batched == single
    assert generate_batch(m, prompts, 7, pad_id=0, batch_size=3) == single
    # no padding: padded_forward is the plain forward pass
    x = torch.randint(1, 20, (3, 9), generator=g)
    assert torch.allclose(padded_forward(m, x, torch.ones_like(x)), m(x), atol=1e-5)
    # stop_id cuts each row before its first stop token
    stop = single[0][2]
    cut = generate_batch(m, prompts, 7, pad_id=0, stop_id=stop)
    assert cut == [r[:r.index(stop)] if stop in r else r for r in single]
    s1 = generate_batch(m, prompts, 5, pad_id=0, greedy=False, generator=torch.Generator().manual_seed(4))
    s2 = generate_batch(m, prompts, 5, pad_id=0, greedy=False, generator=torch.Generator().manual_seed(4))
    assert s1 == s2 and all(len(r) == 5 for r in s1)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate_batch(m, prompts, -1, pad_id=0)
    with pytest.raises(ValueError, match="temperature"):
        generate_batch(m, prompts, 2, pad_id=0, greedy=False, temperature=0.0)
