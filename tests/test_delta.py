"""Tests of papers/delta.py: depth representations (positivity, scale equivariance of log), the 4-D correlation,
local-window attention with masked padding, the attention upsampler (convex weights), losses, the lookup baseline,
gradients, that a briefly trained tracker uses the video (through the correlation) and follows a global shift, bad
parameters, determinism, and the smoke run's claims."""
import contextlib
import json
import math

import numpy as np
import pytest
import torch

from iclrbench.blocks import scenes3d as S
from iclrbench.blocks.cameras import intrinsics
from iclrbench.papers import delta as D


@pytest.fixture(autouse=True)
def one_thread():
    "Small networks on the shared 2-core machines: one torch thread (as the harness does), restored afterwards."
    from iclrbench.core.runtime import torch_threads
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def clips():
    return D.to_tensors(S.flying_planes_batch([0, 1, 2], 16, 4))


def test_log_depth_update_keeps_depth_positive_and_is_multiplicative():
    d = torch.tensor([0.02, 1.0, 50.0])
    for delta in (torch.full((3,), -1e4), torch.full((3,), 1e4), torch.randn(3) * 30):
        out = D.depth_update(d, delta, "log")
        assert torch.all(out > 0)
    # d ← d·exp(0.1·clamp(δ, −50, 50)): worked by hand
    assert torch.allclose(D.depth_update(torch.tensor([2.0]), torch.tensor([3.0]), "log"), torch.tensor([2.0 * math.exp(0.3)]))
    assert torch.allclose(D.depth_update(torch.tensor([2.0]), torch.tensor([1e9]), "log"), torch.tensor([2.0 * math.exp(5.0)]))
    # inverse: 1/d ← 1/d + 0.1δ; metric: d ← d + 0.1δ (clamped at 0.01)
    assert torch.allclose(D.depth_update(torch.tensor([2.0]), torch.tensor([1.0]), "inverse"), torch.tensor([1 / 0.6]))
    assert torch.allclose(D.depth_update(torch.tensor([2.0]), torch.tensor([-50.0]), "metric"), torch.tensor([0.01]))
    # log: inputs invariant and update equivariant under a global depth scale; metric: not
    a, b, c = torch.tensor([1.2]), torch.tensor([1.5]), torch.tensor([1.1])
    assert torch.allclose(D.depth_features(4 * a, 4 * b, 4 * c, "log"), D.depth_features(a, b, c, "log"))
    assert not torch.allclose(D.depth_features(4 * a, 4 * b, 4 * c, "metric"), D.depth_features(a, b, c, "metric"))


def test_model_log_variant_is_scale_equivariant_and_metric_is_not(clips):
    torch.manual_seed(0)
    for rep, equi in (("log", True), ("metric", False)):
        m = D.DeltaMini(D.DeltaConfig(depth_repr=rep)).eval()
        v, d = clips["video"][:2], clips["depth_noisy"][:2]
        with torch.no_grad():
            o1, o4 = m(v, d), m(v, 4 * d)
            f1, f4 = m.upsample(o1, d), m.upsample(o4, 4 * d)
        same = torch.allclose(f4["depth"], 4 * f1["depth"], rtol=1e-4) and torch.allclose(f4["coords"], f1["coords"], atol=1e-4)
        assert same == equi, rep
        assert torch.all(f1["depth"] > 0)


def test_correlation_matches_brute_force_dot_products():
    torch.manual_seed(1)
    s, t = torch.randn(5, 9, 4), torch.randn(5, 9, 4)
    c = D.correlation_4d(s, t).view(5, 9, 9)
    for i in range(9):
        for j in range(9):
            assert torch.allclose(c[:, i, j], (s[:, i] * t[:, j]).sum(-1) / 2.0, atol=1e-6)
    # the model's batched correlation volume equals correlation_4d on the sampled patches
    m = D.DeltaMini(D.DeltaConfig()).eval()
    v, d = torch.rand(1, 3, 3, 16, 16), 1 + torch.rand(1, 3, 16, 16)
    pyr = m.features(v)
    q = D.DeltaMini.query_grid(16, 16)[None]
    offs = D.patch_offsets(2) * 4
    sup = D.sample_map(pyr[0][:, 0], (q[:, :, None] + offs).reshape(1, -1, 2), 4).view(1, 16, 25, -1)
    tgt = D.sample_map(pyr[0][:, 2], (q[:, :, None] + offs).reshape(1, -1, 2), 4).view(1, 16, 25, -1)
    ref = D.correlation_4d(sup, tgt)                                     # (1, 16, 625) at frame 3, queries unmoved
    with torch.no_grad():
        vol = sup.reshape(16, 25, -1) @ tgt.reshape(16, 25, -1).transpose(1, 2) / math.sqrt(sup.shape[-1])
    assert torch.allclose(vol.reshape(1, 16, 625), ref, atol=1e-5)


