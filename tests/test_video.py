"""Tests of iclrbench.blocks.video: sprites, exact flow and validity, warping, wall reflection, IoU against scikit-learn."""
import numpy as np
import pytest
import torch
from sklearn.metrics import jaccard_score

from iclrbench.blocks.video import (DIRECTION_VECTORS, SHAPES, SpriteWorld, confusion_matrix, exact_flow, iou_per_class, mean_iou,
                                    moving_sprites_world, poodle_world, resize_flow, sprite_mask, stack_clips, warp)
from iclrbench.core.runtime import torch_threads


@pytest.fixture(autouse=True)
def one_thread():
    with torch_threads(1):
        yield


def test_sprite_masks_by_hand():
    assert sprite_mask("square", 3).all() and sprite_mask("square", 3).shape == (3, 3)
    assert sprite_mask("bar", 6).shape == (2, 6) and sprite_mask("bar", 6).all()
    d = sprite_mask("disc", 6)
    assert d.sum() == 32 and not d[0, 0] and d[0, 1] and d[2, 0]            # 36 minus the 4 corners
    t = sprite_mask("triangle", 5)
    assert t[-1].all() and t[0].tolist() == [False, False, True, False, False]
    with pytest.raises(ValueError, match="'shape'"): sprite_mask("star", 4)
    with pytest.raises(ValueError, match="'size'"): sprite_mask("disc", 0)


def test_bad_world_parameters_name_the_parameter():
    for kw, name in [(dict(sizes=(0, 3)), "sizes"), (dict(motion="spin"), "motion"), (dict(background="grey"), "background"),
                     (dict(shapes=("star",)), "shapes"), (dict(colours=("mauve",)), "colours"), (dict(n_objects=(3, 1)), "n_objects"),
                     (dict(n_frames=0), "n_frames"), (dict(size_skew=-1.0), "size_skew")]:
        with pytest.raises(ValueError, match=f"'{name}'"): SpriteWorld(**kw)


