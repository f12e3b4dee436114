"""AutoIF (iclrbench.papers.autoif): the constraint world, the simulated supervisor's bugs in the sandbox, parsing,
cross-verification by hand under both rules, back-translation, rejection sampling and pair rules, the real-model
path on a tiny random GPT-2, and the experiment's contract (seeds, parameters, claims)."""
import copy, json, math

import numpy as np
import pytest
import torch

from iclrbench.blocks.sandbox import SandboxPool, Verdict
from iclrbench.core.runtime import torch_threads
from iclrbench.papers import autoif as A

# Tests that start sandbox workers (these, AutoIF's, and AutoIF's contract and explorer tests) share one xdist group:
# their CPU-time limits and process floods are measured without the other xdist worker's sandboxes running beside them.
pytestmark = pytest.mark.xdist_group("autoif")



@pytest.fixture(autouse=True)
def _one_torch_thread():
    "Small models on shared cores: one torch thread (as the experiment harness sets)."
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(timeout=0.2, max_timeouts=1, grace=1.0) as p:
        yield p


@pytest.fixture(scope="module")
def probes():
    probes, cat = A.probe_set(), A.catalogue()
    truth = np.array([[A.FAMILIES[f].check(A.response_words(s), v) for s in probes] for f, v in cat], dtype=float)
    return probes, cat, truth


def _answer(src, cases):
    return "```json\n" + json.dumps({"func": src, "cases": [{"input": c, "output": l} for c, l in cases]}) + "\n```"


# ---------------------------------------------------------------- the world

def test_ground_truth_checkers_by_hand():
    gt = lambda f, p, s: A.ground_truth(A.make_instruction(f, p), s)
    assert gt("max_words", 3, "a b c") and not gt("max_words", 3, "a b c d")
    assert gt("min_words", 4, "a b c d") and not gt("min_words", 4, "a b c")
    assert gt("exact_words", 3, "a b c") and not gt("exact_words", 3, "a b")
    assert gt("include_word", "boat", "the boat") and not gt("include_word", "boat", "boats here")
    assert gt("avoid_letter", "e", "moon star") and not gt("avoid_letter", "e", "moon tree")
    assert gt("start_word", "moon", "moon star") and not gt("start_word", "moon", "star moon") and not gt("start_word", "moon", "")
    assert gt("end_word", "moon", "star moon") and not gt("end_word", "moon", "moon star")
    assert gt("all_start_letter", "b", "boat barn bus") and not gt("all_start_letter", "b", "boat cow") and not gt("all_start_letter", "b", "")
    assert gt("no_repeat", None, "a b c") and not gt("no_repeat", None, "a b a")
    assert gt("short_words", 4, "cow hay") and not gt("short_words", 4, "boat")
    assert A.ground_truth(A.style_instruction(0), "anything") is None


def test_world_splits_and_catalogue(probes):
    _, cat, truth = probes
    for f in A.FAMILIES.values():
        assert f.values and f.test_values
        if f.values != (None,):
            assert not set(f.values) & set(f.test_values), f.name
    assert not set(A.HELDOUT_QUERY_WORDS) & set(A.TRAIN_QUERY_WORDS) and len(A.HELDOUT_QUERY_WORDS) == 10
    # the probes tell the catalogue entries apart (the back-translation stand-in can identify a function)
    assert len({r.tobytes() for r in truth}) >= 0.95 * len(cat)
    rng = np.random.default_rng(0)
    for f, p in cat[::7]:
        ins = A.Instruction(f, p, 0, "")
        for want in (True, False):
            s = A.sample_case(ins, want, rng)
            assert s is None or A.FAMILIES[f].check(s.split(), p) == want


def test_world_evaluation_is_held_out():
    w = A.make_world(np.random.default_rng(0), 12, 3, 8, 4)
    train_keys = {i.key for i in w.instructions if i.family}
    assert len(w.instructions) == 15 and len(train_keys) == 12
    assert all(q[0] in A.TRAIN_QUERY_WORDS for qs in w.queries for q in qs)
    assert all(e[1] in A.HELDOUT_QUERY_WORDS for e in w.evals)
    held = [e[0] for e in w.evals if e[3] == "heldout"]
    assert all(h.key not in train_keys or h.family == "no_repeat" for h in held)
    assert all(h.param in A.FAMILIES[h.family].test_values for h in held)