def test_local_window_attention_masks_padding():
    torch.manual_seed(2)
    blk = D.Residual(8, 2)
    x = torch.randn(2, 30, 8)                                            # a 5×6 grid, 4×4 windows → padded to 8×8
    w, valid = D.window_partition(x, (5, 6), 4)
    assert w.shape == (2 * 4, 16, 8) and valid.sum() == 2 * 30
    out = D.window_merge(blk(w, key_mask=valid), 2, (5, 6), 4)
    ij = torch.stack(torch.meshgrid(torch.arange(5), torch.arange(6), indexing="ij"), -1).view(30, 2) // 4
    same = (ij[:, None] == ij[None]).all(-1)
    q = blk.n1(x)
    ref = x + torch.stack([blk.attn(q[:, i:i + 1], q[:, same[i]])[:, 0] for i in range(30)], 1)
    ref = ref + blk.mlp(blk.n2(ref))
    assert torch.allclose(out, ref, atol=1e-5)
    # garbage written into the padding slots changes nothing for real tokens
    w2 = w.clone(); w2[~valid] = 1e3
    assert torch.allclose(D.window_merge(blk(w2, key_mask=valid), 2, (5, 6), 4), out, atol=1e-4)


def test_upsampler_weights_are_convex_and_interpolate_motion(clips):
    torch.manual_seed(3)
    m = D.DeltaMini(D.DeltaConfig()).eval()
    with torch.no_grad():
        out = m(clips["video"], clips["depth_noisy"])
        full = m.upsample(out, clips["depth_noisy"], "attention")
    w = full["weights"]
    assert torch.all(w >= 0) and torch.allclose(w.sum(1), torch.ones_like(w.sum(1)), atol=1e-6)
    # convex upsampling of a constant motion field is that constant; of the low-res values, stays inside their range
    low = torch.randn(3, 2, 4, 4)
    up = D.convex_upsample(low, w, 4)
    assert up.min() >= low.min() - 1e-5 and up.max() <= low.max() + 1e-5
    # nearest = the pixel's own cell; bilinear is exact at the sample positions (pixel 4i+1)
    assert torch.equal(D.nearest_upsample(low, 4)[..., 5, 9], low[..., 1, 2])
    assert torch.allclose(D.bilinear_upsample(low, 4, 1.5)[..., 5, 9], low[..., 1, 2], atol=1e-6)
    for up_name in D.UPSAMPLERS:
        f = m.upsample(out, clips["depth_noisy"], up_name)
        assert f["coords"].shape == (3, 4, 16, 16, 2) and torch.all(f["depth"] > 0)
        assert torch.allclose(f["coords"][:, 0], clips["tracks"][:, 0])          # frame 1: every pixel at itself


def test_losses_zero_at_ground_truth_and_gradients_match_finite_differences(clips):
    b = {k: v for k, v in clips.items() if k != "K"}
    gc, gd, gv = D.lowres_targets(b)
    assert torch.allclose(gc[:, :, 0], D.DeltaMini.query_grid(16, 16)[None].expand(3, -1, -1))   # queries are pixel centres
    perfect = {"coords": [gc, gc], "depths": [gd, gd], "vis": 30 * (2 * gv.float() - 1), "conf": torch.full_like(gd, 30.0)}
    _, parts = D.tracking_loss(perfect, {"coords": b["tracks"], "depth": b["track_depth"]}, b)
    assert parts["2d"] == 0 and parts["depth"] == 0 and parts["vis"] < 1e-9
    # balanced BCE: positives and negatives weigh the same whatever their counts
    t = torch.tensor([1, 0, 0, 0.0]); lg = torch.tensor([0.0, 2.0, 2.0, 2.0])
    ref = 0.5 * (math.log(2) + math.log(1 + math.exp(2)))
    assert D.balanced_bce(lg, t).item() == pytest.approx(ref, rel=1e-6)
    # gradient of the 2-D + depth loss w.r.t. the track depths vs central finite differences (float64)
    d = (gd.double() * 1.1).requires_grad_(True)
    f = lambda dd: D.tracking_loss({"coords": [gc.double()], "depths": [dd], "vis": gv.double(), "conf": gd.double()}, None, b)[0]
    f(d).backward()
    e = torch.zeros_like(d); e[0, 3, 1] = 1e-6
    fd = (f(d.detach() + e) - f(d.detach() - e)) / 2e-6
    assert d.grad[0, 3, 1].item() == pytest.approx(fd.item(), rel=1e-4)


