"""Shared graph core: CSBM generators, propagation matrices (checked against PyG), PyG round trip, KarateClub."""
from __future__ import annotations

import math

import numpy as np
import pytest

import iclrbench.blocks.graphs as G


def test_sym_normalisation_matches_pyg_gcn_norm():
    import torch
    from torch_geometric.nn.conv.gcn_conv import gcn_norm
    g = G.csbm_multiclass(60, seed=1)
    ei, w = gcn_norm(torch.as_tensor(g.edge_index), num_nodes=g.n, add_self_loops=True)
    S = np.zeros((g.n, g.n))
    S[ei[1].numpy(), ei[0].numpy()] = w.numpy()           # message j -> i lands in row i
    assert np.allclose(S, G.normalized_adjacency(g.adjacency, "sym"), atol=1e-6)


def test_dense_propagation_equals_gcnconv_output():
    import torch
    from torch_geometric.nn import GCNConv
    g = G.karate_club()
    conv = GCNConv(g.x.shape[1], 5, bias=False).double()
    out = conv(torch.as_tensor(g.x), torch.as_tensor(g.edge_index)).detach().numpy()
    W = conv.lin.weight.detach().numpy().T
    assert np.allclose(out, G.normalized_adjacency(g.adjacency, "sym") @ g.x @ W, atol=1e-10)


def test_propagation_kinds():
    g = G.csbm_binary(80, seed=2)
    A = g.adjacency
    assert np.allclose(G.normalized_adjacency(A, "row").sum(1), 1)
    sage = G.normalized_adjacency(A, "sage")
    deg = A.sum(1)
    assert np.allclose(np.diag(sage), 1) and np.allclose((sage - np.eye(g.n)).sum(1), (deg > 0).astype(float))
    assert np.allclose(G.normalized_adjacency(A, "gin"), A + np.eye(g.n))
    assert np.allclose(G.normalized_adjacency(A, "none"), np.eye(g.n))
    P = G.appnp_propagation(A, 0.15, 300)
    assert np.allclose(P, G.appnp_propagation(A, 0.15, exact=True), atol=1e-8)
    with pytest.raises(ValueError, match="'kind'"):
        G.normalized_adjacency(A, "mean")
    with pytest.raises(ValueError, match="'alpha'"):
        G.appnp_propagation(A, 0.0)


def test_csbm_binary_follows_the_official_parametrisation():
    n = 400
    g = G.csbm_binary(n, K=1.5, avg_within_degree=3.16, avg_between_degree=0.74, seed=0)
    d = round(n / math.log(n) ** 2)
    assert g.x.shape == (n, d) and abs(g.y.mean() - 0.5) < 0.1
    A, y = g.adjacency, g.y
    same = y[:, None] == y[None, :]
    np.fill_diagonal(same, False)
    p_hat = A[same].mean()
    q_hat = A[(y[:, None] != y[None, :])].mean()
    assert p_hat == pytest.approx(2 * 3.16 / (n - 1), rel=0.15) and q_hat == pytest.approx(2 * 0.74 / (n - 1), rel=0.3)
    mu = K = 1.5 / (2 * math.sqrt(d))
    assert np.allclose(g.x[y == 1].mean(0).mean(), mu, atol=0.05) and np.allclose(g.x[y == 0].mean(0).mean(), -mu, atol=0.05)
    assert np.array_equal(G.csbm_binary(n, seed=0).edge_index, g.edge_index)       # same seed, same graph


def test_csbm_multiclass_balanced_and_homophilous():
    g = G.csbm_multiclass(300, seed=3)
    assert np.bincount(g.y).tolist() == [100, 100, 100]
    A, y = g.adjacency, g.y
    assert A[y[:, None] == y[None, :]].mean() > 2.5 * A[y[:, None] != y[None, :]].mean()
    # the easy class (scale 1.0) sits further from the origin than the confusable ones (0.35)
    norms = [np.linalg.norm(g.x[y == c].mean(0)) for c in range(3)]
    assert norms[0] > 2 * max(norms[1:])
    with pytest.raises(ValueError, match="'scales'"):
        G.csbm_multiclass(scales=(1, 1))


def test_pyg_round_trip_and_karate():
    k = G.karate_club()
    assert k.n == 34 and k.edge_index.shape == (2, 156) and k.num_classes == 4
    f = G.karate_club("faction")
    assert np.bincount(f.y).tolist() == [17, 17]
    d = k.to_pyg()
    back = G.GraphData.from_pyg(d)
    assert np.array_equal(back.adjacency, k.adjacency) and np.allclose(back.x, k.x)
    with pytest.raises(ValueError, match="'labels'"):
        G.karate_club("clubs")


def test_split_and_layout():
    y = np.repeat([0, 1, 2], 10)
    m = G.split_per_class(y, 2, 3, seed=0)
    assert [int(m["train"][y == c].sum()) for c in range(3)] == [2, 2, 2]
    assert not (m["train"] & m["val"]).any() and (m["train"] | m["val"] | m["test"]).all()
    with pytest.raises(ValueError, match="n_train"):
        G.split_per_class(y, 8, 3)
    pos = G.spring_layout(G.karate_club().edge_index, 34)
    assert pos.shape == (34, 2) and np.allclose(pos, G.spring_layout(G.karate_club().edge_index, 34))
