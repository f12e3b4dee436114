"""Tests of blocks/scenes3d.py: points on the primitives' surfaces, area-uniform sampling, locality of the smooth
scene vs the random control, determinism, plotly helpers, bad parameters."""
import numpy as np
import pytest
import torch
from scipy.spatial import cKDTree

from iclrbench.blocks import scenes3d as S
from iclrbench.blocks.cameras import quat_to_rotmat


def test_points_lie_on_the_primitives_with_outward_normals():
    L, rng = S.SceneLayout(), np.random.default_rng(0)
    p, n = S.sample_primitive("sphere", 300, rng)
    assert np.allclose(np.linalg.norm(p - L.sphere_center, axis=1), L.sphere_radius)
    assert np.allclose(n, (p - L.sphere_center) / L.sphere_radius)
    p, n = S.sample_primitive("ground", 300, rng)
    assert np.all(p[:, 2] == 0) and np.all(np.abs(p[:, :2]) <= L.ground_half) and np.allclose(n, [0, 0, 1])
    p, n = S.sample_primitive("box", 300, rng)
    q = (p - L.box_center) / L.box_half
    assert np.allclose(np.abs(q).max(1), 1) and np.allclose((q * n).sum(1), 1)          # on a face, normal outward
    R, r = L.torus_radii
    p, n = S.sample_primitive("torus", 3000, rng)
    e1, e2, a = S._orthonormal(L.torus_axis)
    d = p - L.torus_center
    h, rad = d @ a, np.sqrt((d @ e1) ** 2 + (d @ e2) ** 2)
    assert np.allclose((rad - R) ** 2 + h ** 2, r * r)
    # area-uniform: the outer half (cos φ > 0) carries (πR + 2r) / (2πR) of the area
    outer = np.mean(rad > R)
    assert abs(outer - (np.pi * R + 2 * r) / (2 * np.pi * R)) < 0.03
    assert np.allclose(np.linalg.norm(n, axis=1), 1)


def test_surface_counts_are_area_proportional():
    _, _, lab = S.sample_surface(10000, np.random.default_rng(1))
    areas = S.primitive_areas()
    frac = np.bincount(lab, minlength=4) / 10000
    assert np.allclose(frac, np.array([areas[k] for k in S.PRIMITIVES]) / sum(areas.values()), atol=1e-3)


def _nn_ratio(points, values, rng):
    _, nn = cKDTree(points).query(points, k=2)
    r = (np.arange(len(points)) + rng.integers(1, len(points), len(points))) % len(points)
    return np.abs(values - values[nn[:, 1]]).sum(1).mean() / np.abs(values - values[r]).sum(1).mean()


def test_smooth_scene_is_local_and_the_random_control_is_not():
    rng = np.random.default_rng(2)
    sm, rd = S.make_static_scene("smooth", 3000, 0), S.make_static_scene("random", 3000, 0)
    assert np.allclose(sm.gaussians.means, rd.gaussians.means)            # same geometry, different attributes
    for attr in ("opacities", "sh"):
        a, b = getattr(sm.gaussians, attr).reshape(3000, -1), getattr(rd.gaussians, attr).reshape(3000, -1)
        assert _nn_ratio(sm.gaussians.means, a, rng) < 0.5 < 0.9 < _nn_ratio(rd.gaussians.means, b, rng)
    hf = S.make_static_scene("high-frequency", 3000, 0)
    c = lambda s: s.gaussians.sh[:, 0, :]
    assert _nn_ratio(sm.gaussians.means, c(sm), rng) < _nn_ratio(hf.gaussians.means, c(hf), rng)


def test_gaussians_are_flat_discs_tangent_to_the_surface():
    s = S.make_static_scene("smooth", 500, 3)
    g = s.gaussians
    p, n, _ = S.sample_surface(500, np.random.default_rng([3, 17]))
    R = quat_to_rotmat(g.quats)
    assert np.allclose(np.abs((R[:, :, 2] * n).sum(1)), 1)                 # third axis = normal
    assert np.allclose(g.scales[:, 2], 0.2 * g.scales[:, 0]) and np.allclose(g.scales[:, 0], g.scales[:, 1])
    assert g.sh.shape == (500, 4, 3) and g.sh_degree == 1
    assert np.all((g.opacities > 0) & (g.opacities < 1))


def test_same_seed_same_scene_and_torch_view():
    a, b, c = S.make_static_scene("smooth", 400, 7), S.make_static_scene("smooth", 400, 7), S.make_static_scene("smooth", 400, 8)
    for k in ("means", "quats", "scales", "opacities", "sh"):
        assert np.array_equal(getattr(a.gaussians, k), getattr(b.gaussians, k))
    assert not np.array_equal(a.gaussians.sh, c.gaussians.sh)
    t = a.gaussians.torch()
    assert t["colors"].shape == (400, 4, 3) and t["means"].dtype == torch.float32
    sub = a.gaussians.subset(np.arange(10))
    assert len(sub) == 10 and sub.labels.shape == (10,)


def test_views_and_plotly_helpers():
    train, test = S.scene_views(6, 3, 20, 16)
    assert len(train) == 6 and len(test) == 3 and (train[0].width, train[0].height) == (20, 16)
    cs = {tuple(np.round(c.center, 6)) for c in train + test}
    assert len(cs) == 9
    tr = S.camera_traces(test)
    assert len(tr) == 1 and np.isclose(tr[0].x[0], test[0].center[0])
    assert len(S.mesh_traces()) == 4
    v, f = S.primitive_meshes()["sphere"]
    L = S.SceneLayout()
    assert np.allclose(np.linalg.norm(v - L.sphere_center, axis=1), L.sphere_radius) and f.max() < len(v)
    pt = S.points_trace(np.zeros((3, 3)), np.array([0.1, 0.5, 0.9]))
    assert list(pt.marker.color) == [0.1, 0.5, 0.9]


def test_bad_parameters_raise_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="'kind'"): S.make_static_scene("stripes", 100)
    with pytest.raises(ValueError, match="'n_gaussians'"): S.make_static_scene("smooth", 5)
    with pytest.raises(ValueError, match="'sh_degree'"): S.make_static_scene("smooth", 100, sh_degree=3)
    with pytest.raises(ValueError, match="'name'"): S.sample_primitive("cone", 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="'opacities'"):
        S.GaussianCloud(np.zeros((3, 3)), np.zeros((3, 4)), np.ones((3, 3)), np.ones(2), np.zeros((3, 1, 3)))