def test_lookup_baseline_reads_input_depth_at_track_positions(clips):
    dn = clips["depth_noisy"]
    pix = clips["tracks"][:, :1].expand(-1, 4, -1, -1, -1)                     # every pixel centre
    assert torch.allclose(D.lookup_depth(dn, pix), dn, atol=1e-5)
    # with the true tracks and noise-free depth the lookup error is only the z-buffer at visible points: exact there
    e = D.track_errors(clips["tracks"], D.lookup_depth(clips["depth"], clips["tracks"]), clips["tracks"], clips["track_depth"],
                       clips["visible"], clips["K"])
    assert float(e["epe2d"]) == 0


def test_training_reduces_loss_and_beats_untrained_on_held_out_clips():
    torch.manual_seed(0)
    train = D.to_tensors(S.flying_planes_batch(range(40), 16, 4))
    test = D.to_tensors(S.flying_planes_batch(range(500, 508), 16, 4))
    m0, _ = D.train_delta(D.DeltaConfig(), train, 0, seed=0)
    m, curve = D.train_delta(D.DeltaConfig(), train, 40, lr=1e-3, batch=2, seed=0)
    e0, e = D.evaluate(m0, test, lookup=True), D.evaluate(m, test, lookup=True)
    assert np.mean(curve[-10:]) < np.mean(curve[:10])
    assert e["epe2d_attention"] < e0["epe2d_attention"]


def test_encoder_features_and_correlation_have_unit_scale(clips):
    """The instance-normalised encoder (official `BasicEncoder`) gives features of RMS ≈ 1 at initialisation, so the 4-D
    correlation (dot products / √C) reaches the correlation MLP at a scale comparable to the other token inputs (depth
    ratios ≈ 1, sin-cos embeddings). The unnormalised encoder gave RMS ≈ 0.05 and correlation volumes of RMS ≈ 0.01."""
    for seed in (0, 1):
        torch.manual_seed(seed)
        m = D.DeltaMini(D.DeltaConfig()).eval()
        vols = []
        hooks = [mlp.register_forward_pre_hook(lambda mod, inp: vols.append(inp[0])) for mlp in m.corr_mlp]
        with torch.no_grad():
            rms = m.features(clips["video"])[0].pow(2).mean().sqrt().item()
            m(clips["video"], clips["depth_noisy"], iters=1)
        for h in hooks: h.remove()
        assert 0.5 <= rms <= 2.0, rms
        for v in vols:
            assert v.pow(2).mean().sqrt().item() >= 0.3, v.pow(2).mean().sqrt().item()


def shift_clips(seeds, size: int = 16, n_frames: int = 4, max_shift: int = 2) -> tuple[dict, np.ndarray]:
    """Clips in which the whole frame translates by a constant integer shift (dx, dy) ≠ 0, |dx|, |dy| ≤ `max_shift` px per
    frame (a window moving over a texture crop, depth a constant plane in [1, 4]): frame t is frame 1 moved by t·(dx, dy),
    so every frame-1 pixel is at p + t·(dx, dy) in frame t (visible while inside the image). Returns the batch and the
    shifts `(N, 2)`."""
    images = S.texture_images()
    m = max_shift * (n_frames - 1)
    pix = np.stack(np.meshgrid(np.arange(size) + 0.5, np.arange(size) + 0.5), -1)
    ts = np.arange(n_frames)
    out = {k: [] for k in ("video", "depth_noisy", "depth", "tracks", "track_depth", "visible")}
    shifts = []
    for s in seeds:
        rng = np.random.default_rng([int(s), 2727])
        tex = S.make_texture(size + 2 * m, rng, images)
        d = np.zeros(2, dtype=int)
        while not d.any(): d = rng.integers(-max_shift, max_shift + 1, 2)
        z = rng.uniform(1.0, 4.0)
        video = np.stack([tex[m - t * d[1]: m - t * d[1] + size, m - t * d[0]: m - t * d[0] + size] for t in ts])
        tracks = pix[None] + ts[:, None, None, None] * d
        out["video"].append(video.transpose(0, 3, 1, 2)); out["tracks"].append(tracks)
        out["visible"].append(((tracks >= 0) & (tracks <= size)).all(-1))
        for k in ("depth_noisy", "depth", "track_depth"): out[k].append(np.full((n_frames, size, size), z))
        shifts.append(d)
    batch = {k: torch.as_tensor(np.stack(v)).float() if k != "visible" else torch.as_tensor(np.stack(v)) for k, v in out.items()}
    batch["object_id"] = torch.zeros(len(seeds), size, size, dtype=torch.long)
    batch["K"] = intrinsics(size, size, 60.0).astype(np.float32)
    return batch, np.stack(shifts)


