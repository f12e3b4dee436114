"""Tests of the SyllableLM paper module: LossPred attribution, min-cut and SSE segmenters, metrics, real-model path."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from iclrbench.papers import syllablelm as sl
from iclrbench.core.runtime import torch_threads


@pytest.fixture(autouse=True)
def _one_torch_thread():
    "Small networks on few cores run many times faster on one thread (DESIGN.md)."
    with torch_threads(1):
        yield


def _blocks(sizes):
    return np.repeat(np.arange(len(sizes)), sizes)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mincut_recovers_a_block_diagonal_similarity_exactly(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 15, size=int(rng.integers(3, 8)))
    b = _blocks(sizes)
    S = np.equal.outer(b, b) * rng.uniform(0.5, 1.0, (len(b), len(b)))
    S = (S + S.T) / 2
    np.fill_diagonal(S, 0)
    want = np.r_[0, np.cumsum(sizes)]
    assert sl.mincut_segment(S, len(sizes) + 1, 2, 20).tolist() == want.tolist()


def test_ncut_and_sse_tables_match_brute_force():
    rng = np.random.default_rng(0)
    S = rng.random((9, 9)); np.fill_diagonal(S, 0)
    X = rng.normal(size=(9, 3))
    nc, ss = sl.ncut_costs(S), sl.sse_costs(X)
    for j, t in itertools.combinations(range(10), 2):
        A = np.zeros(9, bool); A[j:t] = True
        assoc, cut = S[np.ix_(A, A)].sum(), S[np.ix_(A, ~A)].sum() + S[np.ix_(~A, A)].sum()
        assert nc[j, t] == pytest.approx(cut / (cut + assoc + 1e-5))
        seg = X[j:t]
        assert ss[j, t] == pytest.approx(((seg - seg.mean(0)) ** 2).sum() / 3)


def test_the_dp_is_optimal_against_enumeration():
    rng = np.random.default_rng(3)
    S = rng.random((12, 12)); S = S + S.T; np.fill_diagonal(S, 0)
    cost = sl.ncut_costs(S)
    best = min(((0, a, b, 12) for a, b in itertools.combinations(range(1, 12), 2)
                if all(2 <= d <= 6 for d in np.diff([0, a, b, 12]))),
               key=lambda bd: sum(cost[x, y] for x, y in zip(bd[:-1], bd[1:])))
    assert tuple(sl.mincut_segment(S, 4, 2, 6)) == best


@pytest.mark.parametrize("seed", [0, 1])
def test_segmenters_return_increasing_boundaries_covering_the_utterance(seed):
    rng = np.random.default_rng(seed)
    for T in (17, 60, 133):
        S = rng.random((T, T)); np.fill_diagonal(S, 0)
        X = rng.normal(size=(T, 8))
        k = sl.n_boundaries_for_rate(T, 0.2, 2, 20)
        outs = [sl.mincut_segment(S, k, 2, 20), sl.sse_segment(X, k - 1), sl.sse_segment(X, None, delta=0.5),
                sl.fixed_rate_boundaries(T, k)]
        for b in outs:
            assert b[0] == 0 and b[-1] == T and np.all(np.diff(b) > 0)
        assert len(outs[0]) == k and len(outs[1]) == k
        assert np.all(np.diff(outs[1]) >= 3) and np.all(np.diff(outs[1]) <= 20)


def test_sse_segment_finds_piecewise_constant_blocks_and_the_delta_rule_moves_the_count():
    rng = np.random.default_rng(0)
    sizes = [6, 9, 5, 12, 8]
    X = rng.normal(size=(5, 4))[_blocks(sizes)] + 0.05 * rng.normal(size=(40, 4))
    assert sl.sse_segment(X, 5).tolist() == np.r_[0, np.cumsum(sizes)].tolist()
    n_small, n_large = (len(sl.sse_segment(X, None, delta=d)) for d in (1e-4, 0.5))
    assert n_small >= n_large                                   # smaller δ → more segments (the largest count above δ)


class _Oracle(torch.nn.Module):
    "A 'model' confident in the block of the nearest visible frame: LossPred must show the blocks."
    def __init__(self, blocks):
        super().__init__(); self.b = torch.as_tensor(blocks); self.w = torch.nn.Parameter(torch.zeros(1))
    def masked_logits(self, x, mask):
        W, T = mask.shape
        out = torch.zeros(W, T, int(self.b.max()) + 1)
        pos = torch.arange(T)
        for w in range(W):
            vis = pos[~mask[w]]
            if not len(vis): continue
            near = vis[(vis[None] - pos[:, None]).abs().argmin(1)]
            out[w, pos, self.b[near]] = 8.0
        return out


def test_losspred_attributes_losses_to_the_nearest_unmasked_frame_and_recovers_blocks():
    b = _blocks([10, 7, 12, 9])
    masks, centres = sl.losspred_windows(len(b), 7)
    assert masks.shape == (len(b) + 6, len(b)) and centres[0] == -3 and masks.sum(1).max() == 7
    L = sl.losspred_matrix(_Oracle(b), torch.zeros(len(b), 1), b, window=7)
    S = sl.similarity_from_losses(L, 7)
    assert np.all(np.diag(S) == 0) and S[0, 10] == 0 and S[20, 5] == 0             # diagonal and out-of-band entries
    i, j = 8, 11                                                                   # across the 10|17 boundary, j right of i
    assert L[i, j] > 5 and L[11, 12] < 0.01                                        # different block: high loss; same: low
    assert sl.mincut_segment(S, 5, 2, 20).tolist() == [0, 10, 17, 29, 38]


def test_boundary_and_cluster_metrics_by_hand():
    assert sl.boundary_scores([[0.1, 0.5]], [[0.12, 0.3, 0.55]]) == pytest.approx(
        {"precision": 0.5, "recall": 1 / 3, "f1": 0.4, "r_value": 1 - (np.hypot(2 / 3, 1 / 3) + abs((1 / 3 + 1 / 3 - 1) / np.sqrt(2))) / 2})   # HR = 1/3, OS = −1/3
    perfect = sl.boundary_scores([[0.2, 0.4]], [[0.21, 0.39]])
    assert perfect["f1"] == 1.0 and perfect["r_value"] == pytest.approx(1.0)
    assert sl.match_boundaries([0.1, 0.11, 0.12], [0.1, 0.2]) == 1                  # one-to-one
    cs = sl.cluster_scores(np.array([0, 0, 1, 1, 1, 2]), np.array([7, 7, 8, 8, 9, -1]))
    assert cs["purity"] == pytest.approx(4 / 5)
    assert sl.dedupe([1, 1, 2, 2, 2, 1]).tolist() == [1, 2, 1]
    assert sl.bigram_bits([[0, 1, 0, 1]], [[0, 1]], 2) < sl.bigram_bits([[0, 1, 0, 1]], [[1, 1]], 2)


def test_segment_targets_and_sylboost_step_flatten_features():
    torch.manual_seed(0)
    from iclrbench.blocks.speech import HubertLite
    teacher = HubertLite(in_dim=6, d=16, n_heads=2, n_targets=4, ff=32, n_layers=2).eval()
    student = HubertLite(in_dim=6, d=16, n_heads=2, n_targets=4, ff=32, n_layers=2)
    student.load_state_dict(teacher.state_dict())
    X = [np.random.default_rng(i).normal(size=(30, 6)).astype(np.float32) for i in range(4)]
    bd = [np.array([0, 10, 20, 30])] * 4
    with torch.no_grad():
        tf = [teacher.frame_features(torch.as_tensor(x)[None])[0].numpy() for x in X]
    tg = [sl.segment_mean_targets(f, b) for f, b in zip(tf, bd)]
    assert np.allclose(tg[0][:10], tf[0][:10].mean(0), atol=1e-5)
    opt = torch.optim.Adam(student.parameters(), lr=3e-3)
    losses = [sl.sylboost_step(student, tg, X, opt) for _ in range(60)]
    assert losses[-1] < 0.5 * losses[0]
    lab = [np.repeat(np.arange(3), 10)] * 4
    with torch.no_grad():
        sf = [student.frame_features(torch.as_tensor(x)[None])[0].numpy() for x in X]
    assert sl.var_ratio(sf, lab) < sl.var_ratio(tf, lab)


def test_real_model_path_on_a_tiny_random_hubert():
    from iclrbench.blocks.hf import tiny_hubert_model
    model = sl.HFMaskedPredictor(tiny_hubert_model(), n_targets=6)
    wav = torch.randn(500)
    T = model.n_frames(500)
    L = sl.losspred_matrix(model, wav, np.random.default_rng(0).integers(0, 6, T), window=5)
    assert L.shape == (T, T)
    S = sl.similarity_from_losses(L, 5)
    assert np.all(S[np.abs(np.subtract.outer(np.arange(T), np.arange(T))) > 3] == 0)
    b = sl.mincut_segment(S, sl.n_boundaries_for_rate(T, 0.02, 2, 20, frame_rate=800), 2, 20)
    assert b[0] == 0 and b[-1] == T and np.all(np.diff(b) > 0)
    feats = model.frame_features(wav[None]).detach().numpy()[0]
    assert feats.shape == (T, 32)
    sb = sl.sse_segment(feats, None, delta=0.01)
    assert sb[0] == 0 and sb[-1] == T and np.all(np.diff(sb) >= 3)
    teacher_feats = feats
    tg = [sl.segment_mean_targets(teacher_feats, b)]
    opt = torch.optim.Adam(model.model.parameters(), lr=1e-3)
    l0 = sl.sylboost_step(model, tg, [wav.numpy()], opt)
    l1 = [sl.sylboost_step(model, tg, [wav.numpy()], opt) for _ in range(5)][-1]
    assert np.isfinite(l0) and l1 < l0


def test_bad_parameters_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="'window'"): sl.losspred_windows(10, 4)
    with pytest.raises(ValueError, match="'k'"): sl.mincut_segment(np.zeros((5, 5)), 1)
    with pytest.raises(ValueError, match="'S'"): sl.mincut_segment(np.zeros((5, 4)), 2)
    with pytest.raises(ValueError, match="'quantile'"): sl.sse_segment(np.zeros((10, 2)), None, quantile=2.0)
    with pytest.raises(ValueError, match="'window'"): sl.run("smoke", window=100, progress=False)
    with pytest.raises(ValueError, match="'segment_count'"): sl.run("smoke", segment_count="both", progress=False)


def test_smoke_run_beats_the_baselines(smoke_result):
    r = smoke_result("syllablelm")
    m = r.metrics
    assert m["f1_losspred"][0] > m["f1_fixed"][0] and m["f1_sylboost1"][0] > m["f1_fixed"][0]
    assert m["var_ratio_student"][0] < m["var_ratio_teacher"][0]
    assert 2.0 < m["unit_rate"][0] < 10.0 and len(r.artefacts["show"][0]) == sl.N_SHOW
    assert {c.id: c.status for c in r.claims}["speech-lm"] == "not reproducible offline"
