"""Tests of the Vevo paper module: the VQ-VAE tokenizer, dead-code reset, factor information, the probe, the
bottleneck mechanism on a toy, the two stages, the real-model path and the smoke run."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_mutual_info_score

from iclrbench.core.runtime import torch_threads
from iclrbench.papers import vevo as vv


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with torch_threads(1):
        yield


def _clusters(n=150, centres=((-3, 0), (3, 0), (0, 3), (0, -3)), sd=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(c, sd, (n, len(c))) for c in centres]).astype(np.float32)
    return X, np.repeat(np.arange(len(centres)), n)


def test_lookup_is_nearest_unit_code_and_gradients_pass_straight_through():
    torch.manual_seed(0)
    m = vv.VQTokenizer(16, 5)
    x = torch.randn(3, 7, 5)
    rec, codes, vq, z = m(x)
    assert rec.shape == x.shape and codes.shape == (3, 7) and z.shape == (3, 7, 8)
    assert torch.allclose(z.norm(dim=-1), torch.ones(3, 7), atol=1e-6)
    assert torch.equal(codes, torch.cdist(z.reshape(-1, 8), m.codes_unit()).argmin(-1).reshape(3, 7))
    assert torch.equal(m.encode(x), codes)
    # the decoder's input is the code itself (forward value), the encoder still gets a gradient
    assert torch.allclose(m.decode(codes), rec, atol=1e-6)
    loss, _, _ = vv.vq_objective(m, x)
    loss.backward()
    assert m.encoder[0].weight.grad.abs().sum() > 0 and m.codebook.grad.abs().sum() > 0
    # VQ loss by hand: (1 + β) · mean ‖ẑ − ê_k‖² per element
    q = m.codes_unit()[codes]
    assert float(vq.detach()) == pytest.approx(1.25 * float(((q - z) ** 2).mean().detach()), rel=1e-5)


def test_training_separates_clusters_and_is_deterministic():
    X, y = _clusters()
    m1, log1 = vv.train_vq_tokenizer(X, 8, steps=150, batch=128, seed=3)
    m2, _ = vv.train_vq_tokenizer(X, 8, steps=150, batch=128, seed=3)
    c1, c2 = vv.vq_codes(m1, X), vv.vq_codes(m2, X)
    assert np.array_equal(c1, c2)                                       # same seed, same tokens
    assert all(len(set(y[c1 == k])) == 1 for k in set(c1))              # no code mixes two clusters
    assert np.mean(log1["loss"][-10:]) < 0.5 * np.mean(log1["loss"][:10])
    fi = vv.factor_information(c1, y, c1, y, acc_continuous=1.0)
    assert fi["acc"] == 1.0 and fi["score"] == pytest.approx(1.0)


def test_dead_codes_are_reset_to_batch_vectors():
    m = vv.VQTokenizer(5, 3)
    z = torch.nn.functional.normalize(torch.randn(10, 8), dim=-1)
    counts = torch.tensor([3.0, 0.0, 1.0, 0.0, 0.0])
    before = m.codebook.detach().clone()
    gen = torch.Generator(device="cpu").manual_seed(0)
    assert vv.reset_dead_codes(m, counts, z, gen) == 3
    after = m.codebook.detach()
    assert torch.equal(after[[0, 2]], before[[0, 2]])
    for k in (1, 3, 4):
        assert any(torch.allclose(after[k], zz) for zz in z)


def test_factor_information_by_hand_and_against_sklearn():
    # train: code 0 ↦ label 1 (2 of 3), code 1 ↦ label 0, code 2 never seen → overall majority (label 0: 3 of 5)
    fi = vv.factor_information(np.array([0, 0, 0, 1, 1]), np.array([1, 1, 0, 0, 0]),
                               np.array([0, 1, 2, 2]), np.array([1, 0, 0, 1]), acc_continuous=0.9)
    assert fi["acc"] == 0.75 and fi["chance"] == 0.5
    assert fi["score"] == pytest.approx((0.75 - 0.5) / (0.9 - 0.5))
    rng = np.random.default_rng(0)
    c, l = rng.integers(0, 12, 500), rng.integers(0, 4, 500)
    assert vv.factor_information(c, l)["ami"] == pytest.approx(adjusted_mutual_info_score(l, c))
    # random codes carry nothing held-out: accuracy near chance, AMI near 0
    c2, l2 = rng.integers(0, 12, 2000), rng.integers(0, 4, 2000)
    out = vv.factor_information(c, l, c2, l2, acc_continuous=1.0)
    assert abs(out["score"]) < 0.1 and abs(out["ami"]) < 0.01
    u = vv.codebook_usage(np.array([0, 0, 1, 1]), 4)
    assert u["usage"] == 0.5 and u["perplexity"] == pytest.approx(2.0)
    X = np.array([[0.0], [2.0], [10.0], [12.0]])
    assert vv.variance_explained(X, np.array([0, 0, 1, 1])) == pytest.approx(100 / 104)


def test_linear_probe_matches_sklearn_logistic_regression():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5)); y = (X @ rng.normal(size=(5, 3))).argmax(1)
    p = vv.LinearProbe(C=0.5).fit(X, y)
    s = LogisticRegression(C=0.5, max_iter=5000, tol=1e-10).fit(X, y)
    assert np.abs(p.W.cpu().numpy().T - s.coef_).max() < 1e-3
    assert np.mean(p.predict(X) == s.predict(X)) > 0.99


def test_the_bottleneck_keeps_the_largest_factor_first():
    "Toy premise: factor A (4 far-apart clusters) dominates factor B (4 close sub-clusters). K = 4 keeps A only."
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 3000), rng.integers(0, 4, 3000)
    big = np.array([[6, 0], [-6, 0], [0, 6], [0, -6]], float)
    small = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], float) * 0.8
    X = np.concatenate([big[a] + rng.normal(0, 0.15, (3000, 2)), small[b] + rng.normal(0, 0.15, (3000, 2))], 1)
    X = X.astype(np.float32)        # not standardised: per-dimension scaling would make B's dimensions as large as A's
    tr, te = slice(0, 2000), slice(2000, None)
    scores = {}
    for K in (4, 32):
        m, _ = vv.train_vq_tokenizer(X[tr], K, steps=300, batch=256, seed=0)
        c_tr, c_te = vv.vq_codes(m, X[tr]), vv.vq_codes(m, X[te])
        scores[K] = {f: vv.factor_information(c_tr, y[tr], c_te, y[te], 1.0)["score"] for f, y in (("A", a), ("B", b))}
    assert scores[4]["A"] > scores[4]["B"] + 0.4 and scores[4]["B"] < 0.2   # the small codebook spends its codes on A
    assert scores[32]["B"] > scores[4]["B"] + 0.3                            # B comes in as K grows


def test_bad_parameters_raise_naming_the_parameter():
    with pytest.raises(ValueError, match="'K'"): vv.VQTokenizer(1, 4)
    with pytest.raises(ValueError, match="'dim'"): vv.VQTokenizer(4, 0)
    with pytest.raises(ValueError, match="'steps'"): vv.train_vq_tokenizer(np.zeros((10, 2)), 4, steps=-1)
    with pytest.raises(ValueError, match="'x'"): vv.VQTokenizer(4, 3).encode(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="'labels'"): vv.factor_information(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="'K'"): vv.kmeans_tokenizer(np.zeros((3, 2)), 8)
    with pytest.raises(ValueError, match="'codebook_sizes'"): vv.parse_codebook_sizes("8,one")
    with pytest.raises(ValueError, match="'codebook_sizes'"): vv.run("smoke", codebook_sizes="1,8", progress=False)
    with pytest.raises(ValueError, match="'timbre_strength'"): vv.run("smoke", timbre_strength=1.5, progress=False)
    assert vv.parse_codebook_sizes("256, 8,32,8") == [8, 32, 256]


def test_stages_are_causal_learn_and_generate_the_right_shapes():
    torch.manual_seed(0)
    ar = vv.ContentStyleAR(3, 5, d=16, n_layers=1, n_heads=2, ff=32)
    seq = torch.as_tensor(ar.sequence(np.array([0, 1, 2, 1]), np.array([4, 3, 2, 1])))[None]
    seq2 = seq.clone(); seq2[0, -1] = ar.K_c
    assert torch.allclose(ar(seq)[0, :-1], ar(seq2)[0, :-1], atol=1e-6)
    # a copy task: content-style id = content id (+ 1): the AR model learns it
    rng = np.random.default_rng(0)
    cs = [rng.integers(0, 3, 6) for _ in range(40)]
    losses = vv.train_content_style_ar(ar, cs, [c + 1 for c in cs], steps=150, batch=8, lr=3e-3)
    assert np.mean(losses[-10:]) < 0.3 * np.mean(losses[:10])
    gen = torch.Generator(device="cpu").manual_seed(0)
    # inference on a training utterance split into reference (prompt) and source: the learned map is continued
    c0 = cs[0]
    out = vv.ar_generate(ar, c0[:3], c0[3:], c0[:3] + 1, gen, temperature=0.1)
    assert out.shape == (3,) and out.tolist() == (c0[3:] + 1).tolist()
    # flow matching: a token-dependent constant mel is learned and generated
    fm = vv.FlowMatchingAcoustic(3, n_mels=4, d=32, n_layers=1, n_heads=2, ff=64)
    table = np.array([[2, 0, 0, -2], [0, 2, -2, 0], [-2, 0, 2, 0]], np.float32)
    ids = [rng.integers(0, 3, 10) for _ in range(40)]
    fl = vv.train_flow_matching(fm, ids, [table[i] for i in ids], steps=300, batch=16, lr=3e-3)
    assert np.mean(fl[-20:]) < 0.5 * np.mean(fl[:20])
    mel = vv.fm_generate(fm, ids[0], table[ids[0]], np.array([0, 1, 2, 0]), gen, n_steps=16)
    assert mel.shape == (4, 4) and np.abs(mel - table[[0, 1, 2, 0]]).mean() < 0.6


def test_logmel_round_trip_and_chance_agreement():
    c = vv.vevo_corpus(4, seed=0)
    X, sc = vv.logmel_features([u.wav for u in c], 3)
    assert np.allclose(vv.logmel_to_features(X[3][:, :40], sc), X[3], atol=1e-3)
    assert vv.chance_agreement(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])) == pytest.approx(0.5 * 0.25 + 0.5 * 0.75)


def test_real_model_path_tokenises_tiny_hubert_features():
    pytest.importorskip("transformers")
    from iclrbench.blocks.hf import tiny_hubert_model
    c = vv.vevo_corpus(3, seed=1)
    H = vv.hf_frame_features(tiny_hubert_model(), [u.wav for u in c], layer=2)
    assert all(h.shape[1] == 32 and h.shape[0] > 10 for h in H)
    sc = vv.Standardiser(np.concatenate(H))
    tok, _ = vv.train_vq_tokenizer(np.concatenate([sc(h) for h in H]), 8, steps=30, batch=64)
    batch, pad = vv.pad_batch([sc(h) for h in H])
    ids = tok.encode(batch)
    assert ids.shape == pad.shape and int(ids.max()) < 8 and len(torch.unique(ids[~pad])) >= 2


def test_smoke_run_measures_every_factor_and_the_premise(smoke_result):
    r = smoke_result("vevo")
    m = r.metrics
    assert m["codebook_sizes"] == [8, 32, 256] and m["feature_sources"] == ["logmel"]
    for K in (8, 32, 256):
        for tok in ("vqvae", "kmeans"):
            assert m[f"logmel_{tok}_K{K}_usage"][0] > 0.5            # dead codes are reset: most codes in use
    # more codes keep more content and more timbre, for both tokenizers (held-out scores)
    for tok in ("vqvae", "kmeans"):
        assert m[f"logmel_{tok}_K256_content"][0] > m[f"logmel_{tok}_K8_content"][0]
        assert m[f"logmel_{tok}_K256_timbre"][0] > m[f"logmel_{tok}_K8_timbre"][0]
    # the continuous probe is the upper reference: far above chance for every factor
    for f in ("content", "style", "timbre"):
        assert m[f"logmel_probe_{f}"][0] > m[f"logmel_chance_{f}"][0] + 0.3
    assert {c.id: c.status for c in r.claims}["imitation-results"] == "not reproducible offline"
    assert len(r.artefacts["example"][0]["logmel"]) == 4 and len(r.artefacts["example_tokens"]) == 3
