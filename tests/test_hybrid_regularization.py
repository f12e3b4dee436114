"""HRDIS (Dou et al., ICLR 2025): exact GMM denoiser vs Monte Carlo, the DR/CR/HR noise rules, Adam, operators,
the real-model path on a tiny random diffusers UNet, the tiny plain-torch ε-UNet (training, solvers), claims."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import iclrbench.explorers.hybrid_regularization as hre
import iclrbench.papers.hybrid_regularization as hr
from iclrbench.views.static import static_view


@pytest.mark.parametrize("t", [100, 500, 900])
def test_gmm_denoiser_matches_monte_carlo_posterior_mean(t):
    """E[x0|x_t] of the exact denoiser against a self-normalised Monte-Carlo estimate over prior samples."""
    rng = np.random.default_rng(t)
    centres = rng.uniform(-1, 1, (6, 4))
    s = 0.3
    den = hr.GMMDenoiser(centres, s=s)
    a = float(den.abar(t))
    n = 400_000
    x0 = centres[rng.integers(0, 6, n)] + s * rng.standard_normal((n, 4))          # samples of the prior
    for _ in range(3):
        xt = math.sqrt(a) * centres[rng.integers(0, 6)] + math.sqrt(1 - a) * rng.standard_normal(4) * 0.8
        logw = -((xt[None] - math.sqrt(a) * x0) ** 2).sum(1) / (2 * (1 - a))        # likelihood p(x_t | x0)
        w = np.exp(logw - logw.max()); w /= w.sum()
        mc = w @ x0
        ess = 1 / (w ** 2).sum()
        exact = den.posterior_mean(torch.tensor(xt)[None], a)[0].numpy()
        tol = 4 * math.sqrt(float(w @ ((x0 - mc) ** 2).sum(1)) / ess) + 1e-3
        assert np.abs(exact - mc).max() < tol, (t, exact, mc, ess)
        # ε̂ is Tweedie's identity applied to the same posterior mean
        eps = den(torch.tensor(xt)[None], t)[0].numpy()
        assert np.allclose(eps, (xt - math.sqrt(a) * exact) / math.sqrt(1 - a))


def test_gmm_denoiser_limits_and_dtypes():
    c = np.random.default_rng(0).uniform(-1, 1, (10, 8))
    den = hr.GMMDenoiser(c, s=0.1)
    x = torch.tensor(c[:2]) * math.sqrt(float(den.abar(0)))
    # almost no noise: the posterior mean is the nearest centre (shrunk negligibly)
    assert torch.allclose(den.posterior_mean(x, den.abar(0)), torch.tensor(c[:2]), atol=1e-2)
    # pure noise: the prior mean
    assert torch.allclose(den.posterior_mean(torch.randn(3, 8, dtype=torch.float64), 1e-12), torch.tensor(c.mean(0)).expand(3, 8), atol=1e-4)
    xt = torch.randn(4, 8, dtype=torch.float64)
    assert torch.allclose(den(xt.float(), 400).double(), den(xt, 400), atol=1e-4)
    with pytest.raises(ValueError, match="'s'"):
        hr.GMMDenoiser(c, s=0.0)


def test_adam_matches_torch():
    p1 = torch.randn(7, dtype=torch.float64, requires_grad=True)
    p2 = p1.detach().clone()
    opt, mine = torch.optim.Adam([p1], lr=0.1, betas=(0.9, 0.99)), hr.Adam(p2, lr=0.1, betas=(0.9, 0.99))
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        grad = torch.randn(7, generator=g, dtype=torch.float64)
        p1.grad = grad.clone(); opt.step(); mine.step(grad)
    assert torch.allclose(p1.detach(), p2, atol=1e-12)


class Recorder:
    "An ε-model that records the x_t it is called with and returns a fixed function of it."
    def __init__(self): self.calls = []
    def __call__(self, x_t, t):
        self.calls.append((x_t.clone(), int(torch.as_tensor(t).reshape(-1)[0])))
        return torch.tanh(x_t) * 0.5


def _problem(n=4):
    x, _ = hr.load_digit_images_sym()
    X = torch.tensor(x[1500:1500 + n], dtype=torch.float32)
    op = hr.make_operator("box")
    return X, op, hr.measure(op, X, 0.05, np.random.default_rng(0))


def test_noise_rules_of_dr_cr_hr():
    X, op, y = _problem()
    abar = hr.linear_alphas_cumprod()
    for method, beta in (("cr", 0.0), ("hr", 0.2)):
        rec = Recorder()
        sol = hr.solve_inverse(rec, op, y, method, beta=beta, steps=6, seed=1, sigma_x0=0.0)
        # reconstruct ν_k from x_t and the current μ is not possible after the fact, so recompute with the same noise:
        gen = torch.Generator().manual_seed(1)
        draws = [(torch.randn(X.shape, generator=gen, dtype=torch.float64).float(), torch.randn(X.shape, generator=gen, dtype=torch.float64).float()) for _ in range(6)]
        for k in range(1, 6):
            (xt_prev, _), (xt, t) = rec.calls[k - 1], rec.calls[k]
            eps_prev = torch.tanh(xt_prev) * 0.5
            nu = math.sqrt(1 - beta) * eps_prev + math.sqrt(beta) * draws[k][1]
            x0 = (xt - math.sqrt(1 - abar[t]) * nu) / math.sqrt(abar[t])    # the μ the solver used at step k
            assert torch.isfinite(x0).all()
            if k > 1:    # consecutive μ differ by one Adam step (≈ lr); a wrong ν would give O(1) errors here
                assert (x0 - prev).abs().max() < 0.35, (method, k)
            prev = x0
            if k == 1:   # no update at step 0: μ is still A†(y)
                assert torch.allclose(x0, op.pinv(y), atol=1e-3)
        assert rec.calls[0][1] == int(hr.timestep_grid(6)[0]) and rec.calls[-1][1] == int(hr.timestep_grid(6)[-1])
    # HR with β=1 is DR with the first update skipped, bit for bit; DR itself updates at step 0
    a = hr.solve_inverse(Recorder(), op, y, "hr", beta=1.0, steps=8, seed=2)
    b = hr.solve_inverse(Recorder(), op, y, "dr", steps=8, seed=2, skip_first=True)
    c = hr.solve_inverse(Recorder(), op, y, "dr", steps=8, seed=2)
    assert torch.equal(a.x, b.x) and not torch.equal(a.x, c.x)
    # CR is HR with β=0
    assert torch.equal(hr.solve_inverse(Recorder(), op, y, "cr", steps=8, seed=2).x,
                       hr.solve_inverse(Recorder(), op, y, "hr", beta=0.0, steps=8, seed=2).x)


def test_regularization_gradient_is_stop_gradient_times_mu():
    """The loss' gradient w.r.t. μ is w_t (ε̂ − ν)/numel + v · ∇ obs — the network is never differentiated."""
    X, op, y = _problem(2)
    calls = []
    def model(x_t, t):
        calls.append(x_t.requires_grad)
        return torch.zeros_like(x_t)
    hr.solve_inverse(model, op, y, "hr", steps=5)
    assert not any(calls)


