"""Tests of iclrbench.blocks.speech: the formant synthesiser's factors and ground truth, features, HuBERT-lite."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from iclrbench.blocks import speech as sp
from iclrbench.core.runtime import torch_threads


@pytest.fixture(autouse=True)
def _one_torch_thread():
    "Small networks on few cores run many times faster on one thread (DESIGN.md)."
    with torch_threads(1):
        yield


def _lpc_formants(x: np.ndarray, order: int = 10, sr: int = sp.SR) -> np.ndarray:
    "Formant estimates from LPC roots (pre-emphasis, Hamming window), sorted, bandwidth < 500 Hz."
    x = np.asarray(x, float) * np.hamming(len(x))
    x = np.append(x[0], x[1:] - 0.63 * x[:-1])
    r = np.correlate(x, x, "full")[len(x) - 1:len(x) + order]
    a = scipy.linalg.solve_toeplitz(r[:-1], -r[1:])
    roots = np.roots(np.r_[1, a])
    roots = roots[np.imag(roots) > 0]
    f, bw = np.angle(roots) * sr / (2 * np.pi), -np.log(np.abs(roots)) * sr / np.pi
    return np.sort(f[(f > 150) & (bw < 500)])


def _f0_autocorr(x: np.ndarray, sr: int = sp.SR) -> float:
    ac = np.correlate(x, x, "full")[len(x) - 1:]
    lo, hi = sr // 400, sr // 60
    return sr / (lo + int(np.argmax(ac[lo:hi])))


@pytest.mark.parametrize("vowel,f0", [("a", 120.0), ("i", 200.0), ("u", 150.0)])
def test_a_vowels_measured_f0_and_formants_match_the_request(vowel, f0):
    c = sp.Content("phones", (sp.PHONE_NAMES.index(vowel),), (0.5,), (0.0,))
    u = sp.synthesize(c, sp.Style(f0, "flat", 1.0), sp.Speaker(0, 1.0, 0.0), seed=1, jitter=0.0)
    seg = u.wav[int(0.3 * sp.SR):int(0.45 * sp.SR)]
    assert abs(_f0_autocorr(seg) / f0 - 1) < 0.03
    want = np.asarray(sp.PHONES[vowel])
    got = _lpc_formants(seg)
    for k in range(2):                                               # F1 and F2 within 8 %
        assert np.min(np.abs(got / want[k] - 1)) < 0.08, (vowel, got, want)
    # a speaker with α = 1.1 moves F2 up by ~10 %
    u2 = sp.synthesize(c, sp.Style(f0, "flat", 1.0), sp.Speaker(1, 1.1, 0.0), seed=1, jitter=0.0)
    g2 = _lpc_formants(u2.wav[int(0.3 * sp.SR):int(0.45 * sp.SR)])
    assert np.min(np.abs(g2 / (1.1 * want[1]) - 1)) < 0.06


def test_boundaries_and_frame_labels_agree_with_the_samples():
    u = sp.make_utterance(3, seed=5)
    lab = sp.frame_labels(u)
    x = u.wav.astype(float)
    inside = np.zeros(len(x), bool)
    for s, e in u.unit_bounds: inside[int(s * sp.SR):int(e * sp.SR)] = True
    # silence before the first onset and after the last offset is at the noise floor (−30 dB)
    rms_in = np.sqrt(np.mean(x[inside] ** 2))
    lead = x[: int(u.unit_bounds[0, 0] * sp.SR) - 100]
    tail = x[int(u.unit_bounds[-1, 1] * sp.SR) + 100:]
    assert np.sqrt(np.mean(lead ** 2)) < 0.1 * rms_in and np.sqrt(np.mean(tail ** 2)) < 0.1 * rms_in
    # frame labels read at the frame centres, by hand
    for t in range(0, u.n_frames, 7):
        c = (t + 0.5) * sp.HOP / sp.SR
        hit = [i for i, (s, e) in enumerate(u.unit_bounds) if s <= c < e]
        assert lab["unit_index"][t] == (hit[0] if hit else -1)
        assert lab["unit"][t] == (u.content.units[hit[0]] if hit else -1)
        if not hit: assert lab["f0_bin"][t] == sp.SILENCE
    # voiced frames carry the F0 bin of the requested F0; fricative frames are unvoiced
    v = lab["f0_bin"] >= 0
    ci = ((np.arange(u.n_frames) + 0.5) * sp.HOP).astype(int)
    assert np.array_equal(lab["f0_bin"][v], sp.f0_bin(u.f0[ci][v]))
    fric = [(s, e) for s, e, name in u.segments if name in sp.FRICATIVES]
    for s, e in fric:
        t = int(((s + e) / 2) * sp.FRAME_RATE)
        assert lab["f0_bin"][t] == sp.UNVOICED
    # reference boundaries: first onset, gap midpoints, last offset; strictly increasing
    tb = sp.true_boundaries(u)
    assert len(tb) == len(u.content.units) + 1 and np.all(np.diff(tb) > 0)
    assert tb[0] == u.unit_bounds[0, 0] and tb[-1] == u.unit_bounds[-1, 1]


def test_changing_one_factor_leaves_the_other_labels_unchanged():
    rng = np.random.default_rng(0)
    c = sp.sample_syllable_content(rng)
    st = sp.Style(140.0, "wavy", 1.1)
    a = sp.synthesize(c, st, sp.Speaker(0, 0.92, -3.0), seed=4)
    b = sp.synthesize(c, st, sp.Speaker(5, 1.08, 3.0), seed=4)                         # timbre changed
    la, lb = sp.frame_labels(a), sp.frame_labels(b)
    assert np.array_equal(la["unit"], lb["unit"]) and np.array_equal(la["f0_bin"], lb["f0_bin"])
    assert not np.array_equal(la["speaker"], lb["speaker"]) and not np.allclose(a.wav, b.wav)
    d = sp.synthesize(c, sp.Style(220.0, "falling", 1.1), sp.Speaker(0, 0.92, -3.0), seed=4)   # style (F0) changed
    ld = sp.frame_labels(d)
    assert np.array_equal(la["unit"], ld["unit"]) and np.array_equal(la["speaker"], ld["speaker"])
    assert not np.array_equal(la["f0_bin"], ld["f0_bin"])
    # in a corpus, every factor has its own seed: weaker timbre leaves content and style exactly as they were
    c1, c2 = sp.make_corpus(6, seed=2), sp.make_corpus(6, seed=2, timbre_strength=0.3)
    for u1, u2 in zip(c1, c2):
        assert u1.content == u2.content and u1.style == u2.style and u1.speaker.id == u2.speaker.id
        assert u1.speaker.alpha != u2.speaker.alpha or u1.speaker.alpha == 1.0
    # Vevo's content: 8 phones from the 8-phone inventory, every frame of a phone labelled with its id
    cp = sp.make_corpus(3, seed=1, kind="phones")
    for u in cp:
        assert len(u.content.units) == 8 and set(u.content.units) <= set(range(8))
        lab = sp.frame_labels(u)
        assert set(np.unique(lab["unit"])) - {-1} <= set(u.content.units)


def test_speakers_and_styles_cover_the_card_ranges():
    spk = sp.make_speakers(8, seed=0)
    al, ti = [s.alpha for s in spk], [s.tilt_db for s in spk]
    assert np.isclose(min(al), 0.9) and np.isclose(max(al), 1.1) and np.isclose(min(ti), -4) and np.isclose(max(ti), 4)
    rng = np.random.default_rng(0)
    styles = [sp.sample_style(rng) for _ in range(200)]
    assert 100 <= min(s.f0_base for s in styles) and max(s.f0_base for s in styles) <= 250
    assert {s.contour for s in styles} == set(sp.CONTOURS)
    assert 0.8 <= min(s.rate for s in styles) and max(s.rate for s in styles) <= 1.25
    assert all(s.f0_base == pytest.approx(np.sqrt(100 * 250)) for s in (sp.sample_style(rng, 0.0) for _ in range(3)))


def test_log_mel_puts_a_tone_in_the_right_band_and_deltas_are_slopes():
    t = np.arange(8000) / sp.SR
    lm = sp.log_mel(np.sin(2 * np.pi * 1000 * t))
    assert lm.shape == (50, sp.N_MELS)
    fb = sp.mel_filterbank()
    centres = np.linspace(0, sp.SR / 2, fb.shape[1])[fb.argmax(axis=1)]
    assert abs(centres[lm[25].argmax()] - 1000) < 120
    assert np.all(fb.max(axis=1) > 0.5) and np.all(np.diff(centres) >= 0)         # every filter non-empty, in order
    ramp = np.outer(np.arange(20.0), [1.0, -2.0])
    assert np.allclose(sp.deltas(ramp)[3:-3], [1.0, -2.0])
    X = np.random.default_rng(0).normal(3, 2, (500, 4))
    Z = sp.Standardiser(X)(X)
    assert np.allclose(Z.mean(0), 0, atol=1e-5) and np.allclose(Z.std(0), 1, atol=1e-4)


def test_span_mask_rate_and_masked_inputs_are_invisible():
    rng = np.random.default_rng(0)
    frac = np.mean([sp.span_mask(200, rng).mean() for _ in range(200)])
    assert 0.35 < frac < 0.50                          # 1 − (1 − 0.5/5)^5 ≈ 0.41 of frames, spans overlapping
    torch.manual_seed(0)
    m = sp.HubertLite(in_dim=6, d=16, n_heads=2, n_targets=5).eval()
    x = torch.randn(1, 25, 6)
    mask = torch.zeros(1, 25, dtype=torch.bool); mask[0, 8:14] = True
    y = x.clone(); y[0, 8:14] = torch.randn(6, 6) * 10
    assert torch.allclose(m.masked_logits(x, mask), m.masked_logits(y, mask))      # masked content cannot leak
    assert not torch.allclose(m.masked_logits(x), m.masked_logits(y))


def test_hubert_lite_learns_the_masked_targets():
    c = sp.make_corpus(24, seed=0)
    X = [sp.speech_features(u.wav) for u in c]
    sc = sp.Standardiser(np.concatenate(X))
    X = [sc(x) for x in X]
    km = sp.kmeans_targets(np.concatenate(X), 12, seed=0)
    tg = [km.predict(x) for x in X]
    m, losses = sp.train_hubert_lite(X, tg, steps=60, batch=8, crop=48, seed=0, d=32, n_heads=2, ff=64, n_layers=2)
    assert np.mean(losses[:5]) > np.log(12) - 0.3 and np.mean(losses[-10:]) < 0.75 * np.mean(losses[:5])
    m2, l2 = sp.train_hubert_lite(X, tg, steps=3, batch=8, crop=48, seed=0, d=32, n_heads=2, ff=64, n_layers=2)
    assert l2 == losses[:3]                                                        # same seed, same numbers


def test_bad_parameters_raise_value_errors_naming_them():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="'n_units'"): sp.sample_phone_content(rng, 0)
    with pytest.raises(ValueError, match="'strength'"): sp.sample_style(rng, 1.5)
    with pytest.raises(ValueError, match="'kind'"): sp.make_corpus(2, kind="words")
    with pytest.raises(ValueError, match="'contour'"): sp.contour_multiplier("zigzag", np.zeros(3))
    c = sp.sample_syllable_content(rng)
    with pytest.raises(ValueError, match="'jitter'"): sp.synthesize(c, sp.Style(120, "flat", 1), sp.Speaker(0, 1, 0), jitter=0.5)
    with pytest.raises(ValueError, match="'mask_prob'"): sp.span_mask(10, rng, mask_prob=0.0)
