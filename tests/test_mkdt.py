"""Tests of iclrbench.papers.mkdt (and the Barlow Twins loss it adds to blocks.ssl): augmentations, the flat-parameter
student, KD experts, high-loss initialisation, trajectory matching (second-order gradients into X_s, Y_s and α; a set
distilled onto itself matches exactly), the gradient-variance measure, the real-model path, and the smoke run."""
import numpy as np
import pytest
import torch
import torch.nn as nn

from iclrbench.blocks.ssl import barlow_twins_loss
from iclrbench.papers import mkdt


def test_barlow_twins_loss_matches_a_batchnorm_cross_correlation_by_hand():
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(16, 5, generator=g, dtype=torch.float64), torch.randn(16, 5, generator=g, dtype=torch.float64)
    bn = nn.BatchNorm1d(5, affine=False, dtype=torch.float64).train()
    c = (bn(z1).T @ bn(z2) / 16).numpy()
    want = ((np.diag(c) - 1) ** 2).sum() + 0.01 * (c ** 2 - np.diag(np.diag(c) ** 2)).sum()
    assert float(barlow_twins_loss(z1, z2, lambd=0.01)) == pytest.approx(want, rel=1e-10)
    # identical, decorrelated views: C = I, loss 0
    q, _ = torch.linalg.qr(torch.randn(16, 5, generator=g, dtype=torch.float64))
    z = (q - q.mean(0)) * 4
    z = z / z.std(0, unbiased=False)
    assert float(barlow_twins_loss(z, z, eps=0.0)) < 0.05
    with pytest.raises(ValueError, match="'z2'"): barlow_twins_loss(z1, z2[:, :3])
    with pytest.raises(ValueError, match="'lambd'"): barlow_twins_loss(z1, z2, lambd=-1)


def test_augment_shift_noise_erase():
    g = torch.Generator().manual_seed(0)
    ones = torch.ones(6, 1, 8, 8)
    erased = mkdt.augment(ones, g, shift=0, noise=0.0, erase=3)
    assert torch.all((1 - erased).sum((1, 2, 3)) == 9)                         # exactly one 3×3 square zeroed
    blob = torch.zeros(6, 1, 8, 8); blob[:, 0, 2:6, 2:6] = 1.0
    moved = mkdt.augment(blob, g, shift=1, noise=0.0, erase=0)
    assert torch.all(moved.sum((1, 2, 3)) == 16)                                # ±1 shift of an interior blob keeps it whole
    x = blob.clone().requires_grad_(True)
    mkdt.augment(x, g).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="'x'"): mkdt.augment(torch.zeros(8, 8), g)


def test_flat_model_equals_the_module_and_kd_gradient_matches_finite_differences():
    torch.manual_seed(0)
    net = mkdt.ConvNetMini().double()
    fm = mkdt.FlatModel(net)
    th = fm.flatten()
    x, y = torch.rand(5, 1, 8, 8, dtype=torch.float64), torch.randn(5, 64, dtype=torch.float64)
    assert torch.allclose(fm(th, x), net(x)) and fm.submodule(th, "features", x).shape == (5, 128)
    th = th.requires_grad_(True)
    g = torch.autograd.grad(mkdt.kd_loss(fm, th, x, y), th)[0]
    for i in (0, 300, fm.n_params - 1):
        e = torch.zeros_like(th); e[i] = 1e-6
        fd = (mkdt.kd_loss(fm, th.detach() + e, x, y) - mkdt.kd_loss(fm, th.detach() - e, x, y)) / 2e-6
        assert float(g[i]) == pytest.approx(float(fd), rel=1e-5, abs=1e-10)
    with pytest.raises(ValueError, match="'theta'"): fm(th[:-1], x)


