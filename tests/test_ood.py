"""Shared OOD block: kNN / Mahalanobis / MSP scores, AUROC and FPR@95 (OOD positive) against scikit-learn, adjacent_split."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.covariance import EmpiricalCovariance
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.neighbors import NearestNeighbors

import iclrbench.blocks.ood as ood


@pytest.mark.parametrize("seed,tied", [(0, False), (1, True), (2, True)])
def test_auroc_equals_sklearn(seed, tied):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(257), rng.standard_normal(131) + 0.4
    if tied: a, b = np.round(a, 1), np.round(b, 1)          # many ties across and within the two sets
    ref = roc_auc_score(np.r_[np.zeros(len(a)), np.ones(len(b))], np.r_[a, b])
    assert ood.auroc(a, b) == pytest.approx(ref, abs=1e-12)
    # orientation: OOD is the positive class; swapping the sets mirrors the value
    assert ood.auroc(b, a) == pytest.approx(1 - ref, abs=1e-12)


def test_auroc_and_fpr_by_hand():
    assert ood.auroc([1, 2], [2, 3]) == 0.875                # (3>1)+(3>2)+(2=2: ½)+(2>1) over 4 pairs
    assert ood.auroc([7, 7, 7], [7]) == 0.5
    assert ood.fpr_at_tpr([0, 1.5, 2, 3], np.arange(1, 21)) == 0.5      # t = 2 (19 of 20 OOD flagged)
    assert ood.fpr_at_tpr([0, 1], [5, 6]) == 0.0 and ood.fpr_at_tpr([5, 6], [0, 1]) == 1.0
    m = ood.ood_metrics([0.0, 1.0], [2.0, 3.0])
    assert m == {"auroc": 1.0, "fpr95": 0.0}
    with pytest.raises(ValueError, match="'tpr'"):
        ood.fpr_at_tpr([0], [1], tpr=0.0)
    with pytest.raises(ValueError, match="scores_id"):
        ood.auroc([], [1.0])


@pytest.mark.parametrize("seed", [0, 1])
def test_fpr95_equals_sklearn_roc_curve(seed):
    rng = np.random.default_rng(seed)
    a, b = np.round(rng.standard_normal(400), 2), np.round(rng.standard_normal(300) + 1.0, 2)
    fpr, tpr, _ = roc_curve(np.r_[np.zeros(400), np.ones(300)], np.r_[a, b], drop_intermediate=False)
    assert ood.fpr_at_tpr(a, b, 0.95) == pytest.approx(fpr[np.searchsorted(tpr, 0.95 - 1e-12)], abs=1e-12)


def test_knn_scores_match_sklearn_nearest_neighbors():
    rng = np.random.default_rng(3)
    bank, q = rng.standard_normal((200, 5)) * 3, rng.standard_normal((50, 5))
    for k in (1, 5, 17):
        nn = NearestNeighbors(n_neighbors=k).fit(ood.l2_normalize(bank))
        ref = nn.kneighbors(ood.l2_normalize(q))[0][:, -1]
        assert np.allclose(ood.knn_scores(bank, q, k=k), ref, atol=1e-9)
    raw = NearestNeighbors(n_neighbors=3).fit(bank).kneighbors(q)[0][:, -1]
    assert np.allclose(ood.knn_scores(bank, q, k=3, normalize=False, block=7), raw, atol=1e-9)
    # leave-one-out on the bank itself skips the zero self-distance
    loo = NearestNeighbors(n_neighbors=4).fit(ood.l2_normalize(bank)).kneighbors(ood.l2_normalize(bank))[0][:, -1]
    assert np.allclose(ood.knn_scores(bank, bank, k=3, exclude_self=True), loo, atol=1e-7)
    with pytest.raises(ValueError, match="'k'"):
        ood.knn_scores(bank, q, k=0)
    with pytest.raises(ValueError, match="'k'"):
        ood.knn_scores(bank, q, k=201)
    with pytest.raises(ValueError, match="'queries'"):
        ood.knn_scores(bank, q[:, :3])


def test_knn_detects_a_shifted_cluster_and_not_an_identical_one():
    rng = np.random.default_rng(4)
    bank = rng.standard_normal((500, 4)) + [5, 0, 0, 0]
    same, far = rng.standard_normal((300, 4)) + [5, 0, 0, 0], rng.standard_normal((300, 4)) + [0, 5, 0, 0]
    idt = rng.standard_normal((300, 4)) + [5, 0, 0, 0]
    assert ood.auroc(ood.knn_scores(bank, idt), ood.knn_scores(bank, far)) > 0.99
    assert abs(ood.auroc(ood.knn_scores(bank, idt), ood.knn_scores(bank, same)) - 0.5) < 0.07


def test_mahalanobis_matches_sklearn_and_class_conditional():
    rng = np.random.default_rng(5)
    z = rng.multivariate_normal([1, -1, 0], [[2, 0.5, 0], [0.5, 1, 0.3], [0, 0.3, 0.5]], size=800)
    q = rng.standard_normal((40, 3))
    ref = EmpiricalCovariance().fit(z).mahalanobis(q)        # squared distances to the mean
    assert np.allclose(ood.mahalanobis_scores(z, q, ridge=0.0), ref, rtol=1e-9)
    # two classes with a tied covariance: the score is the smaller of the two distances (worked: identity covariance)
    zc = np.r_[rng.standard_normal((2000, 2)) + [-4, 0], rng.standard_normal((2000, 2)) + [4, 0]]
    lab = np.r_[np.zeros(2000), np.ones(2000)]
    m = ood.Mahalanobis(ridge=0.0).fit(zc, lab)
    assert np.allclose(m.means_, [[-4, 0], [4, 0]], atol=0.1)
    assert np.allclose(m.score([[4.0, 1.0], [0.0, 0.0]]), [1.0, 16.0], rtol=0.1)
    with pytest.raises(ValueError, match="'labels'"):
        ood.Mahalanobis().fit(zc, lab[:10])


def test_msp_by_hand_and_against_torch():
    assert np.allclose(ood.msp_scores([[0.0, 0.0], [np.log(3.0), 0.0]]), [-0.5, -0.75])
    logits = torch.randn(20, 6, generator=torch.Generator().manual_seed(0)) * 10
    assert np.allclose(ood.msp_scores(logits), -torch.softmax(logits.double(), 1).max(1).values.numpy())
    with pytest.raises(ValueError, match="'logits'"):
        ood.msp_scores([1.0, 2.0])


def test_adjacent_split_holds_out_whole_classes():
    labels = np.repeat(np.array([3, 10, 11, 20, 21, 40, 41, 99]), [5, 6, 7, 8, 9, 10, 11, 12])
    for seed in range(5):
        s = ood.adjacent_split(labels, 0.25, seed)
        assert len(s.ood_classes) == 2 and len(s.id_classes) == 6
        assert set(s.id_classes) | set(s.ood_classes) == set(np.unique(labels))
        assert not set(s.id_classes) & set(s.ood_classes)
        im, om = s.id_mask(labels), s.ood_mask(labels)
        assert np.all(im ^ om)                                 # every sample is in exactly one side, by its class
        for c in np.unique(labels):                            # a class is never split between ID and OOD
            assert im[labels == c].all() or om[labels == c].all()
        assert list(s.relabel(labels[im])) == list(np.searchsorted(s.id_classes, labels[im]))
        with pytest.raises(ValueError, match="'labels'"):
            s.relabel(labels[om])
    splits = {tuple(ood.adjacent_split(labels, 0.25, s).ood_classes) for s in range(20)}
    assert len(splits) > 3                                     # the seed chooses the held-out classes
    assert np.array_equal(ood.adjacent_split(labels, 0.25, 7).ood_classes, ood.adjacent_split(labels, 0.25, 7).ood_classes)
    assert len(ood.adjacent_split(np.arange(10), 0.3, 0).ood_classes) == 3
    assert len(ood.adjacent_split(np.arange(3), 0.01, 0).ood_classes) == 1     # at least one OOD class
    assert len(ood.adjacent_split(np.arange(3), 0.99, 0).id_classes) == 1      # at least one ID class
    for bad in (0.0, 1.0, -0.2):
        with pytest.raises(ValueError, match="'frac'"):
            ood.adjacent_split(labels, bad, 0)
    with pytest.raises(ValueError, match="'labels'"):
        ood.adjacent_split([1, 1, 1], 0.25, 0)


def test_encode_accepts_module_callable_and_features():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).train()
    x = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32)
    z = ood.encode(net, x, batch_size=3)
    assert z.shape == (10, 3) and z.dtype == np.float64 and net.training          # mode restored
    assert np.allclose(z, net(torch.as_tensor(x)).detach().numpy(), atol=1e-6)
    assert np.allclose(ood.encode(lambda a: a * 2, x), 2 * x)
    assert np.array_equal(ood.encode(None, torch.as_tensor(x)), x.astype(np.float64))
    with pytest.raises(ValueError, match="'encoder'"):
        ood.encode(3, x)


def test_knn_scores_at_equals_one_k_at_a_time():
    rng = np.random.default_rng(6)
    bank, q = rng.standard_normal((300, 6)), rng.standard_normal((70, 6))
    ks = [20, 1, 5, 50]
    at = ood.knn_scores_at(bank, q, ks, block=16)
    for i, k in enumerate(ks):
        assert np.allclose(at[i], ood.knn_scores(bank, q, k), atol=1e-12)
    with pytest.raises(ValueError, match="'ks'"):
        ood.knn_scores_at(bank, q, [0, 5])
