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


# --- moving scenes: flying textured planes (DELTA) ---------------------------------------------------------------

def test_flying_planes_tracks_reproject_exactly():
    from iclrbench.blocks.cameras import unproject_points
    c = S.flying_planes_clip(3, 24, 6, camera_motion=True)
    T, H, W = c.shape
    grid = np.stack(np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5), -1)
    assert np.allclose(c.tracks[0], grid) and c.visible[0].all() and np.allclose(c.track_depth[0], c.depth[0])
    k1 = c.object_id[0]
    for t in range(T):
        # world point of (u_t, v_t, d_t) through camera t = the plane point (a, b) moved by its object's pose at t
        Xw = unproject_points(c.tracks[t], c.track_depth[t], c.K, c.cam_R[t], c.cam_t[t])
        for k, pl in enumerate(c.planes):
            m = k1 == k
            ab0 = np.c_[c.plane_coords[m], np.zeros(m.sum())]
            assert np.allclose(Xw[m], ab0 @ pl.R[t].T + pl.c[t], atol=1e-9)
            # and the rigid motion of the frame-1 3-D point: X_t = R_t R_1ᵀ (X_1 − c_1) + c_t
            X1 = unproject_points(c.tracks[0][m], c.track_depth[0][m], c.K, c.cam_R[0], c.cam_t[0])
            assert np.allclose(Xw[m], (X1 - pl.c[0]) @ (pl.R[t] @ pl.R[0].T).T + pl.c[t], atol=1e-9)
        # visible points: the z-buffer at the continuous position returns the same plane at exactly the track's depth
        idx, z, _ = S.render_points(c.planes, t, c.tracks[t], c.K, c.cam_R[t], c.cam_t[t])
        v = c.visible[t]
        assert np.all(idx[v] == k1[v]) and np.allclose(z[v], c.track_depth[t][v])
        inside = (c.tracks[t][..., 0] >= 0) & (c.tracks[t][..., 0] <= W) & (c.tracks[t][..., 1] >= 0) & (c.tracks[t][..., 1] <= H)
        assert np.all((idx[~v] != k1[~v]) | ~inside[~v])               # invisible = occluded by another plane or outside
    assert (~c.visible).any()                                            # the clip does contain occlusions / exits


def test_flying_planes_rendering_matches_the_homography():
    from iclrbench.blocks.cameras import apply_homography
    c = S.flying_planes_clip(4, 16, 3)
    t = 2
    for k, pl in enumerate(c.planes):
        Hk = c.K @ pl.camera_matrix(t, c.cam_R[t], c.cam_t[t])          # plane (a, b, 1) → pixel
        m = c.object_id[0] == k
        assert np.allclose(apply_homography(Hk, c.plane_coords[m]), c.tracks[t][m], atol=1e-9)
    # the frame's colour at a pixel is the texture of the winning plane at the inverse-homography coordinates
    grid = np.stack(np.meshgrid(np.arange(16) + 0.5, np.arange(16) + 0.5), -1)
    idx, z, ab = S.render_points(c.planes, t, grid, c.K, c.cam_R[t], c.cam_t[t])
    assert np.array_equal(idx, c.object_id[t]) and np.allclose(z, c.depth[t])
    i, j = 7, 9
    assert np.allclose(c.video[t, i, j], c.planes[idx[i, j]].sample_texture(ab[i, j]))


def test_flying_planes_depth_ranges_noise_and_scaling():
    c1, c4 = S.flying_planes_clip(5, 16, 4), S.flying_planes_clip(5, 16, 4, depth_scale=4.0)
    assert np.allclose(c1.video, c4.video) and np.allclose(c1.tracks, c4.tracks) and np.array_equal(c1.visible, c4.visible)
    assert np.allclose(c4.depth, 4 * c1.depth) and np.allclose(c4.depth_noisy, 4 * c1.depth_noisy)
    b = S.flying_planes_batch(range(20), 16, 2)
    assert 0.7 < b["depth"].min() and b["depth"].max() < 4.2                   # training range ≈ [1, 4]
    assert 2.8 < 4 * b["depth"].min() and 4 * b["depth"].max() < 16.8
    # multiplicative noise: log(D/d) has std ≈ σ and is spatially smooth (neighbours strongly correlated)
    r = np.log(b["depth_noisy"] / b["depth"])
    assert abs(r.std() - 0.05) < 0.01
    assert np.corrcoef(r[..., :-1].ravel(), r[..., 1:].ravel())[0, 1] > 0.6
    assert np.allclose(S.flying_planes_clip(5, 16, 4, depth_noise=0.0).depth_noisy, c1.depth)
    # determinism; the same scene for n_objects = the drawn number
    assert np.array_equal(S.flying_planes_clip(5, 16, 4).video, c1.video)
    assert np.array_equal(S.flying_planes_clip(5, 16, 4, n_objects=len(c1.planes) - 1).video, c1.video)


def test_motion_boundaries_and_bad_parameters():
    oid = np.zeros((8, 8), dtype=int); oid[:, 5:] = 1
    b = S.motion_boundaries(oid, 2)
    assert b[:, 3:7].all() and not b[:, :3].any() and not b[:, 7:].any()
    with pytest.raises(ValueError, match="'size'"):
        S.flying_planes_clip(0, 4)
    with pytest.raises(ValueError, match="'n_frames'"):
        S.flying_planes_clip(0, 16, 1)
    with pytest.raises(ValueError, match="'depth_scale'"):
        S.flying_planes_clip(0, 16, 2, depth_scale=0)
    with pytest.raises(ValueError, match="'names'"):
        S.texture_images(["lena"])
