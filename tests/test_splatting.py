"""Tests of blocks/splatting.py: the tiled renderer equals the brute-force float64 reference (values and gradients),
gradients match finite differences, a single Gaussian by hand, depth order, the 1/255 skip, the SH basis, SSIM."""
import math

import numpy as np
import pytest
import torch
from skimage.metrics import structural_similarity

from iclrbench.blocks import splatting as S
from iclrbench.blocks.cameras import Camera, intrinsics, make_camera, random_quaternions


def _scene(n, K, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(n, 3, generator=g, dtype=dtype) - 0.5) * 0.9,
            torch.tensor(random_quaternions(n, np.random.default_rng(seed)), dtype=dtype),
            torch.rand(n, 3, generator=g, dtype=dtype) * 0.15 + 0.04,
            torch.rand(n, generator=g, dtype=dtype) * 0.85 + 0.1,
            (torch.randn(n, K, 3, generator=g, dtype=dtype) * 0.4) if K else torch.rand(n, 3, generator=g, dtype=dtype)]


@pytest.mark.parametrize("K,tile,seed", [(4, None, 0), (4, 3, 1), (9, 4, 2), (1, 2, 3), (0, 5, 4)])
def test_renderer_equals_brute_force_reference_values_and_gradients(K, tile, seed):
    cam = make_camera([2.4, 0.6, 0.9], [0, 0, 0], 11, 9, 55)
    bg = (0.2, 0.5, 0.1)
    w = torch.randn(9, 11, 3, generator=torch.Generator().manual_seed(99), dtype=torch.float64)
    a = [x.clone().requires_grad_() for x in _scene(6, K, seed)]
    b = [x.clone().requires_grad_() for x in _scene(6, K, seed)]
    out = S.render(*a, cam, bg, tile=tile)
    ref = S.render_reference(*b, cam, bg)
    assert ref.std() > 0.05                                            # the Gaussians are actually on screen
    assert torch.allclose(out.image, ref, atol=1e-12)
    (out.image * w).sum().backward(); (ref * w).sum().backward()
    for x, y in zip(a, b):
        assert torch.allclose(x.grad, y.grad, atol=1e-10), (x.grad - y.grad).abs().max()


def test_gradients_match_finite_differences():
    cam = make_camera([2.0, -0.7, 1.0], [0, 0, 0], 8, 8, 60)
    base = _scene(4, 4, 7)
    w = torch.randn(8, 8, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    f = lambda *xs: (S.render(*xs, cam, (1.0, 1.0, 1.0), tile=4).image * w).sum()
    xs = [x.clone().requires_grad_() for x in base]
    f(*xs).backward()
    eps = 1e-6
    for i, x in enumerate(base):
        flat = x.reshape(-1)
        for j in (0, flat.numel() - 1):
            up = [y.clone() for y in base]; dn = [y.clone() for y in base]
            up[i].reshape(-1)[j] += eps; dn[i].reshape(-1)[j] -= eps
            fd = (f(*up) - f(*dn)) / (2 * eps)
            assert abs(float(fd) - float(xs[i].grad.reshape(-1)[j])) < 1e-5 * max(1.0, abs(float(fd))), (i, j)


def test_float32_tiles_agree_with_dense():
    cam = make_camera([2.4, 0.3, 1.2], [0, 0, 0], 40, 32)
    a = [x.float() for x in _scene(300, 4, 11)]
    dense = S.render(*a, cam, tile=None)
    for t in (4, 7, 16):
        out = S.render(*a, cam, tile=t)
        assert torch.allclose(out.image, dense.image, atol=2e-5) and out.n_pairs >= dense.visible.sum()


def test_single_gaussian_by_hand():
    W = H = 21
    cam = Camera(intrinsics(W, H, 60.0), np.eye(3), np.zeros(3), W, H)
    f, z, s, o = cam.fx, 3.0, 0.05, 0.8
    mean = torch.tensor([[0.0, 0.0, z]], dtype=torch.float64)
    out = S.render(mean, torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64), torch.full((1, 3), s, dtype=torch.float64),
                   torch.tensor([o], dtype=torch.float64), torch.tensor([[0.9, 0.2, 0.1]], dtype=torch.float64), cam, (0.0, 0.0, 1.0))
    var = (f * s / z) ** 2 + 0.3                                        # EWA: J Σ Jᵀ at the axis + dilation
    for (i, j) in ((10, 10), (10, 12), (13, 10)):
        d2 = (j + 0.5 - W / 2) ** 2 + (i + 0.5 - H / 2) ** 2
        a = min(0.99, o * math.exp(-0.5 * d2 / var))
        a = a if a >= 1 / 255 else 0.0
        assert torch.allclose(out.image[i, j], torch.tensor([0.9 * a, 0.2 * a, 0.1 * a + (1 - a)], dtype=torch.float64))
        assert math.isclose(float(out.alpha[i, j]), a)
    assert torch.equal(out.image[0, 0], torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))