def test_operators():
    x = torch.randn(3, 1, 8, 8, dtype=torch.float64)
    inp = hr.make_operator("box")
    assert inp.forward(x).shape == (3, 1, 32)
    back = inp.pinv(inp.forward(x))
    assert torch.equal(back[..., :4, :], x[..., :4, :]) and (back[..., 4:, :] == 0).all()
    rnd = hr.make_operator("random", rng=np.random.default_rng(0))
    assert int(rnd.mask.sum()) == round(0.3 * 64)
    sr = hr.make_operator("sr2")
    assert torch.allclose(sr.forward(sr.pinv(sr.forward(x))), sr.forward(x))
    blur = hr.make_operator("blur")
    assert blur.kernel.sum() == pytest.approx(1.0)
    const = torch.ones(1, 1, 8, 8, dtype=torch.float64)
    assert torch.allclose(blur.forward(const)[..., 2:6, 2:6], const[..., 2:6, 2:6])
    assert torch.equal(hr.make_operator("denoise").forward(x), x)
    with pytest.raises(ValueError, match="'task'"):
        hr.make_operator("deblur-nonlinear")


def test_hr_beats_dr_on_held_out_box_inpainting():
    prior, pool, _ = hr.split_digits(7)
    den = hr.GMMDenoiser(prior[:, 0], s=0.1)
    X = torch.tensor(pool[:24])
    op = hr.make_operator("box")
    y = hr.measure(op, X, 0.05, np.random.default_rng(7))
    from iclrbench.blocks.images import psnr
    res = {m: np.mean([psnr(hr.solve_inverse(den, op, y, m, seed=s).x, X).mean() for s in (1, 2)]) for m in ("dr", "hr")}
    assert res["hr"] > res["dr"] + 0.5, res


