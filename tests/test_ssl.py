"""Tests of iclrbench.blocks.ssl: EMA teacher and schedule, probes against scikit-learn, collapse diagnostics."""
import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from iclrbench.blocks.ssl import (EMATeacher, collapse_ratio, effective_rank, feature_variances, histogram_kl, knn_probe,
                                  linear_probe, momentum_schedule, pairwise_distance, per_token_probe, relative_spread,
                                  row_space)


def test_momentum_schedules_by_hand():
    assert np.allclose(momentum_schedule(0.996, 1.0, 4), [0.996, 0.997, 0.998, 0.999, 1.0])
    cos = momentum_schedule(0.9, 1.0, 2, "cosine")
    assert np.allclose(cos, [0.9, 0.95, 1.0])
    with pytest.raises(ValueError, match="'start'"): momentum_schedule(1.5, 1.0, 3)
    with pytest.raises(ValueError, match="'total_steps'"): momentum_schedule(0.9, 1.0, 0)
    with pytest.raises(ValueError, match="'kind'"): momentum_schedule(0.9, 1.0, 3, "step")


def test_ema_teacher_follows_the_schedule_and_never_gets_gradients():
    torch.manual_seed(0)
    s = torch.nn.Linear(3, 2)
    t = EMATeacher(s, momentum_schedule(0.5, 1.0, 2))
    w0 = s.weight.detach().clone()
    with torch.no_grad(): s.weight.add_(1.0)
    assert [t.update(s) for _ in range(4)] == [0.5, 0.75, 1.0, 1.0]      # schedule then its last value
    # by hand: w0 + 0.5, then 0.75 (w0 + 0.5) + 0.25 (w0 + 1) = w0 + 0.625, then frozen
    assert torch.allclose(t.teacher.weight, w0 + 0.625)
    assert not any(q.requires_grad for q in t.parameters())
    loss = (t(torch.randn(4, 3)) ** 2).sum() + (s(torch.randn(4, 3)) ** 2).sum()
    loss.backward()
    assert all(q.grad is None for q in t.parameters()) and s.weight.grad is not None
    # momentum 1 from the start freezes the teacher; momentum 0 copies the student
    frozen, copy = EMATeacher(s, 1.0), EMATeacher(s, 0.0)
    before = frozen.teacher.weight.clone()
    with torch.no_grad(): s.weight.mul_(3)
    frozen.update(s); copy.update(s)
    assert torch.equal(frozen.teacher.weight, before) and torch.equal(copy.teacher.weight, s.weight)


def test_linear_probe_matches_sklearn_and_low_rank_is_equivalent():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 10)
    X = rng.normal(size=(30, 200)); X[:, :3] += 2 * np.eye(3)[y]
    yt = np.repeat(np.arange(3), 20)
    Xt = rng.normal(size=(60, 200)); Xt[:, :3] += 2 * np.eye(3)[yt]
    sc = StandardScaler().fit(X)
    ref = LogisticRegression(C=0.1, max_iter=5000, tol=1e-10).fit(sc.transform(X), y).predict(sc.transform(Xt))
    a = linear_probe(X, y, Xt, yt, Cs=(0.1,), max_iter=5000)
    b = linear_probe(X, y, Xt, yt, Cs=(0.1,), max_iter=5000, low_rank=False)
    assert a["accuracy"] == pytest.approx(np.mean(ref == yt), abs=0.02) and b["accuracy"] == pytest.approx(np.mean(ref == yt))
    assert row_space(sc.transform(X)).shape == (200, 29)          # centred rows: rank n - 1
    cv = linear_probe(X, y, Xt, yt, Cs=(0.01, 1.0))
    assert set(cv["cv"]) == {0.01, 1.0} and cv["cv"][cv["C"]] == max(cv["cv"].values())
    assert cv["accuracy"] == linear_probe(X, y, Xt, yt, Cs=(cv["C"],))["accuracy"]      # refit on all rows with the chosen C
    with pytest.raises(ValueError, match="'Cs'"): linear_probe(X, y, Xt, yt, Cs=(0.0,))


def test_knn_probe_matches_sklearn_cosine_knn():
    rng = np.random.default_rng(1)
    X, Xt = rng.normal(size=(80, 5)), rng.normal(size=(40, 5))
    y, yt = (X[:, 0] > 0).astype(int), (Xt[:, 0] > 0).astype(int)
    ref = KNeighborsClassifier(n_neighbors=7, metric="cosine").fit(X, y).score(Xt, yt)
    assert knn_probe(X, y, Xt, yt, k=7) == pytest.approx(ref)
    assert knn_probe(X, y, Xt, yt, k=7, weighted=True) > 0.6
    with pytest.raises(ValueError, match="'k'"): knn_probe(X, y, Xt, yt, k=0)


def test_per_token_probe_learns_token_labels():
    rng = np.random.default_rng(2)
    lab = rng.integers(0, 2, size=(20, 6)); tok = rng.normal(size=(20, 6, 4)); tok[..., 0] += 6 * lab
    lab[0, 0] = -1                                         # ignored
    assert per_token_probe(tok[:10], lab[:10], tok[10:], lab[10:]) > 0.9
    with pytest.raises(ValueError, match="'tokens'"): per_token_probe(tok[:, 0], lab[:, 0], tok[:, 0], lab[:, 0])


def test_collapse_diagnostics():
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(50, 8))
    assert pairwise_distance(Z, None) == pytest.approx(pdist(Z).mean())
    assert collapse_ratio(Z, Z) == pytest.approx(1.0)
    collapsed = np.ones((50, 8)) * 4 + 1e-6 * Z
    assert collapse_ratio(collapsed, Z) < 1e-5 and relative_spread(3 * Z) == pytest.approx(relative_spread(Z))
    assert histogram_kl(np.tile(Z[:1], (10, 1)), pairs=5) == pytest.approx(0.0, abs=1e-9)
    assert histogram_kl(np.concatenate([Z[:5], 10 * Z[5:10]]), pairs=10) > 0.05
    v = feature_variances(np.stack([np.zeros((4, 3)), np.ones((4, 3))], axis=1))     # positions differ, samples don't
    assert v["intra"] == 0 and v["inter"] == pytest.approx(0.25)
    assert effective_rank(np.outer(rng.normal(size=30), np.ones(6))) == pytest.approx(1.0, abs=1e-6)
    assert effective_rank(rng.normal(size=(2000, 4))) > 3.8
    with pytest.raises(ValueError, match="'Z'"): pairwise_distance(Z[:1])