# ---------------------------------------------------------------- the simulated supervisor in the sandbox

def test_correct_verifiers_match_ground_truth_and_bugs_behave(pool, probes):
    ps = probes[0][:60]
    rng = np.random.default_rng(1)
    jobs, meta = [], []
    for f, fam in A.FAMILIES.items():
        p = fam.values[0]
        ins = A.make_instruction(f, p)
        truth = [bool(fam.check(A.response_words(s), p)) for s in ps]
        for _ in range(4):                                   # several coding styles / argument names
            jobs.append((A.verifier_source(ins, None, rng), ps)); meta.append((f, None, truth))
        for bug in A.BUG_TYPES:
            jobs.append((A.verifier_source(ins, bug, rng), ps)); meta.append((f, bug, truth))
    outs = pool.run_many(jobs)
    for (f, bug, truth), out in zip(meta, outs):
        vals = [v.value for v in out]
        st = {v.status for v in out}
        if bug is None:
            assert vals == truth, f
        elif bug == "syntax_error":
            assert st == {"exception"} and out[0].detail == "SyntaxError"
        elif bug == "forbidden_import":
            assert st == {"rejected"}
        elif bug == "infinite_loop":
            assert st == {"timeout"} and out[1].detail == "skipped"
        elif bug == "raises":
            assert st == {"exception"} and out[0].detail == "IndexError"
        elif bug == "huge_allocation":
            assert st == {"exception"} and out[0].detail == "MemoryError"
        elif bug == "inverted":
            assert vals == [not t for t in truth]
        elif bug == "always_true":
            assert all(vals)
        else:                                                # off_by_one, wrong_param: a different function
            assert st == {"ok"}


def test_supervisor_answers_parse_and_label_noise():
    rng = np.random.default_rng(2)
    ins = A.make_instruction("include_word", "boat")
    parsed, flips, n = 0, 0, 0
    for _ in range(200):
        text, bug = A.supervisor_answer(ins, rng, p_ok=0.5, label_flip=0.15)
        pc = A.parse_func_cases(text)
        if pc is None: continue
        parsed += 1
        for s, lab in pc["cases"]:
            n += 1; flips += lab != A.ground_truth(ins, s)
    assert 0.88 <= parsed / 200 <= 0.99                      # ≈ 5 % malformed
    assert 0.10 <= flips / n <= 0.20                         # labels flipped with probability 0.15


def test_parse_func_cases():
    src = "def evaluate(r):\n    import requests\n    return True"
    got = A.parse_func_cases("text\n" + _answer(src, [("a", "True"), ("b", "false"), ("c", True), ("d", "maybe")]))
    assert got == {"func": "def evaluate(r):\n    return True", "cases": [("a", True), ("b", False), ("c", True)]}
    assert A.parse_func_cases('```json\n{"func": "def evaluate(r):\\\\n    return 1", "cases": []}\n```')["func"] == \
        "def evaluate(r):\n    return 1"
    assert A.parse_func_cases("no fence") is None
    assert A.parse_func_cases('```json\n{"func": 3}\n```') is None
    assert A.parse_func_cases('```json\n{"func": "x", "ca\n```') is None


# ---------------------------------------------------------------- cross-verification, worked by hand

GOOD = ["def evaluate(r):\n    return len(r.split()) <= 3",
        "def evaluate(t):\n    return len(t.split()) <= 3",
        "def evaluate(s):\n    w = s.split()\n    return len(w) <= 3"]
ALWAYS = ["def evaluate(r):\n    return True", "def evaluate(r):\n    return r is not None"]
INVERTED = "def evaluate(r):\n    return not len(r.split()) <= 3"
CASES = [("a", True), ("a b", True), ("a b c", True), ("a b c d", False), ("a b c d e", False), ("x y z w v u", False),
         ("p q", True), ("p q r s", False), ("q", True), ("m n o p q r s", False), ("m", True), ("k l m n", False)]


def _texts(srcs, cases_per):
    return [_answer(s, c) for s, c in zip(srcs, cases_per)]


