"""Library tests for CodePlan (Wen et al., ICLR 2025): the task world, plan extraction, sequences and loss mask,
the experiment's determinism and validation, and the real-model path on a tiny random Llama (no download)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import iclrbench.papers.codeplan as cp


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _random_tasks(n, K, seed, loops=True, conditionals=True):
    return cp.make_tasks(n, K, np.random.default_rng(seed), loops=loops, conditionals=conditionals)


def test_primitives_by_hand():
    s = (3, 1, 4)
    assert cp.apply_op("inc", (9, 0, 5)) == (0, 1, 6) and cp.apply_op("dbl", (7, 5, 2)) == (4, 0, 4)
    assert cp.apply_op("rev", s) == (4, 1, 3) and cp.apply_op("srt", s) == (1, 3, 4)
    assert cp.apply_op("rot", s) == (1, 4, 3) and cp.apply_op("cmp", s) == (6, 8, 5)
    assert cp.run_program([("rep", "inc", 3), ("if", "rev", "srt")], (1, 2, 0)) == [(2, 3, 1), (3, 4, 2), (4, 5, 3), (3, 5, 4)]
    assert cp.render_response([(4, 2, 5), (5, 2, 4)]) == "4 2 5 | 5 2 4 = 5 2 4"
    g = np.random.default_rng(0)
    p = cp.render_prompt((3, 1, 4), [("op", "inc"), ("op", "rev")], "backward", g).split()
    assert p[:5] == ["on", "3", "1", "4", ":"] and p[6] == "after"
    assert cp.SYNONYMS["rev"].count(p[5]) == 1 and cp.SYNONYMS["inc"].count(p[7]) == 1    # reversed order
    with pytest.raises(ValueError, match="template"):
        cp.render_prompt((1, 2, 3), [("op", "inc")], "sideways", g)


def test_extracted_plan_reproduces_every_state_at_noise_zero():
    """The issue's test: at noise 0 the executed plan reproduces every state of the response (loops, branches,
    both templates, k = 1..6)."""
    for t in _random_tasks(1500, 6, 1):
        assert cp.run_program(t.plan, t.s0) == cp.run_program(t.program, t.s0), (t.prompt, t.response, t.plan)
    # straight-line programs: the extractor recovers the program itself up to merging repeats
    for t in _random_tasks(300, 4, 2, loops=False, conditionals=False):
        assert t.plan == cp.canonical_plan(t.program) or cp.run_program(t.plan, t.s0) == cp.run_program(t.program, t.s0)


def test_no_state_value_appears_in_a_plan():
    for t in _random_tasks(400, 6, 3):
        for style in ("code", "nl"):
            words = cp.render_plan(t.plan, style).split()
            assert not any(w.isdigit() for w in words), (style, words)
        states = {" ".join(map(str, s)) for s in cp.run_program(t.program, t.s0)}
        assert not any(s in cp.render_plan(t.plan) for s in states)


def test_ties_are_broken_by_the_prompt_words_and_control_flow_is_recovered():
    # on 1 1 1 rev, srt and rot are all the identity: the prompt's word decides
    for word, op in (("rotate", "rot"), ("order", "srt"), ("flip", "rev")):
        assert cp.extract_plan(f"take 1 1 1 then {word}", "1 1 1 = 1 1 1") == [("op", op)]
    plan = cp.extract_plan("take 1 2 0 then bump three times then if first above last flip otherwise sort",
                           cp.render_response([(2, 3, 1), (3, 4, 2), (4, 5, 3), (3, 5, 4)]))
    assert plan == [("rep", "inc", 3), ("if", "rev", "srt")]
    code = cp.render_plan(plan)
    assert code == ("for _ in range(3):\n    xs = inc(xs)\nif xs[0] > xs[-1]:\n    xs = rev(xs)\nelse:\n    xs = srt(xs)\n"
                    "return xs")
    assert cp.parse_code_plan(code) == plan and cp.parse_code_plan("xs = inc(xs) return") is None
    # consecutive repeats become a loop; synonyms collapse to one canonical name
    assert cp.extract_plan("take 5 5 5 then bump then increment", "6 6 6 | 7 7 7 = 7 7 7") == [("rep", "inc", 2)]


def test_extraction_noise_corrupts_the_expected_share_of_steps():
    tasks = _random_tasks(600, 4, 4, loops=False, conditionals=False)
    rng = np.random.default_rng(0)
    wrong = total = 0
    for t in tasks:
        noisy = cp.extract_plan(t.prompt, t.response, 0.3, rng)
        flat = [it[1] for it in noisy for _ in range(it[2] if it[0] == "rep" else 1)]
        clean = [it[1] for it in t.plan for _ in range(it[2] if it[0] == "rep" else 1)]
        if len(flat) == len(clean):
            wrong += sum(a != b for a, b in zip(flat, clean)); total += len(clean)
    assert 0.2 < wrong / total < 0.4
    ones = [t for t in tasks if t.k == 1][:40]
    differ = [cp.run_program(cp.extract_plan(t.prompt, t.response, 1.0, rng), t.s0) != cp.run_program(t.program, t.s0) for t in ones]
    assert np.mean(differ) > 0.8                  # every step replaced: the plan no longer reproduces the response
    t = tasks[0]
    with pytest.raises(ValueError, match="noise"):
        cp.extract_plan(t.prompt, t.response, 1.5)
    with pytest.raises(ValueError, match="rng"):
        cp.extract_plan(t.prompt, t.response, 0.1)


def test_sequences_put_the_loss_on_plan_and_response_only():
    t = _random_tasks(1, 3, 5)[0]
    ids, n = cp.to_sequence(t, "code")
    assert cp.decode(ids[:n]) == t.prompt + " [PLAN]"
    tail = cp.decode(ids[n:]).split()
    assert tail[-1] == "[EOS]" and "[RESPONSE]" in tail and " ".join(tail[:tail.index("[RESPONSE]")]) == " ".join(cp.render_plan(t.plan).split())
    v, nv = cp.to_sequence(t, "none")
    assert cp.decode(v[:nv]) == t.prompt + " [RESPONSE]" and cp.decode(v[nv:]) == t.response + " [EOS]"
    assert cp.query_ids(t, "code") == ids[:n] and cp.query_ids(t, "none") == v[:nv]
    assert 1 not in ids and 1 not in v                                              # no unknown word anywhere
    assert cp.answer_of("xs = inc(xs) return xs [RESPONSE] 1 2 3 = 1 2 3".split(), "code") == ("xs = inc(xs) return xs", "1 2 3 = 1 2 3")
    assert cp.parse_response("1 2 3 | 4 5 = 4 5 6") == ([(1, 2, 3), None], (4, 5, 6))


def test_tiny_run_is_deterministic_and_parameters_are_validated():
    kw = dict(n_seeds=1, K=2, n_train=400, n_test=10, steps=15, batch_size=8, d_model=32, progress=False)
    a, b = cp.run("smoke", 3, **kw), cp.run("smoke", 3, **kw)
    assert json.dumps(a.metrics, sort_keys=True) == json.dumps(b.metrics, sort_keys=True)     # bitwise, wall clock excluded
    assert a.metrics["plan_consistent_rate"] == [1.0] and a.metrics["plan_leak"] == [0]
    assert len(a.metrics["acc_codeplan"][0]) == 2 and {c.id for c in a.claims} == {c.id for c in cp.CLAIMS}
    with pytest.raises(ValueError, match="'K'"):
        cp.run("smoke", K=0)
    with pytest.raises(ValueError, match="'plan_style'"):
        cp.run("smoke", plan_style="prose")
    with pytest.raises(ValueError, match="'noise'"):
        cp.run("smoke", noise=0.9)


# --- the real-model path (Hugging Face), offline ---

@pytest.fixture(scope="module")
def hf_parts():
    pytest.importorskip("transformers")
    from iclrbench.blocks.hf import tiny_random_model, word_level_tokenizer
    tok = word_level_tokenizer([w for w in cp.VOCAB if w not in cp.SPECIALS], eos="[EOS]", extra_special=["[PLAN]", "[RESPONSE]"])
    model = tiny_random_model("llama", vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_attention_heads=4,
                              num_key_value_heads=4)
    return tok, model


def test_formatter_masks_the_prompt_and_hf_loss_matches(hf_parts):
    tok, model = hf_parts
    fmt = cp.CodePlanFormatter(tok)
    ex = fmt.encode("take 3 1 4 then bump", "xs = inc(xs) return xs", "4 2 5 = 4 2 5")
    n_prompt = len("take 3 1 4 then bump".split()) + 1
    assert ex["labels"][:n_prompt] == [-100] * n_prompt and ex["labels"][n_prompt:] == ex["input_ids"][n_prompt:]
    assert tok.convert_ids_to_tokens(ex["input_ids"])[n_prompt - 1] == "[PLAN]" and ex["input_ids"][-1] == tok.eos_token_id
    van = fmt.encode("take 3 1 4 then bump", None, "4 2 5 = 4 2 5")
    assert tok.convert_ids_to_tokens(van["input_ids"])[n_prompt - 1] == "[RESPONSE]"
    batch = fmt.collate([ex, van])
    assert batch["labels"][1, len(van["input_ids"]):].eq(-100).all() and batch["attention_mask"][1].sum() == len(van["input_ids"])
    with torch.no_grad():
        out = model(**batch)
        logits = out.logits[:, :-1].float()
        lab = batch["labels"][:, 1:]
        keep = lab != -100
        manual = torch.nn.functional.cross_entropy(logits[keep], lab[keep])
    assert torch.allclose(out.loss, manual, atol=1e-5)
    with pytest.raises(ValueError, match="marker"):
        cp.CodePlanFormatter(tok, plan_marker="<< plan >>")


def test_generation_stops_at_the_marker_then_answers(hf_parts):
    tok, model = hf_parts
    import copy
    m = copy.deepcopy(model).train()
    fmt = cp.CodePlanFormatter(tok)
    batch = fmt.collate([fmt.encode("take 3 1 4 then bump", "xs = inc(xs) return xs", "4 2 5 = 4 2 5")])
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    torch.manual_seed(0)
    for _ in range(40):                                   # memorise the one example
        loss = m(**batch).loss
        opt.zero_grad(); loss.backward(); opt.step()
    plan, resp = cp.generate_with_plan(m.eval(), tok, "take 3 1 4 then bump", max_plan_tokens=12, max_response_tokens=12)
    assert plan == "xs = inc(xs) return xs" and resp == "4 2 5 = 4 2 5"
    # with no room for a plan, the marker is appended and the response still follows it
    p0, _ = cp.generate_with_plan(m, tok, "take 3 1 4 then bump", max_plan_tokens=2, max_response_tokens=3)
    assert p0 == "xs =" and "[RESPONSE]" not in p0


def test_extract_plan_with_an_llm_callable():
    seen = []
    def llm(text):
        seen.append(text)
        return "Here it is:\n```python\nfor step in steps:\n    state = apply(step, state)\n```\nDone."
    plan = cp.extract_plan_with(llm, "take 3 1 4 then bump", "4 2 5 = 4 2 5")
    assert plan == "for step in steps:\n    state = apply(step, state)"
    assert "take 3 1 4 then bump" in seen[0] and "4 2 5 = 4 2 5" in seen[0] and "do not copy numbers" in seen[0]
    assert cp.extract_plan_with(lambda s: "  x = f(x)  ", "p", "r") == "x = f(x)"
    with pytest.raises(ValueError, match="str"):
        cp.extract_plan_with(lambda s: None, "p", "r")
