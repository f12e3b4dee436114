"""Shared image utilities: digits loading, scaling, upsampling, PSNR, the small CNN and its trainer."""
from __future__ import annotations

import numpy as np
import pytest

import iclrbench.blocks.images as im


def test_load_and_scale():
    x, y = im.load_digit_images((-1, 1))
    assert x.shape == (1797, 8, 8) and x.dtype == np.float32 and y.shape == (1797,)
    assert x.min() == -1 and x.max() == 1
    x01, _ = im.load_digit_images()
    assert np.allclose(im.scale_images(x01, (0, 1), (-1, 1)), x, atol=1e-6)
    with pytest.raises(ValueError, match="'dst_range'"):
        im.scale_images(x, (0, 1), (1, 1))


def test_split_is_stratified_and_deterministic():
    a = im.digits_split(0.2, seed=3)
    b = im.digits_split(0.2, seed=3)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    xtr, ytr, xte, yte = a
    assert len(xte) == 360 and np.bincount(yte).min() >= 35
    with pytest.raises(ValueError, match="'test_fraction'"):
        im.digits_split(1.5)


def test_upsample_matches_torch_and_preserves_constants():
    import torch
    x = np.random.default_rng(0).random((4, 8, 8)).astype(np.float32)
    u = im.upsample(x, 32)
    assert u.shape == (4, 32, 32) and isinstance(u, np.ndarray)
    ref = torch.nn.functional.interpolate(torch.tensor(x)[:, None], size=(32, 32), mode="bilinear", align_corners=False)[:, 0]
    assert np.allclose(u, ref.numpy())
    assert np.allclose(im.upsample(np.full((2, 1, 8, 8), 0.3, np.float32), 16), 0.3)
    t = im.upsample(torch.tensor(x), 16, mode="nearest")
    assert isinstance(t, torch.Tensor) and t.shape == (4, 16, 16) and torch.equal(t[:, ::2, ::2], torch.tensor(x))
    with pytest.raises(ValueError, match="'mode'"):
        im.upsample(x, 16, mode="magic")


def test_psnr_matches_scikit_image_and_masks():
    from skimage.metrics import peak_signal_noise_ratio
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (3, 8, 8)), rng.uniform(-1, 1, (3, 8, 8))
    p = im.psnr(a, b, data_range=2.0)
    assert p.shape == (3,)
    for i in range(3):
        assert p[i] == pytest.approx(peak_signal_noise_ratio(b[i], a[i], data_range=2.0))
    m = np.zeros((8, 8)); m[4:] = 1
    c = a.copy(); c[:, :4] = b[:, :4]          # identical on the unmasked half
    assert np.allclose(im.psnr(c, b, 2.0, mask=m), [peak_signal_noise_ratio(b[i, 4:], a[i, 4:], data_range=2.0) for i in range(3)])
    with pytest.raises(ValueError, match="'data_range'"):
        im.psnr(a, b, data_range=0)


def test_small_cnn_trains_to_high_accuracy():
    xtr, ytr, xte, yte = im.digits_split(0.2, seed=0)
    net = im.small_cnn(image_size=16)
    h = im.train_classifier(net, im.upsample(xtr, 16), ytr, epochs=8, lr=3e-3, seed=0, progress=False)
    assert h["loss"][-1] < 0.3 * h["loss"][0]
    assert im.accuracy(net, im.upsample(xte, 16), yte) > 0.93
    # same seed, same weights
    net2 = im.small_cnn(image_size=16, seed=5)
    im.train_classifier(net2, im.upsample(xtr, 16), ytr, epochs=1, lr=3e-3, seed=0, progress=False)
    net3 = im.small_cnn(image_size=16, seed=5)
    im.train_classifier(net3, im.upsample(xtr, 16), ytr, epochs=1, lr=3e-3, seed=0, progress=False)
    assert all(np.array_equal(p.detach().numpy(), q.detach().numpy()) for p, q in zip(net2.parameters(), net3.parameters()))
    with pytest.raises(ValueError, match="'image_size'"):
        im.small_cnn(image_size=30)