def test_shift_clips_are_exact():
    "The global-shift clips: frame t at p + t·d equals frame 1 at p (the tracks are exact)."
    b, sh = shift_clips([0, 1], size=16, n_frames=3)
    v, tr = b["video"][0], b["tracks"][0]
    d = sh[0]
    for t in range(3):
        for (i, j) in ((5, 6), (8, 8)):
            u, w = tr[t, i, j]
            if 0 <= u < 16 and 0 <= w < 16:
                assert torch.equal(v[t, :, int(w), int(u)], v[0, :, i, j])
    assert torch.allclose(tr[2] - tr[0], torch.tensor(2.0 * d, dtype=torch.float32).expand(16, 16, 2))


@contextlib.contextmanager
def correlation_zeroed(model):
    "Every level's 4-D correlation volume replaced by zeros before the correlation MLP."
    hooks = [m.register_forward_pre_hook(lambda mod, inp: (torch.zeros_like(inp[0]),)) for m in model.corr_mlp]
    try:
        yield
    finally:
        for h in hooks: h.remove()


@pytest.fixture(scope="module")
def shift_tracker():
    """A small DELTA-mini (1 block, 2 iterations, 1 upsampler block) trained briefly (150 steps of 4 clips, seeded) on 64
    global-shift clips (16×16, 4 frames, shifts up to 2 px per frame in a random direction), and 16 held-out clips."""
    from iclrbench.core.runtime import torch_threads
    train, _ = shift_clips(range(64))
    test, shifts = shift_clips(range(1000, 1016))
    with torch_threads(1):
        model, _ = D.train_delta(D.DeltaConfig(blocks=1, iters=2, up_blocks=1), train, 150, lr=1e-3, batch=4, seed=0)
    return model, test, shifts


def test_tracker_uses_the_video_through_the_correlation(shift_tracker):
    """The mechanism (regression test): the tracker's 2-D tracks come from the video. With every correlation volume zeroed,
    or with the video frozen (frame 1 repeated, so nothing appears to move), its held-out 2-D EPE must rise clearly
    (≥ 1.3×). Before the encoder was normalised, features of RMS ≈ 0.05–0.08 made the correlation ~100× weaker than the
    other token inputs and both ablations left the output unchanged (ratio ≈ 1.0)."""
    model, test, _ = shift_tracker
    e = D.evaluate(model, test, lookup=True)["epe2d_attention"]
    with correlation_zeroed(model):
        e_zero = D.evaluate(model, test)["epe2d_attention"]
    frozen = dict(test, video=test["video"][:, :1].expand_as(test["video"]).contiguous())
    e_frozen = D.evaluate(model, frozen)["epe2d_attention"]
    assert e_zero >= 1.3 * e, (e, e_zero)
    assert e_frozen >= 1.3 * e, (e, e_frozen)


def test_tracker_follows_a_global_shift(shift_tracker):
    """Sanity task: the whole frame moves by a constant shift per frame, in a random direction per clip, so only the video
    tells where the points go. The briefly trained tracker must beat leaving every point in place (2-D EPE ≤ 0.8× the
    static tracker's) and move the points the right way: the recovered fraction of the true last-frame displacement
    ⟨pred, true⟩/|true|² must be positive on at least 12 of the 16 held-out clips and ≥ 0.3 on average."""
    model, test, shifts = shift_tracker
    e = D.evaluate(model, test, lookup=True)
    assert e["epe2d_attention"] <= 0.8 * e["epe2d_static"], (e["epe2d_attention"], e["epe2d_static"])
    with torch.no_grad():
        full = model.upsample(model(test["video"], test["depth_noisy"]), test["depth_noisy"])
    T = test["video"].shape[1]
    pred = (full["coords"][:, -1] - full["coords"][:, 0]).mean((1, 2)).numpy()       # mean displacement, frame 1 → T
    true = shifts * (T - 1)
    gain = (pred * true).sum(1) / (true ** 2).sum(1)
    assert (gain > 0).sum() >= 12 and gain.mean() >= 0.3, gain.round(2)


