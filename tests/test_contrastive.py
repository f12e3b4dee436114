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
