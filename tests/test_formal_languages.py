"""The formal-language block: exact membership for all 18 FLaRe languages, the length-controlled DFA sampler (χ² against
enumeration, uniform lengths, log-space weights), negatives, next-symbol sets, splits and the FLaRe file format."""
from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

from iclrbench.blocks import formal_languages as fl

LANGS = fl.make_languages()
REGULAR = [n for n, l in LANGS.items() if l.dfa is not None]
NONREGULAR = [n for n, l in LANGS.items() if l.dfa is None]


def _max_len(k: int, budget: int = 25000) -> int:
    n, total = 0, 1
    while total + k ** (n + 1) <= budget:
        n += 1
        total += k ** n
    return n


def _all_strings(alphabet, n_max):
    for n in range(n_max + 1):
        yield from itertools.product(alphabet, repeat=n)


def test_there_are_18_languages_in_the_papers_classes():
    assert len(LANGS) == 18 and len(REGULAR) == 7
    assert Counter(l.kind for l in LANGS.values()) == {"regular": 7, "DCF": 3, "CF": 1, "CS": 7}


@pytest.mark.parametrize("name", REGULAR)
def test_regular_membership_agrees_with_the_dfa_on_every_short_string(name):
    lang = LANGS[name]
    n = _max_len(len(lang.alphabet))
    n_members = 0
    for s in _all_strings(lang.alphabet, n):
        assert lang.contains(s) == lang.dfa.accepts(s) == lang.dfa.trim().accepts(s), (name, s)
        n_members += lang.contains(s)
    assert n_members > 0


# ---- independent enumerators of the members of the non-regular languages, up to length n -------------------------
def _le(x: int, width: int):
    "little-endian bits of x padded to width, or None when it does not fit (written independently of the block)."
    b = format(x, "b")[::-1]
    return None if len(b) > width else tuple(b + "0" * (width - len(b)))


