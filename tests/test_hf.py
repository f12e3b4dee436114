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


# --- issue 25: a WordLevel tokenizer built in code ---

def test_word_level_tokenizer_ids_unknowns_and_round_trip(tmp_path):
    t = hf.word_level_tokenizer(["take", "3", "1", "4", "then", "bump", "xs", "=", "inc(xs)"], eos="[EOS]",
                                extra_special=["[PLAN]", "[RESPONSE]"])
    assert isinstance(t, transformers.PreTrainedTokenizerFast)
    assert (t.pad_token_id, t.unk_token_id, t.eos_token_id) == (0, 1, 2) and len(t) == 5 + 9
    ids = t("take 3 1 4 then flip [PLAN] xs = inc(xs)")["input_ids"]
    assert t.convert_ids_to_tokens(ids) == ["take", "3", "1", "4", "then", "[UNK]", "[PLAN]", "xs", "=", "inc(xs)"]
    assert ids[0] == 5 and ids[-1] == 13                                   # words follow the specials, in order
    assert t.decode(t("take 3 then bump")["input_ids"]) == "take 3 then bump"
    assert t.decode(ids, skip_special_tokens=True) == "take 3 1 4 then xs = inc(xs)"
    batch = t(["take 3", "take 3 1 4"], padding=True)
    assert batch["input_ids"][0][-2:] == [0, 0] and batch["attention_mask"][0] == [1, 1, 0, 0]
    p = hf.word_level_tokenizer(["a", "b"], split="whitespace")
    assert p.convert_ids_to_tokens(p("a,(b)")["input_ids"]) == ["a", "[UNK]", "b", "[UNK]"]
    t.save_pretrained(tmp_path)
    again = transformers.AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    assert again("take 3 1 4 then flip")["input_ids"] == ids[:6]
    # drives a tiny random Llama end to end
    m = hf.tiny_random_model("llama", vocab_size=len(t))
    out = m.generate(torch.tensor([ids]), max_new_tokens=3, do_sample=False, pad_token_id=t.pad_token_id)
    assert out.shape == (1, len(ids) + 3)
    with pytest.raises(ValueError, match="'split'"):
        hf.word_level_tokenizer(["a"], split="bpe")
    with pytest.raises(ValueError, match="'vocab'"):
        hf.word_level_tokenizer(["a b"])


# --- issue 31: a character tokenizer and the text-generation adapter (llm_rationality) ---

def _char_tok():
    import string
    return hf.char_level_tokenizer(string.ascii_letters + string.digits + " .,:;%$?!-()\n")


def _tiny_gpt2(tok, seed=0):
    return hf.tiny_random_model("gpt2", seed=seed, vocab_size=len(tok), hidden_size=32, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=256)


def test_char_level_tokenizer_round_trip_and_unknowns():
    t = _char_tok()
    assert isinstance(t, transformers.PreTrainedTokenizerFast)
    assert (t.pad_token_id, t.unk_token_id, t.eos_token_id) == (0, 1, 2) and t.convert_ids_to_tokens([3]) == ["a"]
    text = "Option B: a 60% chance to win $25.\nAnswer: B"
    ids = t(text)["input_ids"]
    assert len(ids) == len(text) and t.decode(ids) == text
    assert t("é")["input_ids"] == [t.unk_token_id]
    assert t.decode([t.convert_tokens_to_ids("B"), t.eos_token_id], skip_special_tokens=True) == "B"
    with pytest.raises(ValueError, match="'chars'"):
        hf.char_level_tokenizer(["ab"])


def test_hf_generate_fn_greedy_equals_a_manual_argmax_loop():
    t = _char_tok()
    m = _tiny_gpt2(t)
    gen = hf.hf_generate_fn(m, t, max_new_tokens=5)
    prompt = "Option A or B?"
    out = gen(prompt)
    ids = torch.tensor([t(prompt)["input_ids"]])
    with torch.no_grad():
        for _ in range(5):
            nxt = m(ids).logits[0, -1].argmax()
            if int(nxt) == t.eos_token_id: break
            ids = torch.cat([ids, nxt.view(1, 1)], dim=1)
    assert out == t.decode(ids[0, len(prompt):], skip_special_tokens=True)
    assert gen(prompt) == out and gen.calls == 2 and gen.last_prompt_tokens == len(prompt)
    assert hf.hf_generate_fn(m, t, max_new_tokens=5, max_prompt_tokens=4).encode(prompt).shape == (1, 4)
    assert len(out) >= 3, out                                             # (seed 0's model: 5 characters)
    assert hf.hf_generate_fn(m, t, max_new_tokens=5, stop=[out[2:]])(prompt) == out[: out.index(out[2:])]