def test_tiny_random_unet_real_model_path(monkeypatch):
    """The solvers run on a diffusers UNet2DModel built from a config (random weights, no download)."""
    import sys
    # colour-science (imported by another test in this process) leaves a stand-in `matplotlib` module without a
    # __spec__, on which diffusers' optional-package probe raises; drop the stand-in for this test
    mpl = sys.modules.get("matplotlib")
    if mpl is not None and getattr(mpl, "__spec__", None) is None:
        monkeypatch.delitem(sys.modules, "matplotlib")
    from diffusers import DDPMScheduler, UNet2DModel
    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=16, in_channels=1, out_channels=1, block_out_channels=(16, 32), layers_per_block=1,
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=8)
    unet.eval()
    sched = DDPMScheduler(num_train_timesteps=1000, beta_start=1e-4, beta_end=0.02, beta_schedule="linear")
    assert np.allclose(sched.alphas_cumprod.numpy(), hr.linear_alphas_cumprod(), atol=1e-6)
    eps = hr.unet_eps_model(unet)
    x = torch.rand(2, 1, 16, 16) * 2 - 1
    op = hr.Inpainting(hr.box_mask(16, 8))
    y = hr.measure(op, x, 0.05, np.random.default_rng(0))
    outs = {}
    for m in ("dr", "cr", "hr", "dps"):
        sol = hr.solve_inverse(eps, op, y, m, steps=5, seed=3, alphas_cumprod=sched.alphas_cumprod, x_true=x, zeta=0.1)
        assert sol.x.shape == x.shape and torch.isfinite(sol.x).all() and sol.x.grad_fn is None
        assert len(sol.psnr_curve) == 5
        outs[m] = sol
    assert all(p.grad is None for p in unet.parameters())          # no graph kept through the network
    a = hr.solve_inverse(eps, op, y, "hr", beta=1.0, steps=5, seed=3, alphas_cumprod=sched.alphas_cumprod)
    b = hr.solve_inverse(eps, op, y, "dr", steps=5, seed=3, alphas_cumprod=sched.alphas_cumprod, skip_first=True)
    assert torch.equal(a.x, b.x)


def test_bad_parameters_raise_value_error():
    X, op, y = _problem(2)
    den = Recorder()
    for kw, name in ((dict(method="ddrm"), "method"), (dict(beta=1.5), "beta"), (dict(lr=0.0), "lr"),
                     (dict(weighting="cubic"), "weighting"), (dict(steps=1), "steps")):
        with pytest.raises(ValueError, match=f"'{name}'"):
            hr.solve_inverse(den, op, y, **kw)
    with pytest.raises(ValueError, match="'beta'"):
        hr.run("smoke", beta=2.0)
    with pytest.raises(ValueError, match="'tasks'"):
        hr.run("smoke", tasks="everything")


