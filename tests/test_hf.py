"""Offline tests of the Hugging Face adapters on tiny random models (never a hub download)."""
from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
import torch

from iclrbench.blocks import hf


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2"])
def test_llama_like_name_map_finds_all_seven_projections(arch):
    m = hf.tiny_random_model(arch)
    projs = hf.projection_modules(m)
    assert len(projs) == 7 * 2
    assert [p.site for p in projs if p.layer == 1] == list(hf.SITES)
    assert not any(p.transposed for p in projs)
    q = next(p for p in projs if p.site == "k_proj")
    assert (q.in_features, q.out_features) == (64, 32)                      # GQA: 2 kv heads of 16
    x = torch.randn(5, q.in_features)
    for p in projs:
        x = torch.randn(5, p.in_features)
        assert torch.allclose(hf.projection_forward(p, x), p.module(x), atol=1e-5)
        assert hf.input_major_weight(p).shape == (p.in_features, p.out_features)


def test_gpt2_conv1d_is_transposed_and_handled():
    m = hf.tiny_random_model("gpt2")
    projs = hf.projection_modules(m)
    assert [p.site for p in projs if p.layer == 0] == ["qkv_proj", "o_proj", "up_proj", "down_proj"]
    assert all(p.transposed for p in projs)
    c_attn = projs[0]
    assert c_attn.module.weight.shape == (64, 192) and (c_attn.in_features, c_attn.out_features) == (64, 192)
    assert hf.input_major_weight(c_attn).data_ptr() == c_attn.module.weight.data_ptr()    # no copy for Conv1D
    x = torch.randn(3, 64)
    assert torch.allclose(hf.projection_forward(c_attn, x), c_attn.module(x), atol=1e-5)


def test_tinylm_uses_the_llama_names():
    from iclrbench.blocks.lm import LMConfig, TinyLM
    m = TinyLM(LMConfig(vocab_size=40, arch="llama", n_layer=2, n_head=2, d_model=16, max_len=8))
    assert hf.model_arch(m) == "tinylm"
    assert sorted(p.site for p in hf.projection_modules(m) if p.layer == 0) == sorted(hf.SITES)
    g = TinyLM(LMConfig(vocab_size=40, arch="gpt", n_layer=1, n_head=2, d_model=16, max_len=8))
    assert sorted(p.site for p in hf.projection_modules(g)) == sorted(["q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"])


def test_load_local_model_round_trip_and_no_hub_ids(tmp_path):
    m = hf.tiny_random_model("llama", seed=3)
    m.save_pretrained(tmp_path)
    m2, tok = hf.load_local_causal_lm(tmp_path, dtype="float32")
    ids = torch.randint(0, 128, (2, 10))
    assert torch.allclose(m(ids).logits, m2(ids).logits)
    assert tok is None                                                          # no tokenizer files saved
    with pytest.raises(ValueError, match="'path'"):
        hf.load_local_causal_lm("meta-llama/Llama-2-7b-hf")
    with pytest.raises(ValueError, match="'dtype'"):
        hf.load_local_causal_lm(tmp_path, dtype="int8")


def test_tiny_models_are_seeded_and_generate():
    a, b = hf.tiny_random_model("qwen2", seed=1), hf.tiny_random_model("qwen2", seed=1)
    ids = torch.randint(0, 128, (1, 6))
    assert torch.equal(a(ids).logits, b(ids).logits)
    out = a.generate(ids, max_new_tokens=5, do_sample=False)
    assert out.shape == (1, 11)
    with pytest.raises(ValueError, match="'arch'"):
        hf.tiny_config("falcon")
    with pytest.raises(ValueError, match="'model'"):
        hf.model_arch(torch.nn.Linear(2, 2))