def test_high_loss_initialisation_picks_the_worst_fitted_examples():
    torch.manual_seed(0)
    fm = mkdt.FlatModel(mkdt.ConvNetMini())
    x = torch.rand(20, 1, 8, 8)
    traj = [fm.flatten(), fm.flatten()]
    y = fm(traj[1], x).detach().clone()
    y[[3, 11, 17]] += torch.tensor([5.0, 3.0, 4.0])[:, None]                  # three badly fitted targets
    assert mkdt.high_loss_indices(fm, [traj], x, y, 3).tolist() == [3, 17, 11]
    with pytest.raises(ValueError, match="'size'"): mkdt.high_loss_indices(fm, [traj], x, y, 0)


def test_matching_loss_gradient_in_alpha_matches_finite_differences_and_reaches_all_synthetic_parameters():
    torch.manual_seed(0)
    fm = mkdt.FlatModel(mkdt.ConvNetMini(width=4, out_dim=3).double())
    x, y = torch.rand(6, 1, 8, 8, dtype=torch.float64), torch.randn(6, 3, dtype=torch.float64)
    traj = mkdt.train_trajectory(fm, fm.flatten(), x, y, epochs=2, batch_size=3)
    xs, ys = x[:3].clone().requires_grad_(True), y[:3].clone().requires_grad_(True)
    a = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)

    def L(alpha):
        return mkdt.matching_loss(fm, traj[0].clone().requires_grad_(True), traj[2], xs, ys, alpha, 3, 3, torch.Generator().manual_seed(0))
    loss = L(a)
    loss.backward()
    assert xs.grad.abs().sum() > 0 and ys.grad.abs().sum() > 0                 # second order: X_s and Y_s, through the unrolled steps
    fd = (L(torch.tensor(0.1 + 1e-6, dtype=torch.float64)).detach() - L(torch.tensor(0.1 - 1e-6, dtype=torch.float64)).detach()) / 2e-6
    assert float(a.grad) == pytest.approx(float(fd), rel=1e-5)


def _teacher_resnet18():
    tv = pytest.importorskip("torchvision")
    return tv.models.resnet18(weights=None, num_classes=64)


class _TinyResNet(nn.Module):
    "Stand-in when torchvision cannot be imported: a random residual conv net with batch norm and a 64-d fc."
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.fc = nn.Linear(16, 64)

    def forward(self, x):
        h = self.stem(x)
        return self.fc(torch.relu(h + self.block(h)).mean((2, 3)))


def _real_model_path(teacher: nn.Module):
    torch.manual_seed(0)
    images = torch.rand(32, 3, 32, 32)
    reps = mkdt.representations(teacher.eval(), images)
    assert reps.shape == (32, 64)
    student_fn = lambda: mkdt.ConvNetMini(in_channels=3, width=8, image_size=32, out_dim=64)
    fm = mkdt.FlatModel(student_fn())
    experts = mkdt.train_experts(fm, student_fn, images, reps, n_experts=2, epochs=2, batch_size=16)
    d = mkdt.mkdt_distill(student_fn, reps, images, experts, size=8, iterations=5, syn_steps=3, expert_epochs=1,
                          max_start_epoch=1, lr_img=10.0)
    assert len(d.loss) == 5 and all(np.isfinite(d.loss)) and d.images.shape == (8, 3, 32, 32)
    assert all(v > 0 for v in d.grad_norms.values()), d.grad_norms           # X_s, Y_s and α all receive gradients
    assert not torch.equal(d.images, d.init_images) and not torch.equal(d.targets, d.init_targets)
    # the full set distilled onto itself: experts trained with the inner loop's own plain full-batch SGD are matched exactly
    plain = mkdt.train_experts(fm, student_fn, images, reps, n_experts=1, epochs=2, batch_size=32, lr=0.1, momentum=0.0, weight_decay=0.0)
    self_d = mkdt.mkdt_distill(student_fn, reps, images, plain, size=32, iterations=1, syn_steps=1, expert_epochs=1,
                               max_start_epoch=1, syn_lr=0.1, lr_img=0.0, lr_labels=0.0, lr_lr=0.0)
    assert self_d.loss[0] < 1e-8
    with pytest.raises(ValueError, match="'experts'"):
        mkdt.mkdt_distill(lambda: mkdt.ConvNetMini(in_channels=3, width=4, image_size=32), reps, images, experts, 4)


