"""SCOPE: the record world and exact scoring, the mixture decoder, the DPO pairs, and the HF noisy decoder."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from static_view_checks import assert_static_view

import iclrbench.explorers.faithful_generation as fgx
import iclrbench.papers.faithful_generation as fg
from iclrbench.views.static import static_view


@pytest.fixture(scope="module")
def world():
    return fg.make_record_world(0)


def test_world_priors_and_exact_scoring(world):
    X = fg.pretraining_corpus(world, 4000, 1)
    n = np.array([int(world.itos[t][1:]) for t in X[:, 1].tolist()])
    j = np.array([int(world.itos[t][1:]) for t in X[:, 4].tolist()])
    c = np.array([int(world.itos[t][1:]) for t in X[:, 6].tolist()])
    # P(job = job_of[name]) = 0.9 + 0.1/n_jobs, same for the city
    assert np.mean(j == world.job_of[n]) == pytest.approx(0.9 + 0.1 / world.n_jobs, abs=0.02)
    assert np.mean(c == world.city_of[j]) == pytest.approx(0.9 + 0.1 / world.n_cities, abs=0.02)
    recs = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    outs = [world.text((1, 2, 3)), world.text((4, 5, 7)), world.text((7, 8, 9))[:4]]
    f = fg.faithfulness(world, recs, outs)
    assert f["hallucination"] == pytest.approx(2 / 3) and f["parse_rate"] == pytest.approx(2 / 3)
    assert f["field_accuracy"] == pytest.approx((3 + 2 + 0) / 9)
    with pytest.raises(ValueError, match="'prior_strength'"): fg.make_record_world(0, prior_strength=1.5)
    with pytest.raises(ValueError, match="'task_prior'"): fg.make_record_world(0, task_prior=-0.1)
    with pytest.raises(ValueError, match="'zipf_s'"): fg.make_record_world(0, zipf_s=4.0)


def test_task_records_long_tail_and_partial_prior(world):
    "Issue 22: task values follow a Zipf long tail (many values rare in D1) and the prior holds on about half the links."
    R = fg.task_records(world, 20000, 5)
    # the prior link holds with prob task_prior + (1 - task_prior) · P(a long-tail draw hits the prior value)
    assert 0.5 <= np.mean(R[:, 1] == world.job_of[R[:, 0]]) <= 0.6 and 0.5 <= np.mean(R[:, 2] == world.city_of[R[:, 1]]) <= 0.6
    d1 = fg.task_records(world, 400, 6)
    names = np.bincount(d1[:, 0], minlength=world.n_names)
    assert (names == 0).sum() > world.n_names / 3 and names.max() >= 20           # a long tail: most names rare in D1
    uw = fg.make_record_world(0, zipf_s=0.0, task_prior=0.0)                          # the card's uniform, independent world
    u = fg.task_records(uw, 20000, 5)
    assert abs(np.mean(u[:, 2] == uw.city_of[u[:, 1]]) - 1 / uw.n_cities) < 0.01


class _Fixed(torch.nn.Module):
    "A fake LM that always predicts `seq[position - offset]`, i.e. writes a fixed sentence after its prompt."
    def __init__(self, world, text, prompt_len):
        super().__init__(); self.w, self.text, self.P = world, text, prompt_len
        self.seen = []
    def forward(self, idx):
        self.seen.append(idx.clone())
        B, T = idx.shape
        out = torch.full((B, T, self.w.vocab_size), -30.0)
        i = min(T - self.P, len(self.text) - 1)
        out[:, -1, self.text[i]] = 0.0
        return out


def test_mixture_decode_alpha_extremes_and_context_free_noise(world):
    recs = np.array([[1, 2, 3], [4, 5, 6]])
    main = _Fixed(world, world.text((1, 2, 3)), 8)         # the "grounded" model always writes record 0's text
    noise = _Fixed(world, world.text((9, 9, 9)), 1)        # the "prior" writes n9 is a j9 from c9
    g = torch.Generator().manual_seed(0)
    out0 = fg.mixture_decode(main, world, recs, "unfaithful", noise, alpha=0.0, generator=g)
    out1, src1 = fg.mixture_decode(main, world, recs, "unfaithful", noise, alpha=1.0, generator=g, return_sources=True)
    assert out0 == [world.text((1, 2, 3))] * 2 and out1 == [world.text((9, 9, 9))] * 2 and all(all(s) for s in src1)
    # the noise model only ever sees "<text>" and generated tokens, never the record's field tokens
    ctx = {world.tok("<rec>"), world.tok("name="), world.tok("job="), world.tok("city=")}
    assert all(not (set(x.flatten().tolist()) & ctx) for x in noise.seen)
    outh = fg.mixture_decode(main, world, recs, "unfaithful", noise, alpha=0.5, generator=torch.Generator().manual_seed(1), return_sources=True)
    mixed = [t for toks in outh[1] for t in toks]
    assert 0 < np.mean(mixed) < 1
    with pytest.raises(ValueError, match="'alpha'"): fg.mixture_decode(main, world, recs, "unfaithful", noise, alpha=2.0)
    with pytest.raises(ValueError, match="'mode'"): fg.mixture_decode(main, world, recs, "beam")


def test_dpo_pairs_mask_prompt_and_start_at_log2(world):
    from iclrbench.blocks.lm import LMConfig, TinyLM
    from iclrbench.blocks.preference import completion_logprobs, dpo_loss
    torch.manual_seed(0)
    m = TinyLM(LMConfig(vocab_size=world.vocab_size, n_layer=1, n_head=2, d_model=16, max_len=32)).eval()
    recs = np.array([[1, 2, 3], [4, 5, 6]])
    negs = [world.text((1, 2, 4)), world.text((4, 0, 6))[:5]]
    (iw, aw, cw), (il, al, cl) = fg.scope_pairs(world, recs, negs)
    assert cw[0].sum() == 8 and cl[1].sum() == 5 and (cw[:, :8] == 0).all()       # prompt tokens are never scored
    lw, ll = completion_logprobs(m, iw, cw, aw), completion_logprobs(m, il, cl, al)
    assert torch.allclose(dpo_loss(lw, ll, lw, ll, beta=0.1)[0], torch.full((2,), math.log(2)))
    pol, losses = fg.scope_dpo(m, world, recs, negs, beta=0.5, lr=1e-2, epochs=20, batch_size=2)
    assert losses[0] == pytest.approx(math.log(2), abs=1e-5) and losses[-1] < losses[0]


# ---------------------------------------------------------------- the Hugging Face path
def _tiny_llama(seed, vocab=40):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=4, intermediate_size=64, max_position_embeddings=64,
                                        pad_token_id=0)).double().eval()


def _sample_reference(model, ids, att, steps, seed, temperature, top_p):
    "Plain sampling, uncached, one model: the same generator stream as noisy_generate's token sampler."
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        pos = (att.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad(): lp = torch.log_softmax(model(input_ids=ids, attention_mask=att, position_ids=pos).logits[:, -1].float(), -1)
        t = torch.multinomial(torch.softmax(fg._top_p_filter(lp / temperature, top_p), -1), 1, generator=g)[:, 0]
        out.append(t); ids = torch.cat([ids, t[:, None]], 1); att = torch.cat([att, torch.ones_like(t[:, None])], 1)
    return torch.stack(out, 1)


def test_hf_noisy_generate_extremes_reproduce_plain_sampling():
    main, noise = _tiny_llama(0), _tiny_llama(1)
    mi = dict(input_ids=torch.tensor([[0, 0, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14]]), attention_mask=torch.tensor([[0, 0, 1, 1, 1, 1], [1] * 6]))
    ni = dict(input_ids=torch.tensor([[3], [3]]), attention_mask=torch.tensor([[1], [1]]))
    kw = dict(max_new_tokens=6, temperature=0.6, top_p=0.9, seed=7)
    a0 = fg.noisy_generate(main, noise, mi, ni, alpha=0.0, **kw)
    a1, src = fg.noisy_generate(main, noise, mi, ni, alpha=1.0, return_sources=True, **kw)
    assert torch.equal(a0, _sample_reference(main, mi["input_ids"], mi["attention_mask"], 6, 7, 0.6, 0.9))
    assert torch.equal(a1, _sample_reference(noise, ni["input_ids"], ni["attention_mask"], 6, 7, 0.6, 0.9)) and bool(src.all())
    cad = fg.noisy_generate(main, None, mi, ni, mode="cad", max_new_tokens=3)
    assert cad.shape == (2, 3)


def test_explorer_from_a_json_result_and_its_static_view():
    import json
    from iclrbench.core import Result
    r = fg.run("smoke", seed=0, progress=False, n_pretrain=1000, pretrain_steps=20, n_d1=20, n_d2=20, n_test=20,
               sft_steps=10, dpo_epochs=1)                                                  # a cheap (barely trained) result
    assert set(r.objects["models"]) == {"p_LM", "SFT (D1)", "SFT (D1 ∪ D2)", "SCOPE"}        # live models travel in objects
    # issue 22: the paired outcomes agree with the rates (same 20 test records), and the SFT lr was picked on validation
    m = r.metrics
    for key, base in (("paired_sft", "hall_sft"), ("paired_sft_d12", "hall_sft_d12")):
        assert m[key]["fixed"] - m[key]["broken"] == round((m[base] - m["hall_scope"]) * 20)
    for sel in m["sft_selection"].values():
        assert sel["val_loss"][str(sel["lr"])] == min(sel["val_loss"].values()) and len(sel["val_loss"]) == len(fg.SFT_LRS)
    assert len(r.artefacts["city_probs"]["SCOPE"]) == len(r.artefacts["test"]) == 20
    r = Result.from_dict(json.loads(json.dumps(r.to_dict())))                               # what the site reads back
    e = fgx.explore(r)                                                                      # no model needed
    e.controls["record"].value = 5
    assert not e.errors and "c" in e.figures["city"].data[0].x[0]
    fig = static_view(e)
    assert_static_view(fig)
    (slider,) = fig.layout.sliders
    assert len(slider.steps) == 20 and slider.steps[-1].label == "α 0.9, test record 3"
    # the frame at the run's α and record 0: the run's negatives, underlined where p_LM spoke
    neg = r.artefacts["alpha_negatives"][str(r.params["alpha"])]
    i = [s_.label for s_ in slider.steps].index(f"α {r.params['alpha']:g}, test record 0")
    tables = [t for t, v in zip(fig.data, slider.steps[i].args[0]["visible"]) if v and t.type == "table"]
    cells = tables[-1].cells.values[1]
    assert [c.count("<u>") for c in cells] == [sum(s_) for s_ in neg["sources"]]
    assert e.controls["record"].value == 5 and not e.errors                                 # the controls are restored


def test_sft_lr_selected_on_validation_copies_held_out_records(world):
    """Issue 22: SFT's copy of the record is a late, sharp transition; an lr too small for the step budget leaves the model
    on the pretraining prior. `select_sft` keeps the lr with the lowest validation loss, and that model fits unseen test
    records better (and hallucinates no more) than the rejected one."""
    corpus = fg.pretraining_corpus(world, 3000, 1)
    p_lm = fg.pretrain_lm(world, corpus, 150, d_model=32, seed=0)
    d1, val, test = (fg.task_records(world, n, s) for n, s in ((200, 2), (60, 3), (100, 4)))
    m, lr, vl = fg.select_sft(p_lm, world, d1, val, steps=150, lrs=(1e-5, 3e-3), seed=0)
    assert lr == 3e-3 and vl[3e-3] < vl[1e-5] and vl[lr] == pytest.approx(fg.sft_val_loss(m, world, val))
    weak = fg.sft(p_lm, world, d1, 150, lr=1e-5, seed=0)
    h_sel = fg.faithfulness(world, test, fg.mixture_decode(m, world, test))["hallucination"]
    h_weak = fg.faithfulness(world, test, fg.mixture_decode(weak, world, test))["hallucination"]
    # the choice made on validation records carries over to unseen test records
    assert fg.sft_val_loss(m, world, test) < fg.sft_val_loss(weak, world, test) and h_sel <= h_weak, (h_sel, h_weak)


def test_claim_checks_need_a_paired_margin():
    "Issue 22: one record fewer is not 'SCOPE beats SFT'; the check also says 'not measured' without paired outcomes."
    chk = {c.id: c.check for c in fg.CLAIMS}
    one = dict(hall_sft=0.004, hall_scope=0.002, hall_sft_d12=0.004, hall_cad=0.004)
    assert chk["scope_beats_sft"]({**one, "paired_sft": {"fixed": 1, "broken": 0}})[0] is False
    assert chk["scope_beats_equal_data_sft"]({**one, "paired_sft_d12": {"fixed": 1, "broken": 0}})[0] is False
    assert chk["scope_beats_sft"](one)[0] is None and chk["scope_beats_equal_data_sft"](one)[0] is None
    big = dict(hall_sft=0.3, hall_scope=0.1, hall_sft_d12=0.2, hall_cad=0.3,
               paired_sft={"fixed": 100, "broken": 0}, paired_sft_d12={"fixed": 50, "broken": 0})
    assert chk["scope_beats_sft"](big)[0] is True and chk["scope_beats_equal_data_sft"](big)[0] is True


def test_select_sft_candidates_in_forked_workers_give_the_same_models(world):
    "Issue 24: the smoke run trains the SFT lr candidates in 2 forked processes (`ctx.map`); the models are bit-identical."
    from iclrbench.core.experiment import RunContext
    from iclrbench.core.runtime import torch_threads
    ctx = RunContext(params={}, seed=0, seeds=[0], show_progress=False)
    p_lm = fg.pretrain_lm(world, fg.pretraining_corpus(world, 500, 1), 5, d_model=32, seed=0)
    d1, val = fg.task_records(world, 40, 2), fg.task_records(world, 20, 3)
    with torch_threads(1):
        seq = fg.select_sft(p_lm, world, d1, val, steps=6, seed=0)
        par = fg.select_sft(p_lm, world, d1, val, steps=6, seed=0, map_fn=lambda fn, jobs: ctx.map(fn, jobs, workers=2))
    assert seq[1] == par[1] and seq[2] == par[2]
    assert all(torch.equal(a, b) for a, b in zip(seq[0].state_dict().values(), par[0].state_dict().values()))


def test_smoke_sft_still_hallucinates_on_validation():
    """Issue 22, item 5: at the smoke setting the validation-selected SFT(D1) model (seed 0, same budget and lr choice as
    the run) must still hallucinate on some validation records, else SCOPE has nothing to fix and its claims are vacuous.
    The errors sit on records whose values are rare in D1 (the long tail), not on the frequent ones."""
    from iclrbench.core.runtime import torch_threads
    p, seed = fg.SCALES["smoke"], 0
    world = fg.make_record_world([seed, 1], prior_strength=p["prior_strength"], zipf_s=p["zipf_s"], task_prior=p["task_prior"])
    d1 = fg.task_records(world, p["n_d1"] + p["n_d2"] + p["n_test"], [seed, 3])[:p["n_d1"]]
    val = fg.task_records(world, p["n_val"], [seed, 4])
    with torch_threads(1):
        p_lm = fg.pretrain_lm(world, fg.pretraining_corpus(world, p["n_pretrain"], [seed, 2]), p["pretrain_steps"], seed=seed)
        m, lr, vl = fg.select_sft(p_lm, world, d1, val, p["sft_steps"], seed=seed)
        out = fg.mixture_decode(m, world, val)
    wrong = np.array([world.parse(o) != tuple(int(v) for v in r) for o, r in zip(out, val)])
    assert 0.05 <= wrong.mean() <= 0.6, wrong.mean()
    rare = np.array([min(int((d1[:, f] == r[f]).sum()) for f in range(3)) <= 1 for r in val])
    assert wrong[rare].mean() > wrong[~rare].mean(), (wrong[rare].mean(), wrong[~rare].mean())