def test_cross_verify_paper_and_code_rules_by_hand(pool):
    ins = A.make_instruction("max_words", 3)
    srcs = GOOD + ALWAYS + [INVERTED]
    per = [CASES[2 * k:2 * k + 2] for k in range(6)]
    texts = _texts(srcs, per)
    # paper: a case is kept when > 0.5 of the 6 functions agree. True-labelled cases: 3 good + 2 always-True agree
    # (5/6, kept); False-labelled cases: only the 3 good ones agree (3/6 = 0.5, not > 0.5, dropped).
    iv = A.cross_verify(ins, texts, ["correct"] * 3 + ["always_true"] * 2 + ["inverted"], pool, "paper", 0.5)
    assert {c for c, l in iv.kept_cases} == {c for c, l in CASES if l}
    # on the kept (all-True) cases: good 1.0, always-True 1.0, inverted 0.0 → the always-True functions survive
    assert set(iv.functions) == set(GOOD + ALWAYS)
    # code rule: a case is kept when ANY function agrees → all 12; function accuracy ≥ 0.8: good 1.0, always 0.5
    iv = A.cross_verify(ins, texts, ["correct"] * 3 + ["always_true"] * 2 + ["inverted"], pool, "code", 0.8)
    assert len(iv.kept_cases) == 12 and set(iv.functions) == set(GOOD)
    assert {a["bug"]: a["stage"] for a in iv.answers} == {"correct": None, "always_true": "cross-verification",
                                                           "inverted": "cross-verification"}
    # without cross-verification every compiling function is a verifier
    iv = A.cross_verify(ins, texts, [None] * 6, pool, cross=False)
    assert len(iv.functions) == 6
    with pytest.raises(ValueError, match="'rule'"):
        A.cross_verify(ins, texts, [None] * 6, pool, rule="majority")


def test_cross_verify_minimum_counts_and_compile_stage(pool):
    ins = A.make_instruction("max_words", 3)
    texts = _texts([GOOD[0], GOOD[0], GOOD[1], "def evaluate(r) return", "import os\ndef evaluate(r):\n    return True", "x"],
                   [CASES[2 * k:2 * k + 2] for k in range(6)])
    iv = A.cross_verify(ins, texts, ["correct", "correct", "correct", "syntax_error", "forbidden_import", "raises"], pool)
    # unique compiling functions: GOOD[0], GOOD[1] (x compiles but defines no evaluate) → < 3 → dropped
    assert iv.dropped == "too few" and iv.functions == []
    stages = [a["stage"] for a in iv.answers]
    assert stages[3] == "compile" and stages[4] == "screen" and stages[5] == "compile"


def test_back_translation_stand_in(pool, probes):
    ps, cat, truth = probes
    ins = A.make_instruction("max_words", 5)
    mk = lambda fs: A.InstructionVerifiers(ins, [{"source": f, "stage": None, "bug": "x"} for f in fs], functions=list(fs))
    rng = np.random.default_rng(4)
    good = [A.verifier_source(ins, None, rng) for _ in range(3)]
    assert A.back_translate(mk(good), pool, ps, truth, cat)
    iv = mk(good[:2] + [A.verifier_source(ins, "off_by_one", rng)])
    assert not A.back_translate(iv, pool, ps, truth, cat)
    assert iv.back_translation[2]["best"] == ["max_words", 4] and iv.dropped == "back-translation" and not iv.functions
    style = A.InstructionVerifiers(A.style_instruction(0), [], functions=good)
    assert not A.back_translate(style, pool, ps, truth, cat)


# ---------------------------------------------------------------- rejection sampling and pairs

def test_pass_rates_keep_rule_and_dpo_pairs():
    v = [[Verdict("ok", True), Verdict("ok", True), Verdict("exception"), Verdict("ok", False)],
         [Verdict("ok", False), Verdict("ok", True), Verdict("timeout"), Verdict("invalid")]]
    assert A.pass_rates(v) == [0.5, 1.0, None, 0.0]
    assert [A.keep_response(r, 0.5) for r in A.pass_rates(v)] == [False, True, False, False]
    assert [A.keep_response(r, 0.0) for r in A.pass_rates(v)] == [True, True, False, False]
    assert A.keep_response(1.0, 1.0) and not A.keep_response(0.9, 1.0)
    rng = np.random.default_rng(0)
    assert A.dpo_pairs(["a", "b"], [1.0, 0.5], rng) == []                       # no rejected response
    assert A.dpo_pairs(["a", "b"], [1.0, 0.0], rng) == [("a", "b")]              # 1 + 1 → one pair
    pairs = A.dpo_pairs(["a", "b", "c", "d", "e"], [1.0, 0.5, 0.75, 0.0, 0.0], rng)
    assert len(pairs) == 4 and all(c in "abc" and r in "de" for c, r in pairs)  # ≤ 2 of each, every combination
    assert A.dpo_pairs(["a", "b", "c"], [0.25, None, 0.0], rng) == []           # 0.25 is neither chosen nor rejected