def test_real_model_path_with_a_random_torchvision_resnet18_teacher():
    try:
        teacher = _teacher_resnet18()
    except (ImportError, RuntimeError) as e:                                 # e.g. a CUDA torchvision wheel beside a CPU torch
        pytest.skip(f"torchvision not importable: {e}")
    _real_model_path(teacher)


def test_real_model_path_with_a_random_residual_teacher():
    _real_model_path(_TinyResNet())


def test_relative_gradient_variance_is_zero_for_full_batches_and_large_for_barlow_twins():
    torch.manual_seed(0)
    fm = mkdt.FlatModel(mkdt.ConvNetMini().double())
    x = torch.rand(64, 1, 8, 8, dtype=torch.float64)
    y = torch.randn(64, 64, dtype=torch.float64)
    th = fm.flatten()
    assert mkdt.relative_gradient_variance(fm, th, x, y, "kd", n_batches=4, batch_size=64) < 1e-20   # same batch every time
    kd = mkdt.relative_gradient_variance(fm, th, x, y, "kd", n_batches=10, batch_size=16)
    ssl = mkdt.relative_gradient_variance(fm, th, x, None, "ssl", n_batches=10, batch_size=16)
    assert 0 < kd and ssl > kd
    with pytest.raises(ValueError, match="'n_batches'"): mkdt.relative_gradient_variance(fm, th, x, y, n_batches=1)


def test_bad_parameters_raise_value_error_naming_the_parameter():
    for kw, name in ((dict(iterations=-1), "'iterations'"), (dict(label_fractions="0.02,x"), "'label_fractions'"),
                     (dict(device="tpu"), "'device'"), (dict(size_fraction=0.9), "'size_fraction'")):
        with pytest.raises(ValueError, match=name): mkdt.run("smoke", progress=False, **kw)
    fm = mkdt.FlatModel(mkdt.ConvNetMini())
    x = torch.rand(4, 1, 8, 8)
    with pytest.raises(ValueError, match="'loss'"): mkdt.train_trajectory(fm, fm.flatten(), x, None, loss="simclr")
    with pytest.raises(ValueError, match="'inner'"): mkdt.distill(fm, [[fm.flatten()] * 3], x, torch.zeros(4, 64), inner="x")
    with pytest.raises(ValueError, match="'max_start_epoch'"):
        mkdt.distill(fm, [[fm.flatten()] * 3], x, torch.zeros(4, 64), expert_epochs=2, max_start_epoch=2)


def test_smoke_run_measures_the_variance_gap_and_learns_images_targets_and_step_size(smoke_result):
    r = smoke_result("mkdt")
    m = r.metrics
    assert len(m["seeds"]) == 3
    for s in range(3):
        assert m["rv_ssl_init"][s] > 3 * m["rv_kd_init"][s]                   # the mechanism, per seed, at initialisation
        assert m["image_change"][s] > 0 and m["target_change"][s] > 0 and m["learned_lr"][s] != r.params["syn_lr"]
        assert m["grad_norm_images"][s] > 0 and m["grad_norm_targets"][s] > 0 and m["grad_norm_lr"][s] > 0
    assert all(0 <= a <= 1 for k in ("acc_mkdt", "acc_random", "acc_none", "acc_high_loss") for a in m[k])
    assert all(0.1 <= c <= 1 for c in m["high_loss_top_class_share"])       # MKDT's initialisation is reported with its make-up
    assert m["mkdt_minus_high_loss"] == pytest.approx(np.mean(m["acc_mkdt"]) - np.mean(m["acc_high_loss"]))
    assert len(r.artefacts["match_loss"]) == 3 and len(r.artefacts["match_loss"][0]) == r.params["iterations"]
    assert np.asarray(r.artefacts["images"]["mkdt"]).shape == (30, 8, 8)