def test_depth_order_and_the_alpha_skip():
    cam = Camera(intrinsics(9, 9, 60.0), np.eye(3), np.zeros(3), 9, 9)
    q = torch.tensor([[1.0, 0, 0, 0]] * 2)
    sc = torch.full((2, 3), 0.3)
    col = torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
    near_red = S.render(torch.tensor([[0, 0, 2.0], [0, 0, 3.0]]), q, sc, torch.tensor([0.95, 0.95]), col, cam).image[4, 4]
    near_green = S.render(torch.tensor([[0, 0, 3.0], [0, 0, 2.0]]), q, sc, torch.tensor([0.95, 0.95]), col, cam).image[4, 4]
    assert near_red[0] > 0.9 > 0.1 > near_red[1] and near_green[1] > 0.9 > 0.1 > near_green[0]
    # opacity below 1/255 contributes nothing; a Gaussian behind the camera neither
    faint = S.render(torch.tensor([[0, 0, 2.0]]), q[:1], sc[:1], torch.tensor([1 / 300]), col[:1], cam, (0.3, 0.3, 0.3)).image
    behind = S.render(torch.tensor([[0, 0, -2.0]]), q[:1], sc[:1], torch.tensor([0.9]), col[:1], cam, (0.3, 0.3, 0.3)).image
    assert torch.equal(faint, torch.full((9, 9, 3), 0.3)) and torch.equal(behind, torch.full((9, 9, 3), 0.3))


def test_sh_basis_is_orthonormal_and_degree0_is_the_dc_colour():
    n = 40000
    k = np.arange(n) + 0.5
    th, ph = np.arccos(1 - 2 * k / n), np.pi * (1 + 5 ** 0.5) * k
    d = torch.tensor(np.c_[np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)])
    Y = S.sh_basis(d, 2)
    gram = (Y.T @ Y) * 4 * np.pi / n
    assert torch.allclose(gram, torch.eye(9, dtype=torch.float64), atol=2e-3)
    rgb = torch.tensor([[0.2, 0.6, 0.9]])
    assert torch.allclose(S.sh_to_color(S.rgb_to_sh_dc(rgb)[:, None, :], d[:1].float()), rgb)
    with pytest.raises(ValueError, match="'sh_degree'"): S.sh_basis(d, 3)


def test_ssim_matches_scikit_image_away_from_the_border():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(32, 32, 3)); b = np.clip(a + rng.normal(0, 0.1, a.shape), 0, 1)
    m = S.ssim_torch(torch.tensor(a), torch.tensor(b), reduce=False).numpy()
    _, ref = structural_similarity(a, b, channel_axis=2, data_range=1.0, gaussian_weights=True, sigma=1.5,
                                   use_sample_covariance=False, full=True)
    assert np.allclose(m[5:-5, 5:-5], ref[5:-5, 5:-5], atol=1e-6)
    assert float(S.ssim_torch(torch.tensor(a), torch.tensor(a))) == pytest.approx(1.0)
    assert float(S.photometric_loss(torch.tensor(a), torch.tensor(a))) == pytest.approx(0.0, abs=1e-7)


def test_bad_parameters_raise_value_error_naming_the_parameter():
    a = _scene(2, 4, 0, torch.float32)
    cam = make_camera([2, 0, 1], [0, 0, 0], 8, 8)
    with pytest.raises(ValueError, match="'tile'"): S.render(*a, cam, tile=0)
    with pytest.raises(ValueError, match="'sh'"): S.sh_to_color(torch.zeros(2, 4, 3), torch.zeros(2, 3), 2)
