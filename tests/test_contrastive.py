"""Shared contrastive block: NT-Xent by hand and against a direct loop, gradients, CLIP loss, the SimCLR step."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import iclrbench.blocks.contrastive as con


def _nt_xent_loop(z1, z2, t):
    "NT-Xent written pair by pair from Chen et al. (2020), Eq. 1."
    u = F.normalize(torch.cat([z1, z2]), dim=1)
    n2, n = len(u), len(z1)
    tot = 0.0
    for i in range(n2):
        j = (i + n) % n2
        den = sum(torch.exp(u[i] @ u[k] / t) for k in range(n2) if k != i)
        tot = tot - torch.log(torch.exp(u[i] @ u[j] / t) / den)
    return tot / n2


def test_nt_xent_by_hand():
    e = torch.eye(2)
    assert con.nt_xent(e, e).item() == pytest.approx(-math.log(math.exp(5) / (math.exp(5) + 2)), abs=1e-6)
    assert con.nt_xent(e, e, temperature=1.0).item() == pytest.approx(-math.log(math.e / (math.e + 2)), abs=1e-6)
    assert con.nt_xent(e[:1], e[1:]).item() == 0.0
    # scale-invariant (cosine similarities)
    z1, z2 = torch.randn(6, 4), torch.randn(6, 4)
    assert con.nt_xent(z1, z2).item() == pytest.approx(con.nt_xent(3 * z1, 0.5 * z2).item(), abs=1e-5)


@pytest.mark.parametrize("t", [0.2, 0.5, 1.0])
def test_nt_xent_equals_pairwise_loop(t):
    g = torch.Generator().manual_seed(1)
    z1, z2 = torch.randn(7, 5, generator=g, dtype=torch.float64), torch.randn(7, 5, generator=g, dtype=torch.float64)
    assert con.nt_xent(z1, z2, t).item() == pytest.approx(_nt_xent_loop(z1, z2, t).item(), rel=1e-10)
    # the two views play symmetric roles
    assert con.nt_xent(z1, z2, t).item() == pytest.approx(con.nt_xent(z2, z1, t).item(), rel=1e-10)


def test_nt_xent_gradient_matches_finite_differences():
    g = torch.Generator().manual_seed(2)
    z1 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: con.nt_xent(a, b, 0.2), (z1, z2))
    assert torch.autograd.gradcheck(lambda a, b: con.clip_loss(a, b, 0.3), (z1, z2))


def test_clip_loss_by_hand_and_bad_parameters():
    e = torch.eye(2)
    assert con.clip_loss(e, e).item() == pytest.approx(-math.log(math.exp(5) / (math.exp(5) + 1)), abs=1e-6)
    with pytest.raises(ValueError, match="'temperature'"):
        con.nt_xent(e, e, temperature=0.0)
    with pytest.raises(ValueError, match="'temperature'"):
        con.clip_loss(e, e, temperature=-1.0)
    with pytest.raises(ValueError, match="'z1'"):
        con.nt_xent(e, torch.eye(3))
    with pytest.raises(ValueError, match="'sigma'"):
        con.gaussian_jitter(-1.0)
    with pytest.raises(ValueError, match="'steps'"):
        con.train_simclr(torch.nn.Linear(2, 2), torch.randn(8, 2), con.gaussian_jitter(0.1), steps=-1)


def test_simclr_learns_invariance_to_what_the_augmentation_changes():
    torch.manual_seed(0)
    x = torch.randn(512, 2)

    def resample_second(v, g):   # keep coordinate 0 (jittered), replace coordinate 1 by fresh noise
        return torch.stack([v[:, 0] + 0.05 * torch.randn(len(v), generator=g), 3 * torch.randn(len(v), generator=g)], 1)

    def run(seed):
        torch.manual_seed(seed)
        m = torch.nn.Linear(2, 2)
        return m, con.train_simclr(m, x, resample_second, steps=120, batch_size=128, lr=1e-2, seed=seed)

    m, losses = run(0)
    w = m.weight.detach().abs()
    assert losses[-1] < losses[0] - 1.0
    assert w[:, 1].sum() < 0.2 * w[:, 0].sum()
    m2, losses2 = run(0)                                   # same seed, same numbers
    assert losses == losses2 and torch.equal(m.weight, m2.weight)


def test_simclr_step_uses_the_given_augmentation_and_generator():
    m = torch.nn.Linear(3, 3)
    opt = torch.optim.SGD(m.parameters(), lr=0.0)
    x = torch.randn(8, 3)
    calls = []

    def aug(v, g):
        calls.append(g)
        return v + torch.randn(v.shape, generator=g)

    g = torch.Generator().manual_seed(5)
    l1 = con.simclr_step(m, x, aug, opt, 0.2, g)
    l2 = con.simclr_step(m, x, aug, opt, 0.2, torch.Generator().manual_seed(5))
    assert len(calls) == 4 and calls[0] is g and l1 == pytest.approx(l2)
    ident = con.simclr_step(m, x, lambda v, g: v, opt, 0.2)          # identical views: positives at cosine 1
    assert ident < l1


# --- the CLIP-style core (added with AlignCLIP): towers, logit scale, InfoNCE with labels, alignment metrics ---

def _info_nce_loop(a, b, tau, labels=None, reduction="sum"):
    "InfoNCE written row by row: -Σ_{j positive} log softmax, averaged over rows, both directions."
    a, b = F.normalize(a, dim=1), F.normalize(b, dim=1)
    n = len(a)
    pos = [[(i == j) or (labels is not None and labels[i] >= 0 and labels[i] == labels[j]) for j in range(n)] for i in range(n)]
    tot = 0.0
    for x, y in ((a, b), (b, a)):
        for i in range(n):
            den = sum(torch.exp(tau * x[i] @ y[k]) for k in range(n))
            tot = tot - sum(torch.log(torch.exp(tau * x[i] @ y[j]) / den) for j in range(n) if pos[i][j]) / n
    return tot if reduction == "sum" else tot / 2


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("labels", [None, [0, 1, 0, -1, 2, -1]])
def test_info_nce_equals_row_loop(reduction, labels):
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(6, 4, generator=g, dtype=torch.float64), torch.randn(6, 4, generator=g, dtype=torch.float64)
    y = None if labels is None else torch.tensor(labels)
    got = con.info_nce(a, b, 7.0, labels=y, reduction=reduction).item()
    assert got == pytest.approx(_info_nce_loop(a, b, 7.0, labels, reduction).item(), rel=1e-10)


def test_info_nce_conventions_and_gradients():
    g = torch.Generator().manual_seed(4)
    a = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    s, m = con.info_nce(a, b, 10.0), con.info_nce(a, b, 10.0, reduction="mean")
    assert s.item() == pytest.approx(2 * m.item(), rel=1e-12)
    assert m.item() == pytest.approx(con.clip_loss(a, b, temperature=0.1).item(), rel=1e-10)
    # all labels distinct = no labels
    assert con.info_nce(a, b, 10.0, labels=torch.arange(5)).item() == pytest.approx(s.item(), rel=1e-12)
    y = torch.tensor([0, 0, 1, -1, 1])
    assert torch.autograd.gradcheck(lambda u, v: con.info_nce(u, v, 3.0, labels=y), (a, b))
    # the logit scale gets a gradient through LogitScale
    ls = con.LogitScale()
    con.info_nce(a.detach(), b.detach(), ls()).backward()
    assert ls.log_scale.grad is not None and torch.isfinite(ls.log_scale.grad)


def test_logit_scale_init_and_clamp():
    ls = con.LogitScale()
    assert float(ls().detach()) == pytest.approx(1 / 0.07, rel=1e-6)
    with torch.no_grad(): ls.log_scale.fill_(10.0)
    assert float(ls().detach()) == pytest.approx(100.0, rel=1e-5)          # clamped at ln 100 in the forward
    ls.clamp_()
    assert float(ls.log_scale) == pytest.approx(math.log(100), rel=1e-6)
    with pytest.raises(ValueError, match="'init'"):
        con.LogitScale(init=-1.0)


def test_tower_normalised_and_shared_weights():
    torch.manual_seed(0)
    img = con.Tower(7, out_dim=5, hidden=8, n_blocks=2)
    txt = con.Tower(3, share_with=img)
    assert txt.out_dim == 5 and txt.head is img.head and txt.ln is img.ln and txt.blocks is img.blocks
    zi, zt = img(torch.randn(4, 7)), txt(torch.randn(4, 3))
    assert torch.allclose(zi.norm(dim=1), torch.ones(4), atol=1e-6) and torch.allclose(zt.norm(dim=1), torch.ones(4), atol=1e-6)
    con.info_nce(zi, zt, 10.0).backward()
    assert img.stem.weight.grad is not None and txt.stem.weight.grad is not None
    shared = {id(p) for p in img.parameters()} & {id(p) for p in txt.parameters()}
    assert len(shared) == len(list(img.parameters())) - 2       # all but img's own stem (weight, bias)
    with pytest.raises(ValueError, match="'in_dim'"):
        con.Tower(0)
    with pytest.raises(ValueError, match="'share_with'"):
        con.Tower(3, share_with=torch.nn.Linear(2, 2))


def test_info_nce_bad_parameters():
    e = torch.eye(3)
    with pytest.raises(ValueError, match="'reduction'"):
        con.info_nce(e, e, 5.0, reduction="none")
    with pytest.raises(ValueError, match="'logit_scale'"):
        con.info_nce(e, e, -1.0)
    with pytest.raises(ValueError, match="'labels'"):
        con.info_nce(e, e, 5.0, labels=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="'a' and 'b'"):
        con.info_nce(e, torch.eye(2), 5.0)


def test_alignment_metrics_against_numpy():
    import numpy as np
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(30, 6)) + 1.0, rng.normal(size=(30, 6)) - 0.5
    na, nb = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
    assert con.modality_gap(a, b) == pytest.approx(np.linalg.norm(na.mean(0) - nb.mean(0)), rel=1e-9)
    assert con.paired_cosine(a, b) == pytest.approx((na * nb).sum(1).mean(), rel=1e-9)
    from scipy.spatial.distance import pdist
    assert con.uniformity(a) == pytest.approx(np.log(np.exp(-2 * pdist(na, "sqeuclidean")).mean()), rel=1e-9)
    # zero-shot and R@k by brute force
    y = rng.integers(0, 4, size=30)
    prompts = rng.normal(size=(4, 6))
    npm = prompts / np.linalg.norm(prompts, axis=1, keepdims=True)
    assert con.zero_shot_accuracy(a, prompts, y) == pytest.approx(((na @ npm.T).argmax(1) == y).mean())
    S = na @ nb.T
    for k in (1, 3):
        want = np.mean([(np.argsort(-S[i])[:k] == i).any() for i in range(30)])
        assert con.recall_at_k(a, b, k=k) == pytest.approx(want)
    # invariances: scaling rows does not change anything; identical modalities have no gap and R@1 = 1
    assert con.modality_gap(3 * a, b) == pytest.approx(con.modality_gap(a, b), rel=1e-9)
    assert con.modality_gap(a, a) == pytest.approx(0.0, abs=1e-12) and con.recall_at_k(a, a) == 1.0
    with pytest.raises(ValueError, match="'k'"):
        con.recall_at_k(a, b, k=0)
    with pytest.raises(ValueError, match="'x'"):
        con.uniformity(a[:1])


# --- retrieval_eval (added with CLIBD) -------------------------------------------------------------------------
def test_retrieval_eval_matches_sklearn_nearest_neighbour_and_balanced_accuracy():
    import numpy as np
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.neighbors import NearestNeighbors
    from iclrbench.blocks.contrastive import retrieval_eval
    rng = np.random.default_rng(0)
    K, Q = rng.standard_normal((40, 8)), rng.standard_normal((200, 8))
    kl = np.stack([rng.integers(0, 10, 40), rng.integers(0, 3, 40)], 1)
    ql = np.stack([rng.integers(0, 10, 200), rng.integers(0, 3, 200)], 1)
    r = retrieval_eval(Q, K, kl, ("species", "genus"), k=3, query_labels=ql)
    nn_idx = NearestNeighbors(n_neighbors=3, metric="cosine").fit(K).kneighbors(Q, return_distance=False)
    assert (r["index"] == nn_idx).all()
    r1 = retrieval_eval(Q, K, {"species": kl[:, 0], "genus": kl[:, 1]}, ("species", "genus"),
                        query_labels={"species": ql[:, 0], "genus": ql[:, 1]})
    for j, lv in enumerate(("species", "genus")):
        pred = kl[nn_idx[:, 0], j]
        assert r1["micro"][lv] == pytest.approx(float((pred == ql[:, j]).mean()))
        assert r1["macro"][lv] == pytest.approx(balanced_accuracy_score(ql[:, j], pred))
        assert r["micro"][lv] >= r1["micro"][lv]                       # top-3 can only add hits
    with pytest.raises(ValueError, match="'k'"):
        retrieval_eval(Q, K, kl, ("species", "genus"), k=0)
    with pytest.raises(ValueError, match="'key_labels'"):
        retrieval_eval(Q, K, kl[:, :1], ("species", "genus"))