def _enum(name: str, n: int) -> set:
    out = set()
    bits = lambda m: itertools.product("01", repeat=m)
    if name == "majority":
        for m in range(1, n + 1):
            for ones in range(m // 2 + 1, m + 1):
                for pos in itertools.combinations(range(m), ones):
                    out.add(tuple("1" if i in pos else "0" for i in range(m)))
    elif name in ("marked_reversal", "marked_copy", "odds_first"):
        f = {"marked_reversal": lambda w: w[::-1], "marked_copy": lambda w: w, "odds_first": lambda w: w[0::2] + w[1::2]}[name]
        for m in range((n - 1) // 2 + 1):
            for w in bits(m):
                out.add(w + ("#",) + tuple(f(w)))
    elif name == "bucket_sort":
        for m in range((n - 1) // 2 + 1):
            for w in itertools.product("12345", repeat=m):
                out.add(w + ("#",) + tuple(sorted(w)))
    elif name == "unmarked_reversal":
        for m in range(n // 2 + 1):
            for w in bits(m):
                out.add(w + w[::-1])
    elif name == "missing_duplicate":
        for m in range(1, n // 2 + 1):
            for w in bits(m):
                ww = list(w + w)
                for i, a in enumerate(ww):
                    if a == "1":
                        out.add(tuple(ww[:i] + ["_"] + ww[i + 1:]))
    elif name == "stack_manipulation":
        def grow(prefix, stack, ops_allowed):
            if len(prefix) + 1 + len(stack) <= n:
                out.add(prefix + ("#",) + tuple(reversed(stack)))
            if len(prefix) >= n:
                return
            if not ops_allowed:                    # still reading the initial stack
                for b in "01":
                    grow(prefix + (b,), stack + [b], False)
            for b in "01":
                grow(prefix + ("PUSH", b), stack + [b], True)
            if stack:
                grow(prefix + ("POP",), stack[:-1], True)
        grow((), [], False)
    elif name in ("binary_addition", "binary_multiplication"):
        op, f = ("+", lambda x, y: x + y) if name == "binary_addition" else ("×", lambda x, y: x * y)
        for lx in range(1, n):
            for ly in range(1, n - lx):
                for lz in range(1, n - lx - ly - 1):
                    for x in range(2 ** lx):
                        for y in range(2 ** ly):
                            z = _le(f(x, y), lz)
                            if z is not None:
                                out.add(_le(x, lx) + (op,) + _le(y, ly) + ("=",) + z)
    elif name == "compute_sqrt":
        for lx in range(1, n):
            for lz in range(1, n - lx):
                for x in range(2 ** lx):
                    z = _le(math.isqrt(x), lz)
                    if z is not None:
                        out.add(_le(x, lx) + ("=",) + z)
    else:
        raise KeyError(name)
    return {s for s in out if len(s) <= n}


@pytest.mark.parametrize("name", NONREGULAR)
def test_nonregular_membership_equals_an_independent_enumeration(name):
    lang = LANGS[name]
    n = _max_len(len(lang.alphabet), 30000)
    members = {s for s in _all_strings(lang.alphabet, n) if lang.contains(s)}
    assert members and members == _enum(name, n), (name, sorted(members ^ _enum(name, n))[:5])


def test_worked_examples():
    c = lambda name, text: LANGS[name].contains(tuple(text.split()))
    assert c("modular_arithmetic", "3 - 4 * 2 = 3") and not c("modular_arithmetic", "3 - 4 * 2 = 4")   # (3-4)*2 = -2 ≡ 3
    assert c("cycle_navigation", "> > < < < = 4") and c("cycle_navigation", "0") and not c("cycle_navigation", "> 0")
    assert c("stack_manipulation", "0 1 PUSH 1 POP POP # 0") and not c("stack_manipulation", "POP # ")
    assert c("binary_addition", "1 1 + 1 0 0 = 0 0 1 0") and c("binary_addition", "0 + 0 = 0 0 0")     # 3 + 1 = 4, LE
    assert c("binary_multiplication", "1 1 × 0 1 = 0 1 1 0") and not c("binary_multiplication", "1 1 × 0 1 = 1 1")  # 3·2 = 6
    assert c("compute_sqrt", "1 0 0 1 = 1 1") and not c("compute_sqrt", "1 0 0 1 = 0 1")                # √9 = 3
    assert c("dyck_2_3", "( [ ( ) ] ) [ ]") and not c("dyck_2_3", "( ( ( ( ) ) ) )") and not c("dyck_2_3", "( ]")
    assert c("missing_duplicate", "1 0 _ 0") and not c("missing_duplicate", "1 0 1 0")
    assert c("even_pairs", "") and c("even_pairs", "1") and not c("even_pairs", "1 0")
    assert fl.encode_binary(6) == ("0", "1", "1") and fl.decode_binary(("0", "1", "1", "0")) == 6


@pytest.mark.parametrize("name", list(LANGS))
def test_every_positive_sample_is_a_member_within_the_range(name):
    lang, rng = LANGS[name], np.random.default_rng(0)
    for lo, hi in ((0, 20), (41, 100), (150, 200)):
        for _ in range(15):
            s = lang.sample(rng, lo, hi)
            assert lo <= len(s) <= hi and lang.contains(s), (name, s)
        s, k = fl.sample_negative(lang, lo, hi, rng)
        assert lo <= len(s) <= hi and not lang.contains(s)


@pytest.mark.parametrize("name,n", [("even_pairs", 5), ("dyck_2_3", 6), ("modular_arithmetic", 5), ("cycle_navigation", 3)])
def test_length_controlled_sampler_matches_the_exact_conditional_distribution(name, n):
    lang = LANGS[name]
    ls = lang.length_sampler
    members = [s for s in itertools.product(lang.alphabet, repeat=n) if lang.contains(s)]
    exact = np.exp([ls.conditional_log_prob(s) for s in members])
    assert exact.sum() == pytest.approx(1.0, abs=1e-9)
    # β_{q0}(n) is the total automaton probability of the members of length n
    assert np.logaddexp.reduce([ls.log_prob(s) for s in members]) == pytest.approx(ls.log_beta[n, ls.dfa.start])
    rng = np.random.default_rng(1)
    N = 3000
    idx = {s: i for i, s in enumerate(members)}
    obs = np.bincount([idx[ls.sample_length(rng, n)] for _ in range(N)], minlength=len(members))
    assert chisquare(obs, exact * N).pvalue > 0.01
    if name == "even_pairs":     # locally uniform: "0 0 0 0 0" has p = (1/3)^6 · ..., different strings differ
        assert len(set(np.round(exact, 12))) > 1


def test_sampled_lengths_are_uniform_over_valid_lengths_and_weights_do_not_underflow():
    rep = LANGS["repeat_01"]
    valid = rep.length_sampler.valid_lengths(0, 30)
    assert valid == list(range(0, 31, 2))
    rng = np.random.default_rng(2)
    lens = [len(rep.sample(rng, 0, 30)) for _ in range(3200)]
    assert set(lens) <= set(valid)
    assert chisquare(np.bincount(lens, minlength=31)[valid]).pvalue > 0.01
    ls = LANGS["parity"].length_sampler
    assert ls.n_max == 500 and ls.log_beta.dtype == np.float64
    assert np.isfinite(ls.log_beta[500, ls.dfa.start]) and ls.log_beta[500, ls.dfa.start] < math.log(np.finfo(np.float32).tiny)  # float32 underflows
    assert len(ls.sample(rng, 500, 500)) == 500


def test_negative_sampler_perturbation_share_edits_and_rejection():
    lang, rng = LANGS["parity"], np.random.default_rng(3)
    props = [fl.propose_negative(lang, 0, 40, rng) for _ in range(4000)]
    share = np.mean([k is not None for _, k in props])
    assert abs(share - 0.5) < 0.03
    ks = np.array([k for _, k in props if k is not None])
    assert ks.min() >= 1 and abs(ks.mean() - 2.0) < 0.15            # Geometric(0.5) on {1, 2, ...}
    ds = fl.sample_dataset(lang, 600, 0, 40, rng)
    assert all(lang.contains(s) == bool(y) for s, y in zip(ds.strings, ds.labels))
    assert abs(np.mean(ds.labels) - 0.5) < 0.06
    # an edit never leaves [lo, hi] and a replacement always changes the symbol
    for _ in range(300):
        s = list(lang.sample(rng, 3, 6)); t = list(s)
        fl.random_edit(t, lang.alphabet, 3, 6, rng)
        assert 3 <= len(t) <= 6 and t != s


def test_next_symbol_sets_are_consistent_with_the_language():
    rng = np.random.default_rng(4)
    for name, lang in LANGS.items():
        if not lang.has_next_symbols:
            with pytest.raises(ValueError, match="next-symbol"):
                lang.next_symbols(lang.sample(rng, 0, 10))
            continue
        for _ in range(10):
            s = lang.sample(rng, 0, 16)
            ns = lang.next_symbols(s)
            assert len(ns) == len(s) + 1 and fl.EOS in ns[-1]
            assert all(a in S for a, S in zip(s, ns)), name
            for t, S in enumerate(ns):                   # EOS exactly where the prefix is a member
                assert (fl.EOS in S) == lang.contains(s[:t]), (name, s[:t])
    # DFA languages: a ∈ NS(u) iff some member extends u·a (brute force, continuations up to 5 symbols)
    for name in ("even_pairs", "repeat_01", "dyck_2_3", "first"):
        lang = LANGS[name]
        for u in _all_strings(lang.alphabet, 3):
            if lang.dfa.trim().run(u) is None and not any(lang.contains(u + v) for v in _all_strings(lang.alphabet, 4)):
                continue
            S = lang.dfa.next_symbols(u)[-1]
            for a in lang.alphabet:
                assert (a in S) == any(lang.contains(u + (a,) + v) for v in _all_strings(lang.alphabet, 5)), (name, u, a)


def test_splits_hold_out_and_per_length_tests(tmp_path):
    preset = {"seed": 5, "train": (200, 0, 10), "validation_short": (50, 0, 10), "validation_long": (50, 0, 20),
              "test": (3, 0, 30), "test_short_held_out": (60, 0, 10)}
    sp = fl.make_splits("majority", preset)
    seen = set(sp["train"].strings) | set(sp["validation_short"].strings) | set(sp["validation_long"].strings)
    assert not seen & set(sp["test_short_held_out"].strings)
    assert Counter(sp["test"].lengths.tolist()) == {n: 3 for n in range(31)}
    assert max(sp["validation_long"].lengths) <= 20 and max(sp["train"].lengths) <= 10
    again = fl.make_splits("majority", preset)
    assert again["train"].strings == sp["train"].strings                       # same seed, same strings
    assert fl.SPLIT_PRESETS["paper"]["train"] == (10000, 0, 40) and fl.SPLIT_PRESETS["paper"]["seed"] == 123456789
    ds, ns = fl.read_flare(fl.write_flare(sp["train"], tmp_path / "train", LANGS["majority"]))
    assert ds.strings == sp["train"].strings and ds.labels == sp["train"].labels
    pos = [s for s, y in zip(sp["train"].strings, sp["train"].labels) if y]
    assert ns == [LANGS["majority"].next_symbols(s) for s in pos]
    assert (tmp_path / "train" / "main.tok").read_text().splitlines()[0] == " ".join(sp["train"].strings[0])


def test_bad_parameters_raise_value_errors():
    with pytest.raises(ValueError, match="language"):
        fl.get_language("klingon")
    with pytest.raises(ValueError, match="lo"):
        LANGS["parity"].length_sampler.valid_lengths(10, 5)
    with pytest.raises(ValueError, match="length range"):
        LANGS["parity"].sample(np.random.default_rng(0), 5, 2)
    with pytest.raises(ValueError, match="perturbation_probability"):
        fl.sample_negative(LANGS["parity"], 0, 5, np.random.default_rng(0), perturbation_probability=1.5)
    with pytest.raises(ValueError, match="no member"):
        LANGS["repeat_01"].length_sampler.sample_length(np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="preset"):
        fl.make_splits("parity", "nope")
    with pytest.raises(ValueError, match="delta"):
        fl.DFA(("a",), 1, 0, {0}, {(0, "b"): 0})