def test_track_api_shapes_and_bad_parameters():
    m = D.DeltaMini(D.DeltaConfig(iters=1))
    out = m.track(np.random.rand(3, 16, 16, 3), 1 + np.random.rand(3, 16, 16))
    assert out["u"].shape == out["d"].shape == out["vis"].shape == (3, 16, 16) and np.all(out["d"] > 0)
    with pytest.raises(ValueError, match="'video'"):
        m.track(np.random.rand(3, 18, 16, 3), 1 + np.random.rand(3, 18, 16))
    with pytest.raises(ValueError, match="'depth'"):
        m.track(np.random.rand(3, 16, 16, 3), -np.ones((3, 16, 16)))
    with pytest.raises(ValueError, match="'depth_repr'"):
        D.DeltaConfig(depth_repr="disparity")
    with pytest.raises(ValueError, match="'upsampler'"):
        m.upsample(m(torch.rand(1, 2, 3, 16, 16), 1 + torch.rand(1, 2, 16, 16)), 1 + torch.rand(1, 2, 16, 16), "bicubic")
    with pytest.raises(ValueError, match="'steps'"):
        D.run("smoke", steps=0)
    with pytest.raises(ValueError, match="'size'"):
        D.run("smoke", size=30)
    with pytest.raises(ValueError, match="'depth_reprs'"):
        D.run("smoke", depth_reprs="log")


def test_same_seed_same_numbers():
    kw = dict(steps=2, n_train=4, n_test=2, n_frames=3, size=16, progress=False)
    a, b = D.run("smoke", seed=5, **kw), D.run("smoke", seed=5, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    assert {o.id for o in a.claims} == {c.id for c in D.CLAIMS}
    json.dumps(a.to_dict())


def test_worker_processes_give_the_same_numbers():
    "The (seed, representation) pairs trained in 2 worker processes give exactly the numbers of one process."
    kw = dict(steps=2, n_train=4, n_test=2, n_curve=2, n_frames=3, size=16, n_seeds=2, progress=False)
    a, b = D.run("smoke", seed=3, workers=1, **kw), D.run("smoke", seed=3, workers=2, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    assert json.dumps(a.artefacts["example"]) == json.dumps(b.artefacts["example"])
    assert a.artefacts["loss_curve_log"] == b.artefacts["loss_curve_log"]
    assert set(a.objects["models"]) == set(b.objects["models"]) == {"log", "metric"}


def test_scales_full_fits_the_cpu_and_paper_is_the_card():
    "`paper` is the card's configuration (for a GPU); `full` keeps its seeds, variants and studies and trains longer than smoke."
    pp, f, s = D.SCALES["paper"], D.SCALES["full"], D.SCALES["smoke"]
    assert (pp["size"], pp["n_frames"], pp["n_train"], pp["steps"], pp["batch"], pp["n_seeds"]) == (64, 16, 300, 1500, 4, 3)
    assert pp["depth_reprs"] == f["depth_reprs"] == "all" and pp["studies"] and f["studies"] and f["n_seeds"] == 3
    assert f["steps"] * f["batch"] > s["steps"] * s["batch"] and f["size"] >= s["size"] and f["n_frames"] >= s["n_frames"]
    assert {c.id for c in D.CLAIMS if "full" in c.scales} == {c.id for c in D.CLAIMS if "paper" in c.scales}


def test_smoke_run_claims_are_measured(smoke_result):
    r = smoke_result("delta")
    m = r.metrics
    # the log model is exactly scale-equivariant: the [4, 16] error equals the [1, 4] error
    assert m["epe3d_rel_far_log"][0] == pytest.approx(m["epe3d_rel_in_log"][0], rel=1e-3)
    status = {o.id: o.status for o in r.claims}
    assert status["benchmarks"] == "not reproducible offline"
    assert status["attention-upsampler"] == status["reduced-resolution-speed"] == "not checked at this scale"
    for cid in ("log-depth", "beats-lookup"):
        held, detail = next(c for c in D.CLAIMS if c.id == cid).check(m)
        assert held in (True, False) and detail
