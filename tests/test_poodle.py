"""Library tests for PooDLe (Wang et al., ICLR 2025): dense flow-equivariance loss, flow-aligned subcrops, pooled loss,
EMA target, real-backbone adapter, coverage simulation, readout and the card."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

import iclrbench.papers.poodle as pd
from iclrbench.blocks.ssl import EMATeacher
from iclrbench.blocks.video import SpriteWorld, poodle_world
from iclrbench.core.runtime import torch_threads


@pytest.fixture(autouse=True)
def one_thread():
    "Small convolutions run many times faster on one thread here (DESIGN.md)."
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def pairs():
    return pd.make_dataset(poodle_world(), 48, 0)


def test_dense_term_vanishes_for_a_map_and_its_exact_shift_and_not_otherwise():
    torch.manual_seed(0)
    z = torch.randn(2, 8, 16, 16)
    z1 = torch.roll(z, shifts=(1, -3), dims=(2, 3))                 # frame t+1 = content moved by (dx, dy) = (−3, +1)
    fb = torch.zeros(2, 2, 16, 16); fb[:, 0], fb[:, 1] = 3.0, -1.0     # backward flow t+1 → t
    vb = torch.zeros(2, 16, 16, dtype=torch.bool); vb[:, 1:, :13] = True
    assert pd.dense_term(z, z1, fb, vb) < 1e-10
    assert pd.dense_term(z, z1, torch.zeros_like(fb), vb) > 0.5                 # without the flow: misaligned
    assert pd.dense_term(z, z1, -fb, vb) > 0.5                                  # the wrong warp direction
    # 2 − 2cos by hand for one pixel pair
    a, b = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])
    assert pd.normalized_distance(a, b).item() == pytest.approx(2 - 2 / np.sqrt(2))


def test_dense_term_gradient_matches_finite_differences():
    torch.manual_seed(1)
    z = torch.randn(1, 3, 6, 6, dtype=torch.float64, requires_grad=True)
    t = torch.randn(1, 3, 6, 6, dtype=torch.float64)
    f = torch.rand(1, 2, 6, 6, dtype=torch.float64) * 1.6 - 0.8        # fractional flow: bilinear weights
    v = torch.rand(1, 6, 6) > 0.3
    assert torch.autograd.gradcheck(lambda x: pd.dense_term(x, t, f, v), (z,), eps=1e-6, atol=1e-5)


def test_generated_pairs_give_zero_dense_loss_for_pixels_themselves(pairs):
    # the frames themselves are a "feature map" that is exactly flow-equivariant: both terms vanish on valid pixels
    fr = pairs["frames"] + 0.1
    loss = pd.dense_loss(fr[:, 0], fr[:, 1], fr[:, 0], fr[:, 1], pairs["flow"], pairs["valid"], pairs["flow_back"], pairs["valid_back"])
    loss_fwd_only = pd.dense_loss(fr[:, 0], fr[:, 1], fr[:, 0], fr[:, 1], pairs["flow"], pairs["valid"])
    assert loss < 1e-9 and loss_fwd_only < 1e-9
    swapped = pd.dense_loss(fr[:, 0], fr[:, 1], fr[:, 0], fr[:, 1], pairs["flow_back"], pairs["valid"], pairs["flow"], pairs["valid_back"])
    assert swapped > 1e-3                                              # mixing up the two flows misaligns


def test_flow_aligned_subcrops_follow_a_camera_shift_exactly():
    world = SpriteWorld(n_objects=(0, 0), camera_speed=3)
    d = pd.make_dataset(world, 16, 3)
    b, q = pd.flow_aligned_subcrops(d["flow"], d["valid"], 6, 10, np.random.default_rng(0))
    cam = d["flow"][:, :, 0, 0].long()                                 # (B, 2): constant flow of the background
    shifted = b + cam[:, None]
    inside = ((shifted >= 0) & (shifted <= 22)).all(-1)                # partners that did not need clamping
    assert torch.equal(q[inside], shifted[inside]) and inside.any()
    ca, cb = pd.crop_boxes(d["frames"][:, 0], b, 10), pd.crop_boxes(d["frames"][:, 1], q, 10)
    assert (ca - cb).abs().reshape(16, 6, -1)[inside].max() < 1e-6     # same content in both frames
    assert (q >= 0).all() and (q <= 22).all()
    with pytest.raises(ValueError, match="'size'"): pd.flow_aligned_subcrops(d["flow"], d["valid"], 2, 40, np.random.default_rng(0))


def test_crop_boxes_by_hand():
    x = torch.arange(2 * 1 * 5 * 5.0).reshape(2, 1, 5, 5)
    boxes = torch.tensor([[[1, 2]], [[0, 0]]])                          # (x, y)
    c = pd.crop_boxes(x, boxes, 2)
    assert torch.equal(c[0, 0], x[0, 0, 2:4, 1:3]) and torch.equal(c[1, 0], x[1, 0, 0:2, 0:2])


def test_pooled_loss_is_symmetric_and_zero_for_matching_pairs():
    a = torch.randn(5, 4)
    assert pd.pooled_loss(a, 2 * a, 3 * a, a).item() == pytest.approx(0.0, abs=1e-6)
    b = torch.randn(5, 4)
    assert pd.pooled_loss(a, b, a, b).item() == pytest.approx(pd.pooled_loss(b, a, b, a).item())


def test_decoder_uses_every_stage_and_restores_the_first_resolution():
    enc = pd.ConvEncoder((4, 8, 16)); dec = pd.TopDownDecoder(enc.channels, 6)
    x = torch.randn(2, 3, 16, 16, requires_grad=True)
    out = dec(enc(x))
    assert out.shape == (2, 6, 16, 16)
    out.sum().backward()
    assert all(l.weight.grad is not None and l.weight.grad.abs().sum() > 0 for l in dec.lateral)


def _resnet_stages():
    tv = pytest.importorskip("torchvision")
    from torchvision.models._utils import IntermediateLayerGetter
    torch.manual_seed(0)
    net = tv.models.resnet18(weights=None)
    return IntermediateLayerGetter(net, {"layer1": "s1", "layer2": "s2", "layer3": "s3", "layer4": "s4"}), (64, 128, 256, 512)


class _TinyResNetLike(torch.nn.Module):
    "A stand-in backbone returning a dict of 4 stage maps at strides 4..32 (like IntermediateLayerGetter on a ResNet)."
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 7, 2, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1))
        self.layers = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Conv2d(c_in, c, 3, s, 1), torch.nn.BatchNorm2d(c), torch.nn.ReLU())
                                          for c_in, c, s in ((8, 8, 1), (8, 16, 2), (16, 32, 2), (32, 64, 2)))

    def forward(self, x):
        x = self.stem(x); out = {}
        for i, l in enumerate(self.layers): x = l(x); out[f"s{i + 1}"] = x
        return out


@pytest.mark.parametrize("backbone", ["resnet18", "stand-in"])
def test_real_backbone_adapter_constant_shift_and_no_gradient_into_the_ema_target(backbone):
    if backbone == "resnet18": enc, chans = _resnet_stages()
    else: torch.manual_seed(0); enc, chans = _TinyResNetLike(), (8, 16, 32, 64)
    dec = pd.TopDownDecoder(chans, 16)
    enc.eval()                                                          # BatchNorm statistics fixed for the identity checks
    x = torch.rand(2, 3, 64, 64)
    # identical decoder maps under a constant shift: warping with the exact shift gives a dense loss of ~0 on valid pixels
    with torch.no_grad():
        z = dec(enc(x))                                                 # (2, 16, 16, 16): stride 4
    z1 = torch.roll(z, shifts=(2, 1), dims=(2, 3))                      # content moved by (dx, dy) = (1, 2) cells = (4, 8) px
    flow = torch.zeros(2, 2, 64, 64); flow[:, 0], flow[:, 1] = 4.0, 8.0              # t → t+1 at frame-t pixels
    valid = torch.zeros(2, 64, 64, dtype=torch.bool); valid[:, :56, :60] = True
    fb = -flow; vb = torch.zeros_like(valid); vb[:, 8:, 4:] = True
    assert pd.dense_loss(z, z1, z, z1, flow, valid, fb, vb) < 1e-9
    assert pd.dense_loss(z, z1, z, z1, torch.zeros_like(flow), valid, torch.zeros_like(fb), vb) > 1e-3
    # zero flow between identical frames with the online networks as (stop-gradient) target and no predictor: loss 0
    out0 = pd.poodle_losses(enc, dec, x, x, torch.zeros(2, 2, 64, 64), torch.ones(2, 64, 64, dtype=torch.bool))
    assert out0["dense"].item() < 1e-9 and out0["pool"].item() == 0.0
    # the full objective with an EMA target and both predictors: gradients reach the online networks only
    online = torch.nn.ModuleDict({"encoder": enc, "decoder": dec})
    ema = EMATeacher(online, 0.99)
    dp, pp = pd.DensePredictor(16), pd.PooledPredictor(chans[-1])
    b, q = pd.flow_aligned_subcrops(flow, valid, 2, 32, np.random.default_rng(0))
    out = pd.poodle_losses(enc, dec, x, torch.roll(x, (8, 4), (2, 3)), flow, valid, (b, q, 32), flow_back=fb, valid_back=vb,
                           target_encoder_stages=ema.teacher["encoder"], target_decoder=ema.teacher["decoder"],
                           dense_predictor=dp, pooled_predictor=pp, lambda_pool=1.0)
    assert torch.isfinite(out["loss"]) and out["pool"] > 0 and out["dense"] > 0
    out["loss"].backward()
    assert all(p.grad is None for p in ema.parameters()) and not any(p.requires_grad for p in ema.parameters())
    assert all(p.grad is not None for p in dec.parameters()) and all(p.grad is not None for p in pp.parameters())
    assert sum(p.grad.abs().sum() for p in enc.parameters() if p.grad is not None) > 0
    before = [p.clone() for p in ema.parameters()]
    with torch.no_grad():
        for p in online.parameters(): p.add_(1.0)
    ema.update(online)
    assert all(torch.allclose(a + 0.01, p2, atol=1e-5) for a, p2 in zip(before, ema.parameters()))
    with pytest.raises(ValueError, match="'lambda_pool'"): pd.poodle_losses(enc, dec, x, x, flow, valid, lambda_pool=-1)
    with pytest.raises(ValueError, match="'target_decoder'"):
        pd.poodle_losses(enc, dec, x, x, flow, valid, target_encoder_stages=ema.teacher["encoder"])


def test_variants_share_initial_weights_and_training_lowers_the_loss(pairs):
    nets = {v: pd.PooDLeNet(v, seed=3) for v in pd.VARIANTS}
    w0 = nets["random"].encoder.stages[0][0].weight
    assert all(torch.equal(n.encoder.stages[0][0].weight, w0) for n in nets.values())
    assert nets["dense_only"].decoder is None and nets["pooled_only"].dense_predictor is None and nets["poodle"].pooled_predictor is not None
    with pytest.raises(ValueError, match="'variant'"): pd.PooDLeNet("flowe")
    torch.manual_seed(0)
    net = nets["poodle"]
    hist = pd.train_poodle(net, pairs, 40, batch_size=4, seed=0)
    first, last = np.mean([h["dense"] for h in hist[:5]]), np.mean([h["dense"] for h in hist[-5:]])
    assert last < first and all(h["pool"] > 0 for h in hist)
    # the EMA target followed the online encoder but is not equal to it
    t = net.target.teacher["encoder"].stages[0][0].weight
    assert not torch.equal(t, w0) and not torch.equal(t, net.encoder.stages[0][0].weight)
    assert pd.train_poodle(nets["random"], pairs, 10) == []


def test_coverage_simulation_matches_exhaustive_enumeration():
    frame, crop, s = 16, 6, 3
    o = np.array(list(itertools.product(range(frame - s + 1), repeat=2)))
    c = np.array(list(itertools.product(range(frame - crop + 1), repeat=2)))
    ov = np.clip(np.minimum(o[:, None] + s, c[None] + crop) - np.maximum(o[:, None], c[None]), 0, None).prod(-1)
    exact = float((ov >= 0.1 * s * s).mean())
    mc = pd.coverage_simulation((s,), frame, crop, draws=40000, seed=0)
    assert mc["p_cover"][0] == pytest.approx(exact, abs=0.01)
    assert mc["ratio"][0] == pytest.approx(mc["p_cover"][0] / (s * s / frame ** 2))
    full = pd.coverage_simulation((2, 16), 32, 32, draws=1000)
    assert full["p_cover"] == [1.0, 1.0]                              # a full-frame crop covers every object
    with pytest.raises(ValueError, match="'crop'"): pd.coverage_simulation(crop=40)


def test_pixel_readout_agrees_with_sklearn():
    rng = np.random.default_rng(0)
    f = torch.from_numpy(rng.normal(size=(6, 4, 8, 8)))
    y = torch.from_numpy((f[:, 0] + 0.5 * f[:, 1] > 0).long().numpy() + (f[:, 2] > 1).long().numpy())
    pred = pd.fit_pixel_readout(f, y, 3, steps=200, weight_decay=0.0)(f).numpy().ravel()
    X = f.permute(0, 2, 3, 1).reshape(-1, 4).numpy()
    ref = LogisticRegression(C=1e6, max_iter=5000).fit(StandardScaler().fit_transform(X), y.numpy().ravel())
    ref_pred = ref.predict(StandardScaler().fit_transform(X))
    assert np.mean(pred == ref_pred) > 0.97


def test_size_bins_and_evaluation_by_hand():
    inst = np.array([[[0, 1, 1], [2, 2, 0]]])                           # object 0 (size 4) and object 1 (size 10)
    sizes = np.array([[4, 10]])
    assert pd.size_bin_mask(inst, sizes, 3, 5).tolist() == [[[False, True, True], [False, False, False]]]
    truth = np.array([[[0, 2, 2], [3, 3, 1]]]); pred = np.array([[[0, 2, 3], [3, 3, 1]]])
    ev = pd.evaluate_readout(pred, truth, inst, sizes, 4, [2, 3])
    assert ev["iou_3_5"] == pytest.approx(np.nanmean([0.5, 0.0]))       # small object: class 2 IoU 1/2, class 3 FP only → 0
    assert ev["iou_9_12"] == pytest.approx(1.0)
    assert pd.channel_std(torch.ones(2, 3, 4, 4)) == 0.0


def test_run_validates_parameters_before_work():
    with pytest.raises(ValueError, match="'steps'"): pd.run("smoke", steps=-1)
    with pytest.raises(ValueError, match="'variants'"): pd.run("smoke", variants="some")
    with pytest.raises(ValueError, match="'device'"): pd.run("smoke", device="tpu")


def test_tiny_run_is_deterministic_and_reports_every_claim():
    kw = dict(n_seeds=1, steps=3, n_train=32, n_readout=12, n_test=12, coverage_draws=500, readout_pixels=2000, progress=False)
    a, b = pd.run("smoke", **kw), pd.run("smoke", **kw)
    assert a.metrics["miou_poodle"] == b.metrics["miou_poodle"] and a.metrics["miou_dense_only"] == b.metrics["miou_dense_only"]
    assert {c.id for c in a.claims} == {c.id for c in pd.CLAIMS}
    st = {c.id: c.status for c in a.claims}
    assert st["bdd100k"] == "not reproducible offline" and st["ablation"] == "not checked at this scale"


def test_projectors_sit_on_both_branches_and_only_the_online_ones_get_gradients(pairs):
    net = pd.PooDLeNet("poodle", seed=0)
    t = net.target.teacher
    assert set(t.keys()) == {"encoder", "decoder", "dense_projector", "pooled_projector"}
    assert net.dense_projector is not t["dense_projector"] and net.pooled_predictor is not None
    assert isinstance(net.dense_projector.net[1], torch.nn.BatchNorm2d) and isinstance(net.pooled_projector.net[1], torch.nn.BatchNorm1d)
    old = pd.PooDLeNet("poodle", seed=0, projectors=False, head_norm="group")
    assert old.dense_projector is None and set(old.target.teacher.keys()) == {"encoder", "decoder"}
    assert torch.equal(old.encoder.stages[0][0].weight, net.encoder.stages[0][0].weight)   # same initial weights either way
    b = slice(0, 4)
    boxes = pd.flow_aligned_subcrops(pairs["flow"][b], pairs["valid"][b], 4, 12, np.random.default_rng(0))
    out = net.losses(pairs["frames"][b, 0], pairs["frames"][b, 1], pairs["flow"][b], pairs["valid"][b], pairs["flow_back"][b],
                     pairs["valid_back"][b], (*boxes, 12), 1.0)
    out["loss"].backward()
    assert all(q.grad is not None for q in net.dense_projector.parameters()) and all(q.grad is not None for q in net.pooled_projector.parameters())
    assert all(q.grad is None and not q.requires_grad for q in t.parameters())
    # a projector without its target copy is refused
    with pytest.raises(ValueError, match="'target_dense_projector'"):
        pd.poodle_losses(net.encoder, net.decoder, pairs["frames"][b, 0], pairs["frames"][b, 1], pairs["flow"][b], pairs["valid"][b],
                         target_encoder_stages=t["encoder"], target_decoder=t["decoder"], dense_projector=net.dense_projector)


def test_byol_heads_keep_the_dense_map_from_collapsing(pairs):
    # the cause of the smoke run's partial collapse (issue 29 hunt): without projectors and with per-image-normalised heads
    # the dense map's channel std falls well below the random network's; BYOL's heads (projector on both branches, BatchNorm)
    # keep it near the random level
    x = pairs["frames"][:24, 0]
    std = {}
    for name, kw in {"byol": {}, "old": dict(projectors=False, head_norm="group")}.items():
        torch.manual_seed(0)
        net = pd.PooDLeNet("poodle", seed=0, **kw)
        if name == "byol": std["random"] = pd.channel_std(net.features(x))
        pd.train_poodle(net, pairs, 80, batch_size=4, seed=0)
        std[name] = pd.channel_std(net.features(x))
    assert std["old"] < 0.6 * std["random"] and std["byol"] > 0.75 * std["random"], std