def test_filter_enriches_compliance_and_cross_verification_matters(pool, probes):
    """Execution-feedback filtering of instruction-ignoring samples: the cross-verified verifiers select compliant
    responses far above the base rate, and more precisely than every compiling function when half are buggy."""
    ps, cat, truth = probes
    rng = np.random.default_rng(5)
    world = A.make_world(rng, 10, 0, 6, 1)
    answers = [[A.supervisor_answer(ins, rng, 0.4, 0.15) for _ in range(6)] for ins in world.instructions]
    ivs_d = A.verification_stage(world, answers, pool, "paper", 0.5, ps, truth, cat)
    ivs_c = A.verification_stage(world, answers, pool, "paper", 0.5, ps, truth, cat, cross=False, back=False)
    responses = [[[A.sharegpt_response(w, rng) for _ in range(8)] for w, _ in world.queries[i]] for i in range(10)]
    scorer = A.ResponseScorer(pool, responses)
    tok = A.build_tokenizer()

    def precision(ivs, thr):
        kept, ok = 0, 0
        for i, iv in enumerate(ivs):
            if not iv.functions: continue
            for r, rate in zip(scorer.flat(i), A.pass_rates(scorer.verdicts(i, iv.functions))):
                if A.keep_response(rate, thr):
                    kept += 1; ok += A.ground_truth(world.instructions[i], r)
        return ok / max(kept, 1), kept

    base = np.mean([A.ground_truth(ins, r) for i, ins in enumerate(world.instructions) for r in scorer.flat(i)])
    (pd, nd), (pc, nc) = precision(ivs_d, 0.5), precision(ivs_c, 0.5)
    assert nd > 0 and pd > 0.95 and pd > base + 0.4, (pd, base)
    # with the released code's response rule (pass rate > 0) one always-True verifier lets everything through:
    # every compiling function as a verifier is then far less precise than the cross-verified set
    (pd0, _), (pc0, _) = precision(ivs_d, 0.0), precision(ivs_c, 0.0)
    assert pc0 < pd0 - 0.2, (pc0, pd0)
    # with the paper's rule (pass rate > 0.5) the vote of the correct majority already cancels most bugs
    assert pc > base + 0.3 and nc > nd
    assert A.verifier_bug_share(ivs_d) < A.verifier_bug_share(ivs_c)
    rows = A.rejection_rows(world, tok, scorer, [iv.functions for iv in ivs_d], 0.5)
    assert len(rows) == len({(tuple(p), tuple(r)) for p, r in rows}) <= nd
    assert all(r[-1] == tok.eos_id for _, r in rows)


def test_sft_on_filtered_rows_learns_the_constraint():
    """Prompt-masked SFT on rows that all satisfy 'start with moon' makes the tiny policy start with moon."""
    tok = A.build_tokenizer()
    ins = A.make_instruction("start_word", "moon")
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(64):
        w = A.TRAIN_QUERY_WORDS[rng.integers(len(A.TRAIN_QUERY_WORDS))]
        rows.append((tok.encode(A.prompt_text(ins, A.query_text(w))), tok.encode("moon " + A.sharegpt_response(w, rng)) + [tok.eos_id]))
    m = A.make_policy(tok.vocab_size, 0)
    evals = [(ins, w, A.query_text(w), "seen") for w in A.HELDOUT_QUERY_WORDS]
    before = A.evaluate_policy(m, tok, evals)["acc"]
    A.fit_rows(m, rows, 60, tok.pad_id, lr=3e-3, batch_size=16)
    after = A.evaluate_policy(m, tok, evals)["acc"]
    assert before < 0.2 and after == 1.0


# ---------------------------------------------------------------- the real-model path (tiny random GPT-2)

