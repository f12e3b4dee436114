"""Library tests for label_blindness_ood (Yang, Yu & Desell, ICLR 2025): the two-factor generator, the digit composites,
the augmentations, the detectors' mechanism on a small problem, the Fano probe bound, and the run's parameters."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import iclrbench.papers.label_blindness_ood as lbo
from iclrbench.blocks.ood import auroc, knn_scores
from iclrbench.core import torch_threads

SLUG = "label_blindness_ood"


@pytest.fixture(scope="module")
def data():
    return lbo.gaussian_factors(n_train=2000, n_test=600, seed=3)


def _latent(d):
    lat = d.x_train @ d.info["R"]                     # x = R [x1; x2]  →  [x1; x2] = Rᵀx, row-wise x @ R
    return lat[:, :8], lat[:, 8:]


def test_generator_factors_are_independent_and_labels_live_in_x2(data):
    x1, x2 = _latent(data)
    # y1 is recovered from x1 and y from x2 (class means differ); x1's class-conditional means do not depend on y
    grand = x1.mean(0)
    for c in data.id_classes:
        assert np.abs(x1[data.y_train == c].mean(0) - grand).max() < 0.35           # ≈ 0 up to sampling noise
    spread_y_in_x2 = np.std([x2[data.y_train == c].mean(0) for c in data.id_classes], axis=0).mean()
    assert spread_y_in_x2 > 0.8                                                        # sep = 3: means ~ 1.5·N(0, 1)
    # y1 ⟂ y at ρ = 0: the contingency table is close to the product of its margins
    tab = np.histogram2d(data.y1_train, data.y_train, bins=[np.arange(9) - 0.5, np.arange(9) - 0.5])[0]
    exp = np.outer(tab.sum(1), tab.sum(0)) / tab.sum()
    ok = exp > 0
    assert (((tab - exp) ** 2)[ok] / exp[ok]).sum() < 80                             # χ² on 35 d.o.f.


def test_generator_split_far_shift_rho_and_determinism(data):
    assert len(data.ood_classes) == 2 and set(data.y_adj) == set(data.ood_classes)
    assert set(data.y_train) == set(data.id_classes) == set(data.y_id)
    far_lat = data.x_far @ data.info["R"]
    id_lat = data.x_id @ data.info["R"]
    assert np.allclose(far_lat[:, :8].mean(0) - id_lat[:, :8].mean(0), 6.0, atol=0.4)   # x1 shifted by +6
    assert np.allclose(far_lat[:, 8:].mean(0), id_lat[:, 8:].mean(0), atol=0.4)        # x2 (the label factor) unchanged
    d1 = lbo.gaussian_factors(n_train=500, n_test=50, rho=1.0, seed=3)
    assert np.array_equal(d1.y1_train, d1.y_train % 8)
    again = lbo.gaussian_factors(n_train=2000, n_test=600, seed=3)
    assert np.array_equal(again.x_train, data.x_train) and np.array_equal(again.x_far, data.x_far)
    assert not np.array_equal(lbo.gaussian_factors(n_train=2000, n_test=600, seed=4).x_train, data.x_train)
    assert len(lbo.gaussian_factors(n_train=100, n_test=20, frac=0.5, seed=0).ood_classes) == 4


def test_label_blind_augmentation_resamples_x2_and_keeps_x1(data):
    d0 = lbo.gaussian_factors(n_train=300, n_test=20, jitter=0.0, seed=1)
    x = torch.as_tensor(d0.x_train[:64])
    R = torch.as_tensor(d0.info["R"], dtype=torch.float32)
    v1 = d0.augment_blind(x, torch.Generator().manual_seed(0))
    v2 = d0.augment_blind(x, torch.Generator().manual_seed(1))
    lat, l1, l2 = x @ R, v1 @ R, v2 @ R
    assert torch.allclose(l1[:, :8], lat[:, :8], atol=1e-4) and torch.allclose(l2[:, :8], lat[:, :8], atol=1e-4)
    # x2 of a view is fresh noise (std 2), unrelated to the input's x2
    z = torch.zeros_like(x)
    v0 = d0.augment_blind(z, torch.Generator().manual_seed(0))
    assert torch.allclose((v0 @ R)[:, 8:], l1[:, 8:], atol=1e-4)
    assert abs(float(l1[:, 8:].std()) - 2.0) < 0.25


def test_oracle_representations_show_the_theorem(data):
    "z = x1 (label-blind by construction) is at chance on Adjacent OOD and perfect on Far OOD; z = x2 detects Adjacent OOD."
    R = data.info["R"]
    lat = {s: getattr(data, f"x_{s}") @ R for s in ("train", "id", "adj", "far")}
    blind = {s: v[:, :8] for s, v in lat.items()}
    label = {s: v[:, 8:] for s, v in lat.items()}
    sb = {s: knn_scores(blind["train"], blind[s], 5, normalize=False) for s in ("id", "adj", "far")}
    sl = {s: knn_scores(label["train"], label[s], 5, normalize=False) for s in ("id", "adj")}
    assert abs(auroc(sb["id"], sb["adj"]) - 0.5) < 0.05
    assert auroc(sb["id"], sb["far"]) > 0.99
    assert auroc(sl["id"], sl["adj"]) > 0.8


def test_trained_detectors_mechanism_on_a_small_problem():
    "Label-blind SimCLR stays near chance on Adjacent OOD; the supervised kNN on the same data detects it."
    d = lbo.gaussian_factors(n_train=1500, n_test=400, seed=5)
    with torch_threads(1):
        models = lbo.train_encoders(d, steps=200, seed=5, which=("U2", "S"))
    sc = lbo.knn_detector_scores(lbo.detector_features(models, d), k=5)
    a_u2, a_s = auroc(sc["U2"]["id"], sc["U2"]["adj"]), auroc(sc["S_kNN"]["id"], sc["S_kNN"]["adj"])
    assert abs(a_u2 - 0.5) < 0.08 and a_s > 0.75 and a_s - a_u2 > 0.2
    assert set(sc) == {"U2", "S_kNN", "S_MSP", "raw"}
    # same seed, same numbers (bitwise)
    with torch_threads(1):
        again = lbo.train_encoders(d, steps=200, seed=5, which=("U2",))
    assert all(torch.equal(a, b) for a, b in zip(models["U2"].state_dict().values(), again["U2"].state_dict().values()))


def test_digit_composites():
    d = lbo.digit_composites(n_train=300, n_test=100, frac=0.3, seed=2)
    assert d.x_train.shape == (300, 128) and len(d.ood_classes) == 3 and d.n_y1 == 10
    assert set(d.y_adj) <= set(d.ood_classes) and not set(d.y_train) & set(d.ood_classes)
    img = d.x_far.reshape(-1, 8, 16)
    assert img[:, :, :8].mean() > 0.6 and img[:, :, 8:].mean() < 0.45            # far: left half inverted
    x = torch.as_tensor(d.x_train[:32])
    v = lbo._swap_right_half(x, torch.Generator().manual_seed(0)).reshape(32, 8, 16)
    xi = x.reshape(32, 8, 16)
    assert torch.equal(v[:, :, :8], xi[:, :, :8])
    rights = {tuple(r.flatten().tolist()) for r in xi[:, :, 8:]}
    assert all(tuple(r.flatten().tolist()) in rights for r in v[:, :, 8:])           # right halves come from the batch
    t = lbo._jitter_translate(x, torch.Generator().manual_seed(0), sigma=0.0)
    assert t.shape == x.shape and abs(float(t.sum() - x.sum())) < 0.5 * float(x.sum())
    d1 = lbo.digit_composites(n_train=200, n_test=20, rho=1.0, seed=2)
    assert np.array_equal(d1.y1_train, d1.y_train)


def test_fano_bound_by_hand():
    assert lbo.fano_bits(1.0, 6) == pytest.approx(math.log2(6))
    assert lbo.fano_bits(1 / 6, 6) == 0.0 and lbo.fano_bits(0.05, 6) == 0.0          # at or below chance: no information
    pe = 0.2
    want = math.log2(4) + (pe * math.log2(pe) + (1 - pe) * math.log2(1 - pe)) - pe * math.log2(3)
    assert lbo.fano_bits(0.8, 4) == pytest.approx(want)
    with pytest.raises(ValueError, match="'n_classes'"):
        lbo.fano_bits(0.5, 1)
    rng = np.random.default_rng(0)
    z, y = rng.standard_normal((600, 4)), rng.integers(0, 3, 600)
    acc, bits = lbo.probe_information(z[:400], y[:400], z[400:], y[400:])
    assert acc < 0.5 and bits < 0.1                                                    # z independent of y: no information


def test_bad_parameters_raise_naming_them():
    with pytest.raises(ValueError, match="'rho'"):
        lbo.run("smoke", rho=1.5)
    with pytest.raises(ValueError, match="'dataset'"):
        lbo.run("smoke", dataset="cifar")
    with pytest.raises(ValueError, match="'device'"):
        lbo.run("smoke", device="tpu")
    with pytest.raises(ValueError, match="'sep'"):
        lbo.gaussian_factors(sep=-1.0)
    with pytest.raises(ValueError, match="'frac'"):
        lbo.gaussian_factors(frac=1.0)
    with pytest.raises(ValueError, match="'dataset'"):
        lbo.make_data("cifar", 100, 50, 3.0, 0.0, 0.25, 6.0, 0.3, 0)
    with pytest.raises(ValueError, match="'which'"):
        lbo.train_encoders(lbo.gaussian_factors(n_train=100, n_test=20), steps=1, which=("U9",))


def test_smoke_result(smoke_result):
    r = smoke_result(SLUG)
    m = r.metrics
    assert len(m["seeds"]) == 3 and all(len(m[f"auroc_adj_{d}"]) == 3 for d in lbo.DETECTORS)
    # the representation the theorem calls blind carries (almost) no probe-detectable label information; S carries a lot
    assert max(m["probe_bits_U2"]) < 0.2 and min(m["probe_bits_S"]) > 1.0
    first = r.artefacts["first_seed"]
    assert set(first["pca"]) == {"U1", "U2", "U3", "S", "raw"} and f"U2|{r.params['k']}" in first["hist"]
    assert m["rho_sweep"] == [0.0, 0.5, 1.0] and len(m["rho_auroc_adj_U2"]) == 3
    status = {o.id: o.status for o in r.claims}
    assert status["theory"] == status["datasets"] == "not reproducible offline" and status["rho-monotone"] == "not checked at this scale"