def test_same_seed_same_numbers_and_checks_can_fail():
    kw = dict(n_images=6, n_seeds=2, steps=20, width_sweep=False, progress=False)
    a, b = hr.run("smoke", seed=1, **kw), hr.run("smoke", seed=1, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    json.dumps(a.to_dict())
    m = dict(a.metrics)
    m.update(psnr_box_hr_mean=m["psnr_box_dr_mean"] + 0.1, psnr_box_hr_seed_std=m["psnr_box_dr_seed_std"] + 0.1,
             psnr_random_hr_mean=m["psnr_random_dr_mean"] - 0.1, seconds_per_solve_dps=0.0, seconds_per_solve_hr=1.0, psnr_box_dps_mean=0.0, dps_zeta=1.0,
             psnr_unet_box_dr_mean=15.0, psnr_unet_box_hr_mean=15.4, psnr_unet_box_cr_mean=15.2)
    for c in hr.CLAIMS:
        if c.check is not None:
            held, measured = c.check(m)
            assert not held and measured, c.id
    # the docs' static view, generated from the explorer built on the JSON round trip of the same tiny run:
    # one slider step per (β, task) of STATIC_GRID, each showing different curves
    from static_view_checks import assert_static_view
    from iclrbench.core import Result
    ex = hre.explore(Result.from_dict(json.loads(json.dumps(a.to_dict()))))
    fig = static_view(ex)
    (slider,) = assert_static_view(fig)
    grid = hre.HRExplorer.STATIC_GRID
    assert len(slider.steps) == len(grid["beta"]) * len(grid["task"]) and not ex.errors
    assert len(fig.to_json()) < 2_000_000


# ---- the learned prior: a tiny plain-torch ε-UNet on 16×16 digits (full scale) ----

def test_tiny_unet_shapes_and_seeded_init():
    from iclrbench.core import torch_threads
    with torch_threads(1):
        _tiny_unet_shapes()


def _tiny_unet_shapes():
    net = hr.tiny_unet(0)
    x, t = torch.randn(5, 1, 16, 16), torch.tensor([0, 10, 500, 990, 999])
    out = net(x, t)
    assert out.shape == (5, 1, 16, 16) and torch.isfinite(out).all()
    assert torch.equal(out, hr.tiny_unet(0)(x, t))                      # same seed, same weights
    assert not torch.equal(out, hr.tiny_unet(1)(x, t))
    assert torch.equal(net(x, 500), net(x, torch.full((5,), 500)))       # a scalar t is broadcast
    assert not torch.allclose(net(x, 10), net(x, 900))                   # the timestep enters
    state = torch.random.get_rng_state()
    hr.tiny_unet(3)
    assert torch.equal(state, torch.random.get_rng_state())              # global RNG untouched
    emb = hr.timestep_embedding(torch.tensor([0, 7]), 8)
    assert torch.allclose(emb[0], torch.tensor([0.0] * 4 + [1.0] * 4)) and torch.allclose(emb[1, 0], torch.sin(torch.tensor(7.0)))


def test_short_ddpm_training_reduces_eps_mse_and_is_seeded():
    prior, _, _ = hr.split_digits(0, 300)
    data = hr.digits_16(prior)
    assert data.shape == (300, 1, 16, 16) and data.min() >= -1 and data.max() <= 1
    g = torch.Generator().manual_seed(5)
    x0 = torch.tensor(data[:64])
    t, noise = torch.randint(0, 1000, (64,), generator=g), torch.randn(x0.shape, generator=g)
    net = hr.tiny_unet(0)
    before = hr.eps_mse(net, x0, t, noise)
    with torch.no_grad():   # eps_mse is the objective written out
        a = torch.tensor(hr.linear_alphas_cumprod(), dtype=torch.float32)[t].reshape(-1, 1, 1, 1)
        assert before == pytest.approx(float(((net(a.sqrt() * x0 + (1 - a).sqrt() * noise, t) - noise) ** 2).mean()), rel=1e-5)
    from iclrbench.core import torch_threads
    with torch_threads(1):
        losses = hr.train_eps_model(net, data, steps=30, batch_size=16, seed=1, progress=False)
        runs = [hr.train_eps_model(hr.tiny_unet(0), data, steps=4, batch_size=8, seed=1, progress=False) for _ in range(2)]
    after = hr.eps_mse(net, x0, t, noise)
    assert len(losses) == 30 and np.isfinite(losses).all()
    assert after < 0.8 * before, (before, after)
    assert np.array_equal(*runs)                                         # seeded end to end
    assert all(not p.requires_grad for p in net.parameters()) and not net.training
    with pytest.raises(ValueError, match="'steps'"):
        hr.train_eps_model(net, data, steps=0)


def _unet_problem(n=3):
    _, pool, _ = hr.split_digits(0)
    X = torch.tensor(hr.digits_16(pool[:n]))
    op = hr.Inpainting(hr.box_mask(16, 8))
    return X, op, hr.measure(op, X, 0.05, np.random.default_rng(0))


def test_solvers_run_on_the_tiny_unet_and_beta_one_is_dr():
    from iclrbench.core import torch_threads
    with torch_threads(1):       # small convolutions: one thread is many times faster on 2-core machines
        _solvers_on_tiny_unet()


def _solvers_on_tiny_unet():
    X, op, y = _unet_problem()
    net = hr.tiny_unet(0)
    net.requires_grad_(False)
    eps = hr.unet_eps_model(net)
    for m in ("dr", "cr", "hr"):
        sol = hr.solve_inverse(eps, op, y, m, steps=5, seed=3, x_true=X)
        assert sol.x.shape == X.shape and torch.isfinite(sol.x).all() and np.isfinite(sol.psnr_curve).all()
        assert len(sol.reg_norm) == 5 and sol.x.grad_fn is None
    a = hr.solve_inverse(eps, op, y, "hr", beta=1.0, steps=5, seed=3)
    b = hr.solve_inverse(eps, op, y, "dr", steps=5, seed=3, skip_first=True)
    assert torch.equal(a.x, b.x)
    assert not torch.equal(a.x, hr.solve_inverse(eps, op, y, "hr", beta=0.2, steps=5, seed=3).x)


def test_run_unet_params_are_validated_and_a_tiny_unet_run_reports_the_claim():
    for kw, name in ((dict(unet_prior="yes"), "unet_prior"), (dict(unet_train_steps=0), "unet_train_steps"),
                     (dict(unet_train_steps=2.5), "unet_train_steps"), (dict(unet_images=1000), "unet_images")):
        with pytest.raises(ValueError, match=f"'{name}'"):
            hr.run("smoke", **kw)
    assert hr.SCALES["smoke"]["unet_prior"] is False and hr.SCALES["full"]["unet_prior"] is True
    r = hr.run("full", n_images=4, n_seeds=2, steps=10, tasks="inpainting", width_sweep=False, beta_sweep=False, dps=False,
               unet_train_steps=10, unet_images=3, progress=False)
    m = r.metrics
    for prior in ("unet", "gmm16"):
        for meth in ("dr", "cr", "hr"):
            assert len(m[f"psnr_{prior}_box_{meth}"]) == 2 and np.isfinite(m[f"psnr_{prior}_box_{meth}_mean"])
    assert m["hr_minus_dr_unet_box"] == pytest.approx(m["psnr_unet_box_hr_mean"] - m["psnr_unet_box_dr_mean"])
    outcome = {c.id: c for c in r.claims}["hr-beats-dr-unet"]
    assert outcome.status in ("held", "not held") and "UNet" in outcome.measured
    assert np.asarray(r.artefacts["images_unet_box"]["hr"]).shape == (3, 16, 16)
    for f in (hre.fig_unet_images, hre.fig_unet_bars, hre.fig_unet_loss):
        f(r)
    # the trained UNet travels in the result's live objects (never serialised)
    assert isinstance(r.objects["unet"], hr.TinyUNet) and "unet" not in r.to_dict()["artefacts"]
    # at smoke scale the UNet claim is not checked
    s = hr.run("smoke", n_images=2, n_seeds=1, steps=10, width_sweep=False, progress=False)
    assert {c.id: c.status for c in s.claims}["hr-beats-dr-unet"] == "not checked at this scale"
    assert "images_unet_box" not in s.artefacts
