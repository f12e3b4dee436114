"""Integrative decoding: the facts world, exact parsing, the aggregation, and the HF path on a tiny random Llama."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import iclrbench.papers.integrative_decoding as idm


@pytest.fixture(scope="module")
def world():
    return idm.make_world(0)


def test_world_matches_the_cards_probabilities(world):
    X = idm.make_corpus(world, 6000, 1)
    first, after_a = [], []
    mis_ents = {world.ent(e): e for e in np.where(world.group == 1)[0]}
    lives, city_tok = world.stoi["lives"], {world.city_id(c): c for c in range(world.n_cities)}
    for row in X.tolist():
        e_tok = row[1]
        if e_tok in mis_ents:
            e = mis_ents[e_tok]
            first.append(row[5] == lives)
            if row[5] == lives: after_a.append(city_tok[row[7]] == world.misconception[e])
    assert np.mean(first) == pytest.approx(0.65 / 3 + 0.35, abs=0.03)         # 0.567: greedy starts with "lives"
    assert np.mean(after_a) == pytest.approx(0.35 / (0.35 + 0.65 / 3), abs=0.04)  # after "lives in" the misconception leads
    p = world.city_distribution(int(np.where(world.group == 2)[0][0]))
    assert p.max() == pytest.approx(0.65) and np.allclose(np.sort(p)[:-1], 0.35 / 23)


def test_parse_is_exact_and_vote(world):
    assert idm.parse_city(world, 5, world.answer_tokens(5, 3, "B")) == 3
    assert idm.parse_city(world, 5, world.answer_tokens(5, 3, "B")[:-1]) is None           # no final "."
    bad = world.answer_tokens(5, 3, "A"); bad[1] = world.stoi["is"]                        # "is in": not a template
    assert idm.parse_city(world, 5, bad) is None
    assert idm.majority_vote([1, 2, 2, None, 1, 2]) == 2 and idm.majority_vote([None]) is None
    assert idm.majority_vote([4, 1, 1, 4]) == 4                                          # tie → earliest draft


class _Lookup(torch.nn.Module):
    "A fake LM: the next-token log-probs depend on the draft's city token (position 7), so rows disagree."
    def __init__(self, world, second=True):
        super().__init__(); self.w = world; self.second = second
    def forward(self, idx):
        B, T = idx.shape
        out = torch.full((B, T, self.w.vocab_size), -20.0)
        for b in range(B):
            c = idx[b, 7].item() if T > 8 else self.w.city_id(0)
            out[b, -1, c] = 0.0
            if self.second: out[b, -1, self.w.city_id(1)] = -1.0
        return out


def test_document_losses_trimmed_groups_equal_the_padded_batch(world):
    """The length-grouped training loss gives every document the same loss (and gradient) as the padded batch."""
    from iclrbench.blocks.lm import LMConfig, TinyLM
    X = idm.make_corpus(world, 96, 3)
    x, y = X[:, :-1], X[:, 1:]
    assert len(torch.unique((y != 0).sum(1))) >= 2                      # both document lengths are present
    torch.manual_seed(0)
    model = TinyLM(LMConfig(vocab_size=world.vocab_size, arch="gpt", n_layer=2, n_head=4, d_model=32, max_len=32))
    l = torch.nn.functional.cross_entropy(model(x).transpose(1, 2), y, reduction="none", ignore_index=0)
    mask = (y != 0).float()
    padded = (l * mask).sum(1) / mask.sum(1)
    grouped = idm.document_losses(model, x, y)
    assert torch.allclose(grouped, padded, atol=1e-5)
    g1 = torch.autograd.grad(padded.mean(), list(model.parameters()))
    g2 = torch.autograd.grad(idm.document_losses(model, x, y).mean(), list(model.parameters()))
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g1, g2))


def test_id_sums_log_probs_and_appends_to_every_row(world):
    m = _Lookup(world, second=False)
    d = lambda c: world.answer_tokens(0, c, "A")            # position 7 of the row is the draft's city
    # three rows vote c5, c5, c7: the summed log-probs pick c5 (majority), the prob-average too
    ans = idm.integrative_decode(m, world, [0], [[d(5), d(5), d(7)]], max_new=1)
    assert ans == [[world.city_id(5)]]
    m = _Lookup(world)
    # log-prob vs prob: c1 is every row's second choice (p ≈ 0.27): one dissenting row vetoes c5 under the log-prob sum
    # (its log p(c5) ≈ −20), so the consensus second choice c1 wins; the sum of probabilities keeps the majority c5
    assert idm.integrative_decode(m, world, [0], [[d(5), d(5), d(7)]], "logprob", max_new=1) == [[world.city_id(1)]]
    assert idm.integrative_decode(m, world, [0], [[d(5), d(5), d(7)]], "prob", max_new=1) == [[world.city_id(5)]]
    with pytest.raises(ValueError, match="'aggregate'"):
        idm.integrative_decode(m, world, [0], [[d(5)]], "max")
    with pytest.raises(ValueError, match="'truth_share'"):
        idm.make_world(0, truth_share=1.5)



def _per_row_logprobs(model, rows):
    "Reference for `_last_logprobs`: every row computed alone."
    with torch.no_grad():
        return torch.stack([torch.log_softmax(model(torch.tensor([r]))[0, -1].float(), -1) for r in rows])


def test_logprob_cache_and_dedup_give_the_rows_own_numbers(world):
    """`_last_logprobs` computes each distinct row once and reuses rows seen before (`cache`): the decoders' speed-up
    (issue 24). The numbers are each row's own: TinyLM's rows do not depend on the rows batched beside them."""
    from iclrbench.blocks.lm import LMConfig, TinyLM
    torch.manual_seed(1)
    model = TinyLM(LMConfig(vocab_size=world.vocab_size, arch="gpt", n_layer=2, n_head=4, d_model=32, max_len=32)).eval()
    g = torch.Generator().manual_seed(0)
    rows = [world.prompt_tokens(e) + torch.randint(7, world.vocab_size, (n,), generator=g).tolist()
            for e in range(6) for n in (0, 3, 3, 6)]
    rows = rows + rows[::3]                                                              # repeated rows
    ref = _per_row_logprobs(model, rows)
    cache = {}
    got = idm._last_logprobs(model, rows, cache)
    assert torch.allclose(got, ref, atol=1e-5) and len(cache) == len({tuple(r) for r in rows})
    assert torch.equal(idm._last_logprobs(model, rows[::-1], cache), got.flip(0))         # served from the cache
    # the decoders with one shared cache give the answers of fresh ones (finished entities' rows are skipped)
    ents = list(range(world.n_entities))[:12]
    drafts = idm.sample_answers(model, world, ents, 4, generator=torch.Generator().manual_seed(3))
    shared = {}
    for k in (1, 2, 4):
        for agg in ("logprob", "prob"):
            fresh = idm.integrative_decode(model, world, ents, [d[:k] for d in drafts], agg)
            assert idm.integrative_decode(model, world, ents, [d[:k] for d in drafts], agg, cache=shared) == fresh
    assert idm.sample_answers(model, world, ents, 4, generator=torch.Generator().manual_seed(3), cache=shared) == drafts

# ---------------------------------------------------------------- the Hugging Face path
WORDS = ["<pad>", "<eos>", "question", ":", "answer", "refined", "the", "a", "is", "paris", "rome", "city", "?", "again"] + [f"w{i}" for i in range(30)]


@pytest.fixture(scope="module")
def hf():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="w0"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=4, intermediate_size=64, max_position_embeddings=128,
                                         pad_token_id=0, eos_token_id=1, bos_token_id=None)).double().eval()
    return model, tok


def _reference_id(model, rows, steps):
    "Unbatched, uncached reference: each row alone (no padding), log-softmax summed over rows, argmax, shared append."
    out = []
    rows = [list(r) for r in rows]
    for _ in range(steps):
        s = 0
        with torch.no_grad():
            for r in rows: s = s + torch.log_softmax(model(input_ids=torch.tensor([r])).logits[0, -1], -1)
        t = int(s.argmax()); out.append(t)
        rows = [r + [t] for r in rows]
    return out


def test_hf_id_identical_rows_equals_greedy(hf):
    model, tok = hf
    enc = tok(["question the city is ? answer paris again"] * 4, return_tensors="pt")
    got = idm.integrative_decode_ids(model, enc["input_ids"], enc["attention_mask"], max_new_tokens=8)
    greedy = model.generate(**tok(["question the city is ? answer paris again"], return_tensors="pt"), do_sample=False,
                            max_new_tokens=8, pad_token_id=0, eos_token_id=None)[0, enc["input_ids"].shape[1]:].tolist()
    assert got == greedy


def test_hf_id_cache_padding_and_shared_append(hf):
    model, tok = hf
    texts = ["question a city ? answer rome", "question the city is ? answer paris again w3 w4", "w5 w6"]
    tok.padding_side = "left"
    enc = tok(texts, return_tensors="pt", padding=True)
    tok.padding_side = "right"
    assert (enc["attention_mask"] == 0).any()                                   # left padding really happens
    cached = idm.integrative_decode_ids(model, enc["input_ids"], enc["attention_mask"], 6, use_cache=True)
    uncached = idm.integrative_decode_ids(model, enc["input_ids"], enc["attention_mask"], 6, use_cache=False)
    ref = _reference_id(model, [tok(t)["input_ids"] for t in texts], 6)
    assert cached == uncached == ref


def test_hf_integrative_generate_end_to_end(hf):
    model, tok = hf
    out = idm.integrative_generate(model, tok, "question the city ?", k=3, max_new_tokens=5, seed=0)
    assert len(out["responses"]) == 3 and len(out["token_ids"]) <= 5
    # with given responses, step 3 equals the reference on the templated inputs
    resp = ["paris", "rome", "paris"]
    out = idm.integrative_generate(model, tok, "question", k=3, responses=resp, max_new_tokens=4,
                                   template="question {question} answer {response} again")
    ref = _reference_id(model, [tok(f"question question answer {r} again")["input_ids"] for r in resp], 4)
    assert out["token_ids"] == ref


# ---------------------------------------------------------------- the docs' static view
def test_static_view_has_client_side_controls_over_distinct_data():
    import json
    from iclrbench.core import Result
    from iclrbench.explorers import integrative_decoding as idx
    from iclrbench.views.static import static_view
    from static_view_checks import assert_static_view
    r = idm.run("smoke", seed=0, progress=False, steps=10, n_docs=1000, n_per_group=5, n_seeds=1)   # cheap, untrained
    r = Result.from_dict(json.loads(json.dumps(r.to_dict())))                              # what the site reads back
    ex = idx.explore(r)                                                                    # no model: stored drafts only
    assert not ex.errors and not ex.controls["train_model"].disabled
    fig = static_view(ex)
    (slider,) = assert_static_view(fig)
    assert not ex.errors and len(slider.steps) == 2 * 4
    combos = [(a, g) for a in ("logprob", "prob") for g in ("overall", "misconception", "clean", "control")]
    for (agg, group), step in zip(combos, slider.steps):
        # settle_layout wraps long titles with <br>: read the title as one line
        assert f"{group} entities, {agg} aggregation" in step.args[1]["title.text"].replace("<br>", " ")
    acc = r.metrics["accuracy"]
    assert list(fig.data[0].y) == [acc[f"id{k}"]["overall"] for k in idm.K_VALUES]          # ID curve = the run's accuracies
    per = len(fig.data) // len(slider.steps)
    names = [t.name for t in fig.data[:per]]
    assert "ID, ideal model" in names and "oracle majority vote" in names
    other = r.metrics["accuracy_other_aggregate"]["accuracy"]                                # the 'prob' frames: the other run
    assert list(fig.data[4 * per].y) == [other[f"id{k}"]["overall"] for k in idm.K_VALUES]
    assert len(fig.to_json()) < 2_000_000


# ---------------------------------------------------------------- seeds (issue 22: the claims are checked per seed)
def test_run_loops_over_seeds_and_each_seed_is_its_own_run():
    """`n_seeds` runs seeds seed … seed + n − 1, each with its own world, corpus and model: the per-seed columns equal
    the one-seed runs of those seeds, and the figures' detail comes from the first seed."""
    kw = dict(progress=False, steps=40, n_docs=1000, n_per_group=5)
    assert idm.SCALES["full"]["n_seeds"] == 3 and idm.SCALES["smoke"]["n_seeds"] == 1   # the card: each of 3 seeds (smoke: one, for time)
    r = idm.run("smoke", seed=4, n_seeds=2, **kw)
    one = [idm.run("smoke", seed=s, n_seeds=1, **kw) for s in (4, 5)]
    assert r.metrics["seeds"] == [4, 5] and r.metrics["detail_seed"] == 4
    for name in ("acc_greedy", "acc_id1", "acc_id8", "acc_id16", "control_acc_id8", "copy_rate", "mis_acc_id16", "clean_acc_id1"):
        assert r.metrics[name] == [o.metrics[name][0] for o in one], name
    assert r.metrics["accuracy"] == one[0].metrics["accuracy"]
    assert not np.array_equal(one[0].artefacts["truth"], one[1].artefacts["truth"])           # a fresh world per seed
    with pytest.raises(ValueError, match="n_seeds"):
        idm.run("smoke", n_seeds=0, **kw)


def test_claims_hold_only_when_every_seed_holds():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("ce_id", Path(__file__).parent / "counterexamples" / "integrative_decoding.py")
    ce = importlib.util.module_from_spec(spec); spec.loader.exec_module(ce)
    checks = {c.id: c.check for c in idm.CLAIMS if c.check is not None}
    for cid, m in ce._PASSING.items():
        held, detail = checks[cid](m)
        assert held is True and "3 seed(s)" in detail, (cid, detail)
    # one failing seed of three fails the claim (and the detail names every seed's value)
    m = dict(ce._PASSING["id_beats_greedy"], acc_id8=[0.833, 0.85, 0.65])
    held, detail = checks["id_beats_greedy"](m)
    assert held is False and "+0.067" in detail
    # the scaling detail splits the gain by entity group
    held, detail = checks["gains_grow_with_k"](ce._PASSING["gains_grow_with_k"])
    assert "clean [+0.200" in detail and "misconception [+0.000" in detail
    # a quantity absent from the run: not measured (None), never a KeyError or a vacuous all([])
    for cid, check in checks.items():
        assert check({})[0] is None, cid
        assert check({k: [] for k in ce._PASSING[cid]})[0] is False, cid