def test_same_seed_same_clip_bitwise():
    a, b = poodle_world().sample(7), poodle_world().sample(7)
    for k in ("frames", "classes", "instances", "flow", "valid", "flow_back", "valid_back"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    assert not np.array_equal(a.frames, poodle_world().sample(8).frames)
    assert np.array_equal(poodle_world().sample_many(3, 1)[2].frames, poodle_world().sample_many(5, 1)[2].frames)


def test_exact_flow_maps_each_frame_onto_the_other_on_valid_pixels():
    world = poodle_world()
    for seed in range(6):
        c = world.sample(seed)
        x = torch.from_numpy(c.frames)
        # frame t in frame-(t+1) coordinates (backward flow), and frame t+1 in frame-t coordinates (forward flow)
        w01 = warp(x[:1], torch.from_numpy(c.flow_back))[0]
        w10 = warp(x[1:], torch.from_numpy(c.flow))[0]
        vb, vf = c.valid_back[0], c.valid[0]
        assert vb.mean() > 0.5 and vf.mean() > 0.5
        assert (w01 - x[1]).abs()[:, torch.from_numpy(vb)].max() < 1e-5
        assert (w10 - x[0]).abs()[:, torch.from_numpy(vf)].max() < 1e-5
        # validity is a bijection: p valid forward ⟺ p + d valid backward, and the instance is the same there
        H, W = vf.shape
        ys, xs = np.nonzero(vf)
        tx, ty = xs + c.flow[0, 0, ys, xs].astype(int), ys + c.flow[0, 1, ys, xs].astype(int)
        assert vb[ty, tx].all() and vb.sum() == vf.sum()
        assert np.array_equal(c.instances[1][ty, tx], c.instances[0][ys, xs])
        # the labels move with the flow too
        assert np.array_equal(c.classes[1][ty, tx], c.classes[0][ys, xs])


def test_occlusion_and_border_make_pixels_invalid():
    # two layers: background (static) and a 2×2 object moving right by 2 on a 6×6 grid
    inst = np.zeros((2, 6, 6), int)
    inst[0, 2:4, 1:3] = 1
    inst[1, 2:4, 3:5] = 1
    disp = np.zeros((2, 2, 2), int); disp[0, 1] = (2, 0)
    flow, valid, fb, vb = exact_flow(inst, disp)
    assert flow[0, 0, 2, 1] == 2 and valid[0, 2, 1]                       # object pixel: moves, valid
    assert not valid[0, 2, 3] and not valid[0, 2, 4]                      # background covered at t+1 by the object
    assert valid[0, 0, 0]
    assert not vb[0, 2, 1] and not vb[0, 2, 2]                            # disoccluded background at t+1: source was covered
    assert fb[0, 0, 2, 3] == -2 and vb[0, 2, 3]


def test_velocity_motion_is_object_velocity_plus_camera():
    w = SpriteWorld(height=32, width=32, n_frames=3, n_objects=(2, 2), sizes=(4, 4), camera_speed=2, object_speed=3)
    c = w.sample(3)
    bg = c.instances[0] == 0
    cam = c.flow[0][:, bg]
    assert (cam == cam[:, :1]).all()                                      # the background moves with the camera
    f = c.factors
    assert np.allclose(np.diff(f["x"], axis=0), f["vx"][:-1]) and np.allclose(np.diff(f["y"], axis=0), f["vy"][:-1])
    assert (f["direction"] == -1).all()


def test_bounce_four_directions_with_wall_reflection():
    w = moving_sprites_world(n_frames=40, n_objects=(2, 2), speeds=(1, 2))
    assert w.class_names == ("background", "square", "disc", "triangle") and w.n_classes == 4
    flips = 0
    for seed in range(5):
        c = w.sample(seed)
        f = c.factors
        d, sp = f["direction"], f["speed"]
        assert set(np.unique(d)) <= {0, 1, 2, 3}
        # displacement to the next frame = direction vector × speed, at every frame
        assert np.array_equal(np.stack([f["vx"], f["vy"]], -1), DIRECTION_VECTORS[d] * sp[..., None])
        assert np.allclose(np.diff(f["x"], axis=0), f["vx"][:-1]) and np.allclose(np.diff(f["y"], axis=0), f["vy"][:-1])
        half = (f["size"] - 1) / 2
        assert (f["x"] - half >= 0).all() and (f["x"] + half <= 23).all() and (f["y"] - half >= 0).all() and (f["y"] + half <= 23).all()
        flips += int((np.diff(d, axis=0) != 0).sum())
        assert (f["colour"] >= 0).all() and set(np.unique(f["shape"])) <= {0, 1, 2}
        assert (c.frames[0][:, c.instances[0] == 0] == 0).all()
    assert flips > 0                                                       # 40 frames on a 24-px grid: walls are hit


def test_stack_clips_pads_factors():
    clips = [SpriteWorld(n_objects=(1, 1)).sample(0), SpriteWorld(n_objects=(3, 3)).sample(1)]
    s = stack_clips(clips)
    assert s["frames"].shape == (2, 2, 3, 32, 32) and s["shape"].shape == (2, 2, 3)
    assert s["present"].tolist() == [[True, False, False], [True, True, True]] and (s["shape"][0, :, 1:] == -1).all()


def test_size_skew_favours_small_objects():
    s, p = poodle_world(size_skew=1.0).size_probabilities()
    assert np.allclose(p, (1 / s) / (1 / s).sum()) and p[0] > 3 * p[-1]
    assert np.allclose(poodle_world(size_skew=0.0).size_probabilities()[1], 1 / 10)


def test_warp_fractional_flow_is_bilinear_and_resize_flow_rescales():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    f = torch.zeros(1, 2, 4, 4); f[:, 0] = 0.5
    out = warp(x, f)
    assert torch.allclose(out[0, 0, :, :3], x[0, 0, :, :3] + 0.5)          # halfway between columns
    assert torch.allclose(out[0, 0, :, 3], x[0, 0, :, 3] / 2)              # right border: half a zero pixel
    flow = torch.full((1, 2, 32, 32), 4.0)
    valid = torch.ones(1, 32, 32, dtype=torch.bool); valid[0, 0, 0] = False
    fr, vr = resize_flow(flow, valid, (8, 8))
    assert torch.allclose(fr, torch.ones(1, 2, 8, 8)) and not vr[0, 0, 0] and vr.sum() == 63
    with pytest.raises(ValueError, match="'flow'"): warp(x, torch.zeros(1, 2, 3, 3))


def test_iou_matches_sklearn_and_by_hand():
    rng = np.random.default_rng(0)
    t, p = rng.integers(0, 5, 500), rng.integers(0, 5, 500)
    ref = jaccard_score(t, p, average=None, labels=list(range(5)))
    assert np.allclose(iou_per_class(p, t, 5), ref)
    assert mean_iou(p, t, 5) == pytest.approx(ref.mean())
    v = iou_per_class(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), 3)
    assert v[0] == 0.5 and v[1] == pytest.approx(2 / 3) and np.isnan(v[2])
    assert mean_iou(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), 3) == pytest.approx(7 / 12)
    assert confusion_matrix([1, 1], [0, 1], 2, mask=[False, True]).tolist() == [[0, 0], [0, 1]]
    with pytest.raises(ValueError, match="'n_classes'"): iou_per_class([3], [0], 2)
