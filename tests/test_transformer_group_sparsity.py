"""Library tests for the one-layer transformer on group-sparse classification (Zhang, Meng, Cao, ICLR 2025)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

torch.set_num_threads(1)     # small networks: one thread is much faster on the shared 2-core machines

import iclrbench.explorers.transformer_group_sparsity as gs_explorer
import iclrbench.papers.transformer_group_sparsity as gs
from iclrbench.views.static import static_view
from static_view_checks import assert_static_view


def _data(n, d, D, j, seed, v=None):
    rng = np.random.default_rng(seed)
    v = gs.random_unit(d, rng) if v is None else v
    return gs.GroupSparseData.sample(n, d, D, j, v, rng), v


def test_positions_orthonormal_and_labels_follow_the_relevant_group():
    for D in (2, 5, 16):
        P = gs.positional_encodings(D)
        assert np.allclose(P @ P.T, np.eye(D))
    ds, v = _data(300, 3, 6, 4, 0)
    assert np.all(np.sign(ds.X[:, 4] @ v) == ds.y)
    # the label is independent of every other group: correlation of y with other groups is ~0
    big, _ = _data(20000, 3, 6, 4, 1)
    corr = np.abs(np.einsum("n,nDd->Dd", big.y, big.X) / len(big.y))
    assert corr[4].max() > 0.3 and np.delete(corr, 4, axis=0).max() < 0.05


def test_softmax_is_over_keys_and_matches_the_matrix_formula():
    ds, _ = _data(5, 3, 4, 1, 2)
    m = gs.OneLayerAttention(3, 4)
    with torch.no_grad():
        m.W.normal_(generator=torch.Generator().manual_seed(0)); m.v.normal_(generator=torch.Generator().manual_seed(1))
    Z = torch.tensor(ds.Z, dtype=torch.float32)
    S = m.attention(Z)
    assert torch.allclose(S.sum(dim=1), torch.ones(5, 4))
    for n in range(5):
        z = Z[n]                                     # tokens as rows; the paper's Z has them as columns
        S_ref = torch.softmax(z @ m.W @ z.T, dim=0)  # column j = softmax over keys i of z_i^T W z_j
        assert torch.allclose(S[n], S_ref, atol=1e-6)
        assert torch.allclose(m(Z)[n], m.v @ z.T @ S_ref @ torch.ones(4), atol=1e-5)


def test_zero_init_is_uniform_and_gd_selects_the_relevant_group():
    tr, v = _data(1000, 4, 6, 2, 3)
    te, _ = _data(1000, 4, 6, 2, 4, v)
    m = gs.OneLayerAttention(4, 6)
    t = gs.train_gd(m, tr, 300, 1.0, te, record_every=100)
    assert np.allclose(t.attn_groups[0], 1 / 6)                 # W = 0: uniform attention
    assert np.argmax(t.attn_groups[-1]) == 2 and t.attn_jstar[-1] > 0.5
    assert t.cos_v1[-1] > 0.95 and t.test_acc[-1] > 0.93 and t.loss[-1] < t.loss[0]


def test_frozen_w_shortcut_equals_gd_on_v():
    tr, _ = _data(200, 3, 4, 0, 5)
    m = gs.OneLayerAttention(3, 4)
    with torch.no_grad(): m.W.normal_(generator=torch.Generator().manual_seed(2))
    W0 = m.W.detach().clone()
    gs.train_gd(m, tr, 40, 0.5, train_W=False)
    assert torch.equal(m.W.detach(), W0)
    v = gs.fit_value_gd(gs.frozen_attention_features(W0.numpy(), tr.Z), tr.y, 40, 0.5)
    assert np.allclose(v, m.v.detach().numpy(), atol=1e-4)


def test_pretrained_transfers_better_than_logistic_regression():
    tr, v = _data(1200, 6, 6, 1, 6)
    m = gs.OneLayerAttention(6, 6)
    gs.train_gd(m, tr, 300, 1.0)
    acc = gs.downstream_accuracy(m.W.detach().numpy(), 6, 6, 1, 12, 4, np.random.default_rng(0), steps=200, n_test=1000)
    assert np.mean(acc["pre-trained"]) > np.mean(acc["logistic"]) + 0.05
    assert np.mean(acc["pre-trained"]) > np.mean(acc["scratch"]) + 0.05


def test_patchify_groups():
    img = np.arange(2 * 4 * 6 * 3).reshape(2, 4, 6, 3)
    g = gs.patchify_groups(img, 2)
    assert g.shape == (2, 6, 12)
    assert np.array_equal(g[1, 4].reshape(2, 2, 3), img[1, 2:4, 2:4])
    with pytest.raises(ValueError, match="'patch'"):
        gs.patchify_groups(img, 4)


def test_bad_arguments_raise_value_error_naming_the_parameter():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="'j_star'"):
        gs.GroupSparseData.sample(10, 3, 4, 4, np.ones(3) / np.sqrt(3), rng)
    with pytest.raises(ValueError, match="'v_star'"):
        gs.GroupSparseData.sample(10, 3, 4, 1, np.ones(4), rng)
    with pytest.raises(ValueError, match="'j_star'"):
        gs.run("smoke", D=4, j_star=5)
    with pytest.raises(ValueError, match="'lr'"):
        gs.train_gd(gs.OneLayerAttention(2, 2), _data(5, 2, 2, 0, 0)[0], 3, -1.0)


_TINY = dict(n_seeds=1, n_pretrain=300, steps=30, reps=1, downstream_steps=20)


@pytest.fixture(scope="module")
def tiny():
    return gs.run("smoke", seed=3, progress=False, **_TINY)


def test_same_seed_same_numbers(tiny):
    b = gs.run("smoke", seed=3, progress=False, **_TINY)
    assert json.dumps(tiny.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])


def test_static_view_scrubs_gd_steps_from_the_json_result(tiny):
    from iclrbench.core import Result
    r = Result.from_dict(json.loads(json.dumps(tiny.to_dict())))
    ex = gs_explorer.explore(r)
    fig = static_view(ex)
    assert_static_view(fig)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == len(ex.STATIC_GRID["iteration"]) >= 2 and not ex.errors
    # first step: attention is uniform at zero init; each step's heatmap is a D x D attention matrix (columns sum to 1)
    D = tiny.params["D"]
    z0 = np.asarray(next(t for t in fig.data if t.type == "heatmap").z)
    assert z0.shape == (D, D) and np.allclose(z0, 1.0 / D) and np.allclose(z0.sum(axis=0), 1.0, atol=1e-5)
    assert "GD step 0 " in steps[0].args[1]["title.text"]
