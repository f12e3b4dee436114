"""Library tests for DTM (Kim, Heo & Han, ICLR 2025): token morphing, the dynamic schedule, the DTM loss, the data
and teacher of the miniature, the real-model path on a tiny random HF ViTModel, and the smoke run."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import iclrbench.papers.dtm as dtm


def test_one_merge_step_by_hand():
    # [CLS, a, a', b, b']: alternating split A = {CLS, a', b'}, B = {a, b}; r = 2 merges a'→a and b'→b
    x = torch.tensor([[[0., 0., 1.], [1., 0., 0.], [.8, .2, 0.], [0., 1., 0.], [.1, .9, 0.]]])
    size = torch.tensor([[[1.], [3.], [1.], [1.], [1.]]])           # token a already stands for 3 originals
    xm, sz, src = dtm.morph_step(x, size, torch.eye(5)[None], r=2)
    assert src[0].tolist() == [[1, 0, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 1, 1]]
    assert sz[0, :, 0].tolist() == [1.0, 4.0, 2.0]
    assert torch.allclose(xm[0, 1], (3 * x[0, 1] + x[0, 2]) / 4)     # size-weighted, not the plain mean
    assert torch.allclose(xm[0, 2], (x[0, 3] + x[0, 4]) / 2) and torch.equal(xm[0, 0], x[0, 0])


@pytest.mark.parametrize("split", ["alternate", "random"])
def test_morph_partitions_tokens_protects_cls_and_caps_r(split):
    g = torch.Generator().manual_seed(0)
    v = torch.randn(4, 65, 8)
    v[:, 0] = v[:, 1]                                                 # CLS identical to a patch token: still never merged
    for r, k in [(1, 1), (5, 3), (40, 1), (32, 6), (8, 12)]:
        mo = dtm.morph(v, r, k, split=split, generator=g)
        M = mo.source
        assert torch.all(M.sum(1) == 1)                               # every original token in exactly one group
        assert torch.all(M[:, 0, 0] == 1) and torch.all(M[:, 0].sum(-1) == 1)   # CLS alone, first
        n, expect = 65, 65
        for _ in range(k):
            expect -= min(r, (expect - 1) // 2)
        assert M.shape[1] == expect                                   # ToMe cap r ≤ ⌊(n−1)/2⌋ per iteration
        # ToMe's size-weighted merged tokens equal the plain group means of the originals through M
        assert torch.allclose(mo.tokens, M @ v / M.sum(-1, keepdim=True), atol=1e-5)
        assert torch.equal(mo.size[..., 0], M.sum(-1))
    assert torch.equal(dtm.morph(v, 0, 5).source, torch.eye(65).expand(4, 65, 65))
    a = dtm.morph(v, 4, 3, split="random", generator=torch.Generator().manual_seed(7)).source
    b = dtm.morph(v, 4, 3, split="random", generator=torch.Generator().manual_seed(7)).source
    assert torch.equal(a, b)


def test_morph_merges_similar_tokens_first():
    # two tight clusters of tokens: with r below the cluster sizes, no group mixes the clusters
    torch.manual_seed(0)
    base = torch.tensor([[1., 0, 0, 0], [0, 1., 0, 0]])
    lab = (torch.arange(16) // 2) % 2              # both clusters in both halves of the alternating split
    v = (base[lab] + 0.05 * torch.randn(16, 4))[None]
    v = torch.cat([torch.tensor([[[0., 0, 0, 1]]]), v], 1)
    M = dtm.morph(v, 3, 2).source[0]
    for row in M[1:]:
        members = torch.nonzero(row)[:, 0] - 1
        assert len(set(lab[members].tolist())) == 1


def test_schedule_rule_by_hand_and_dynamic_draws():
    assert dtm.schedule_r(47, 6, 48) == 8 and dtm.schedule_r(44, 6, 48) == 8     # ⌈44/6⌉·6 = 48 ≤ 48
    assert dtm.schedule_r(45, 6, 46) == 7                                          # ⌈45/6⌉·6 = 48 > 46 → ⌊45/6⌋
    assert dtm.schedule_r(0, 3, 48) == 0
    rng = np.random.default_rng(0)
    draws = [dtm.dynamic_schedule(48, 6, 2, rng) for _ in range(3000)]
    rs = np.array([[r for r, _ in d] for d in draws]); ks = np.array([[k for _, k in d] for d in draws])
    assert ks.min() == 1 and ks.max() == 6 and rs.min() == 0 and np.all(rs * ks <= 48)
    assert abs((rs == 0).mean() - 1 / 49) < 0.01                                   # r = 0 iff n = 0
    assert dtm.static_schedule(32, 3, 2, 48) == [(11, 3), (11, 3)]


def test_dtm_loss_tokenwise_case_engine_formula_and_group_means():
    torch.manual_seed(0)
    u, v = 3 * torch.randn(2, 9, 5), 3 * torch.randn(2, 9, 5)
    d = (u - v).abs()
    engine = torch.where(d < 2.0, 0.5 * d ** 2 / 2.0, d - 1.0).mean(-1).mean()    # DTM's smooth-L1, per patch then mean
    assert torch.allclose(dtm.dtm_loss(u, v, schedule=[(0, 1), (0, 1)]), engine)
    assert torch.allclose(dtm.smooth_l1(u, v), engine)
    # the same M on both sides: identical tokens give zero loss for any schedule
    assert dtm.dtm_loss(v.clone(), v, schedule=[(3, 2), (4, 1)]) == 0
    M = dtm.morph(v, 2, 2).source
    gm = dtm.group_mean(u, M)
    for b in range(2):
        for row in M[b]:
            idx = torch.nonzero(row)[:, 0]
            assert torch.allclose(gm[b, idx], u[b, idx].mean(0).expand(len(idx), -1), atol=1e-5)


def test_dtm_loss_gradient_matches_finite_differences_and_skips_the_teacher():
    torch.manual_seed(1)
    u = torch.randn(1, 7, 3, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 7, 3, dtype=torch.float64, requires_grad=True)
    sched = [(2, 2), (1, 1)]
    loss = dtm.dtm_loss(u, v, schedule=sched)
    loss.backward()
    assert v.grad is None                                              # the teacher never gets a gradient
    eps, num = 1e-6, torch.zeros_like(u)
    with torch.no_grad():
        for i in range(7):
            for c in range(3):
                up, dn = u.clone(), u.clone()
                up[0, i, c] += eps; dn[0, i, c] -= eps
                num[0, i, c] = (dtm.dtm_loss(up, v, schedule=sched) - dtm.dtm_loss(dn, v, schedule=sched)) / (2 * eps)
    assert torch.allclose(u.grad, num, atol=1e-6)


def test_shape_images_regions_and_labels():
    d = dtm.shape_images(20, 3)
    assert d.images.shape == (20, 3, 32, 32) and d.images.min() >= 0 and d.images.max() <= 1
    e = dtm.shape_images(20, 3)
    assert np.array_equal(d.images, e.images) and np.array_equal(d.regions, e.regions)
    # per-patch region = majority vote of the pixel regions in the 4×4 patch
    for i in range(3):
        for t in (0, 27, 63):
            r, c = divmod(t, 8)
            block = d.pixel_regions[i, 4 * r:4 * r + 4, 4 * c:4 * c + 4].ravel()
            assert d.regions[i, t] == np.bincount(block, minlength=4).argmax()
            assert np.allclose(d.colours[i, t], d.images[i, :, 4 * r:4 * r + 4, 4 * c:4 * c + 4].mean((1, 2)), atol=1e-6)
    assert set(np.unique(d.labels)) <= {0, 1, 2} and set(np.unique(d.regions)) <= {0, 1, 2, 3}


def test_noisy_teacher_scale_and_pilot_mechanism():
    d = dtm.shape_images(60, 0)
    te = dtm.make_teacher(1.5, seed=0)
    z = dtm.unit_noise(60, 65, dtm.TEACHER_DIM, 0, 0)
    v = te.tokens(d, z)
    clean = te.clean(d.regions, d.colours)
    assert np.allclose(clean[:, 0], clean[:, 1:].mean(1), atol=1e-5)                  # CLS = mean of patch targets
    assert abs((v - clean).std() / (1.5 * te.scale) - 1) < 0.02                         # σ_n in prototype norms
    assert dtm.make_teacher(0.0, seed=0).tokens(d, z).tolist() == clean.tolist()
    # morphing the teacher's tokens raises their prototype accuracy and consistency (the pilot's mechanism)
    s0 = dtm.pilot_scores(v, d.regions, te.P, 0, 4)
    s48 = dtm.pilot_scores(v, d.regions, te.P, 48, 4)
    assert s48["accuracy"] > s0["accuracy"] + 0.03 and s48["consistency"] > s0["consistency"] + 0.03
    # the diagnostics of the matching: a noise-free teacher's groups stay inside regions and its scores see them;
    # at σ_n = 1.5 the same-region and different-region scores are within a fifth of their spread
    clean_s = dtm.pilot_scores(clean, d.regions, te.P, 32, 4)
    assert s0["purity"] == 1.0 and clean_s["purity"] > 0.98 and 0 <= s48["purity"] <= 1
    sig0, sig = dtm.matching_signal(clean, d.regions), dtm.matching_signal(v, d.regions)
    assert sig0["cos_same"] - sig0["cos_diff"] > 0.5 and abs(sig["cos_same"] - sig["cos_diff"]) < 0.2 * sig["cos_std"]
    rate = np.mean([(r[:, None] == r[None, :]).sum() - len(r) for r in d.regions]) / (64 * 63)
    assert abs(sig["same_pair_rate"] - rate) < 1e-6


def test_real_model_path_on_tiny_hf_vit():
    from iclrbench.blocks.hf import tiny_vit_model
    student, teacher = tiny_vit_model(0).train(), tiny_vit_model(1)
    for q in teacher.parameters(): q.requires_grad_(False)
    head = torch.nn.Linear(64, 64)
    x = torch.rand(2, 3, 32, 32)
    mask = dtm.block_masks(2, 8, 8, 0.4, rng=0)
    u, v = dtm.student_teacher_tokens(student, teacher, x, mask, head)
    assert u.shape == v.shape == (2, 65, 64) and not v.requires_grad
    assert torch.allclose(dtm.dtm_loss(u, v, schedule=[(0, 1)]), F.smooth_l1_loss(u, v, beta=2.0))
    loss, info = dtm.dtm_loss(u, v, L=2, n_max=48, k_max=6, rng=np.random.default_rng(3), return_info=True)
    loss.backward()
    assert all(q.grad is None for q in teacher.parameters())
    assert student.embeddings.mask_token.grad is not None and head.weight.grad.abs().sum() > 0
    M = dtm.morph(v, 10, 3).source
    assert torch.all(M.sum(1) == 1) and torch.all(M[:, 0, 0] == 1) and torch.all(M[:, 0].sum(-1) == 1)
    # a timm-style student (forward_features) through the same adapter, with a teacher callable
    tv = dtm.make_student(0)
    u2, v2 = dtm.student_teacher_tokens(tv, lambda im: teacher(pixel_values=im).last_hidden_state[..., :32], x, mask, tv.head)
    assert u2.shape == v2.shape == (2, 65, 32)


def test_bad_parameters_raise():
    v = torch.randn(1, 9, 4)
    with pytest.raises(ValueError, match="split"): dtm.morph(v, 1, 1, split="checkerboard")
    with pytest.raises(ValueError, match="'r'"): dtm.morph(v, -1, 1)
    with pytest.raises(ValueError, match="'k'"): dtm.schedule_r(4, 0, 8)
    with pytest.raises(ValueError, match="n_max"): dtm.dynamic_schedule(-1, 2, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="student_tokens"): dtm.dtm_loss(torch.randn(1, 8, 4), v)
    with pytest.raises(ValueError, match="sigma_n"): dtm.make_teacher(-1.0)
    with pytest.raises(ValueError, match="method"): dtm.train_student("mae", None, None, epochs=1, seed=0)
    with pytest.raises(ValueError, match="epochs"): dtm.run("smoke", epochs=0)


def test_smoke_run(smoke_result):
    r = smoke_result("dtm")
    m = r.metrics
    assert len(m["probe_dtm"]) == len(m["probe_tokenwise"]) == 3
    # pilot: morphing raises the noisy teacher's token accuracy on every seed (held-out of training: teacher only)
    assert all(a > b for a, b in zip(m["pilot_acc_n48"], m["pilot_acc_n0"]))
    assert all(f > 0.05 for f in m["merged_fraction_dtm"]) and all(f == 0 for f in m["merged_fraction_tokenwise"])
    assert {c.id for c in r.claims} >= {"pilot-consistency", "dtm-vs-tokenwise"}
    assert r.artefacts["history_dtm"][0]["epoch"] == [1, 2, 3, 4]
    # the reference points of the image probe: majority-class rate of the test labels and the untrained student
    assert all(1 / 3 <= q <= 1 for q in m["majority_rate"]) and all(0 <= q <= 1 for q in m["probe_init"])