def test_hf_policy_dpo_on_a_tiny_random_gpt2():
    from iclrbench.blocks.hf import tiny_random_model, word_level_tokenizer
    tok = word_level_tokenizer(list(A.WORDS) + ["tell", "me", "about", "the", "."], eos="[EOS]")
    model = tiny_random_model("gpt2", vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64)
    pol, ref = A.HFPolicy(model, tok), A.HFPolicy(copy.deepcopy(model).eval(), tok)
    out = pol.sample(["tell me about the boat .", "the moon ."], k=3, max_new_tokens=4, seed=0)
    assert len(out) == 2 and all(len(o) == 3 for o in out)
    assert out == pol.sample(["tell me about the boat .", "the moon ."], k=3, max_new_tokens=4, seed=0)
    batch = [("tell me about the boat .", "boat wave", "moon star comet"), ("the moon .", "moon", "fish fish")]
    loss, margin = A.policy_dpo_loss(pol, ref, batch, beta=0.3)
    assert float(loss) == pytest.approx(math.log(2), abs=1e-6) and torch.allclose(margin, torch.zeros(2), atol=1e-6)
    # sequence_logprob sums the response tokens only (prompt masked): compare with a manual computation
    ids_p, ids_r = tok("the moon .", add_special_tokens=False)["input_ids"], tok("moon", add_special_tokens=False)["input_ids"]
    full = torch.tensor([ids_p + ids_r + [tok.eos_token_id]])
    lp = torch.log_softmax(model(full).logits[0, :-1], -1).gather(-1, full[0, 1:, None]).squeeze(-1)
    assert float(pol.sequence_logprob(["the moon ."], ["moon"])[0]) == pytest.approx(float(lp[len(ids_p) - 1:].sum()), abs=1e-5)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    loss.backward(); opt.step()
    _, margin2 = A.policy_dpo_loss(pol, ref, batch, beta=0.3)
    assert float(margin2.mean()) > 0
    assert A.parse_score("blah\nScore: 3\nScore: 8") == 8.0 and A.parse_score("none") is None
    calls = []
    answers = A.supervisor_verifiers(lambda prompt: calls.append(prompt) or _answer(GOOD[0], CASES[:3]), "answer in at most 3 words", k=2)
    assert len(answers) == 2 and answers[0]["func"] == GOOD[0] and "at most 3 words" in calls[0]


# ---------------------------------------------------------------- the experiment's contract

TINY = dict(n_seeds=1, pretrain_steps=20, sft_steps=5, n_instructions=4, n_style=1, n_queries=2, n_eval_queries=2,
            progress=False)


def test_same_seed_same_numbers_and_claims_are_evaluated():
    a, b = A.run("smoke", seed=3, **TINY), A.run("smoke", seed=3, **TINY)
    assert json.dumps(a.to_dict(False)["metrics"], sort_keys=True) == json.dumps(b.to_dict(False)["metrics"], sort_keys=True)
    assert {o.id for o in a.claims} == {c.id for c in A.CLAIMS}
    assert {"acc_a", "acc_b", "acc_c", "acc_d", "acc_sampled_d", "bug_share_c", "bug_share_d"} <= set(a.metrics)
    assert a.artefacts["sandbox_calls_per_s"] > 0
    assert a.metrics["funnel"][0]["instructions"] == 5
    json.dumps(a.to_dict())


def test_bad_parameters_raise_value_error_naming_the_parameter():
    for kw, name in ((dict(p_ok=1.5), "p_ok"), (dict(rule="majority"), "rule"), (dict(bug_types="typo"), "bug_types"),
                     (dict(timeout=0.0), "timeout"), (dict(device="tpu"), "device")):
        with pytest.raises(ValueError, match=f"'{name}'"):
            A.run("smoke", progress=False, **kw)


def test_claim_checks_can_fail():
    ok = {"acc_a": [0.2], "acc_b": [0.25], "acc_c": [0.4], "acc_d": [0.6], "acc_sampled_a": [0.2], "acc_sampled_b": [0.2],
          "acc_sampled_c": [0.3], "acc_sampled_d": [0.5], "topic_a": [1.0], "topic_d": [0.9], "rows_b": [10], "rows_d": [5],
          "bug_share_c": [0.5], "bug_share_d": [0.1], "p_ok": 0.5, "rule": "paper"}
    bad = dict(ok, acc_d=[0.2], topic_d=[0.5], bug_share_d=[0.6])
    for c in A.CLAIMS:
        if c.check is None: continue
        assert c.check(ok)[0], c.id
        held, measured = c.check(bad)
        assert not held and measured, c.id