def test_hf_generate_fn_sampling_is_seeded_and_leaves_the_global_rng_alone():
    t = _char_tok()
    m = _tiny_gpt2(t, seed=1)
    a, b = (hf.hf_generate_fn(m, t, max_new_tokens=8, do_sample=True, seed=3) for _ in range(2))
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    outs = [a("x") for _ in range(4)]
    assert torch.rand(1) == before                                        # the caller's RNG did not move
    assert outs == [b("x") for _ in range(4)] and len(set(outs)) > 1      # same seed, same answers; calls differ
    assert [hf.hf_generate_fn(m, t, max_new_tokens=8, do_sample=True, seed=4)("x") for _ in range(4)] != outs
    with pytest.raises(ValueError, match="'max_new_tokens'"):
        hf.hf_generate_fn(m, t, max_new_tokens=0)
    with pytest.raises(ValueError, match="'temperature'"):
        hf.hf_generate_fn(m, t, do_sample=True, temperature=0.0)
    with pytest.raises(ValueError, match="'chat'"):
        hf.hf_generate_fn(m, t, chat=True)
    with pytest.raises(ValueError, match="'prompt'"):
        hf.hf_generate_fn(m, t)(["x"])


# --- KmerTokenizer and tiny_bert_model (added with CLIBD) ------------------------------------------------------
def test_kmer_tokenizer_is_non_overlapping_and_pads_and_truncates():
    tok = hf.KmerTokenizer(5)
    assert tok.vocab_size == 5 + 4 ** 5 and tok.itos[5] == "AAAAA" and tok.itos[-1] == "TTTTT"
    seq = "ACGTA" "CCCCC" "GGN"                                      # a trailing partial 5-mer is dropped
    assert tok.tokenize(seq) == ["ACGTA", "CCCCC"] and len(tok.encode(seq)) == 4
    b = tok(["ACGTACCCCCTTTTT", "acgta"], max_length=3)
    assert b["input_ids"].tolist() == [[2, tok.stoi["ACGTA"], 3], [2, tok.stoi["ACGTA"], 3]]
    b = tok(["ACGTACCCCC", "ACGTA"])
    assert b["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]] and b["input_ids"][1, 3] == tok.pad_token_id
    assert tok.encode("NNNNN", add_special_tokens=False) == [tok.unk_token_id]
    with pytest.raises(ValueError, match="'k'"):
        hf.KmerTokenizer(0)


def test_tiny_bert_model_over_kmers_is_seeded_and_ignores_padding():
    tok = hf.KmerTokenizer(4)
    a, b = hf.tiny_bert_model(seed=1), hf.tiny_bert_model(seed=1)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    batch = tok(["ACGTACGTTTTT", "ACGTACGTTTTTGGGGCCCC"])
    out = a(**batch).last_hidden_state
    alone = a(**tok(["ACGTACGTTTTT"])).last_hidden_state
    assert out.shape == (2, 7, 32) and torch.allclose(out[0, :5], alone[0], atol=1e-5)
    with pytest.raises(ValueError, match="'hidden_size'"):
        hf.tiny_bert_model(hidden_size=30, num_attention_heads=4)


def test_tiny_vit_model_masks_and_is_seeded():
    import torch
    from iclrbench.blocks.hf import tiny_vit_model
    a, b = tiny_vit_model(3), tiny_vit_model(3)
    x = torch.randn(2, 3, 32, 32)
    m = torch.zeros(2, 64, dtype=torch.bool); m[:, :10] = True
    with torch.no_grad():
        ya, yb = a(pixel_values=x).last_hidden_state, b(pixel_values=x).last_hidden_state
        ym = a(pixel_values=x, bool_masked_pos=m).last_hidden_state
    assert ya.shape == (2, 65, 64) and torch.equal(ya, yb) and not torch.allclose(ya, ym)


def test_tiny_hubert_and_features_from_hf():
    import numpy as np
    m = hf.tiny_hubert_model(seed=0)
    assert m.config.hidden_size == 32 and m.config.num_hidden_layers == 2 and not m.training
    wav = np.sin(2 * np.pi * 150 * np.arange(2000) / 8000)
    f_last = hf.features_from_hf(m, wav, layer=-1)
    assert f_last.shape == (1, 199, 32) and not f_last.requires_grad        # (2000 − 10) // 5 + 1 = 399, (399 − 3) // 2 + 1 = 199
    with torch.no_grad():
        ref = m(torch.as_tensor(wav, dtype=torch.float32)[None]).last_hidden_state
    assert torch.allclose(f_last, ref) and torch.allclose(hf.features_from_hf(m, wav, layer=2), ref)
    f0 = hf.features_from_hf(m, np.stack([wav, wav]), layer=0)
    assert f0.shape == (2, 199, 32) and not torch.allclose(f0[0], f_last[0])
    assert torch.equal(hf.features_from_hf(hf.tiny_hubert_model(seed=0), wav, 1), hf.features_from_hf(m, wav, 1))
    mask = torch.zeros(1, 199, dtype=torch.bool); mask[0, 50:70] = True
    fm = hf.features_from_hf(m, wav, -1, mask_time_indices=mask)
    assert not torch.allclose(fm[0, 50:70], f_last[0, 50:70])                # the model's mask embedding replaced them
    with pytest.raises(ValueError, match="'layer'"):
        hf.features_from_hf(m, wav, layer=3)
    with pytest.raises(ValueError, match="'wav'"):
        hf.features_from_hf(m, np.zeros((1, 1, 100)), layer=1)
