"""Tests of blocks/cameras.py: quaternions against scipy, projection by hand, the Jacobian against finite differences,
look-at and view rings, plane homographies, rigid motions, bad parameters."""
import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from iclrbench.blocks import cameras as C


def test_quaternions_agree_with_scipy():
    q = C.random_quaternions(20, np.random.default_rng(0))
    R = C.quat_to_rotmat(q)
    ref = Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()          # scipy: (x, y, z, w)
    assert np.allclose(R, ref, atol=1e-12)
    assert np.allclose(C.rotmat_to_quat(ref), q, atol=1e-12)
    # unnormalised input is normalised first; torch gives the same numbers
    assert np.allclose(C.quat_to_rotmat(3 * q), R)
    assert np.allclose(C.quat_to_rotmat(torch.tensor(q)).numpy(), R)
    # Hamilton product = composition of rotations
    assert np.allclose(C.quat_to_rotmat(C.quat_multiply(q[0], q[1])), R[0] @ R[1])
    v = np.random.default_rng(1).normal(size=(5, 3))
    assert np.allclose(C.axis_angle_to_rotmat(v), Rotation.from_rotvec(v).as_matrix())


def test_rotmat_to_quat_handles_every_branch():
    for R in (np.eye(3), np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])):
        assert np.allclose(C.quat_to_rotmat(C.rotmat_to_quat(R)), R)


def test_projection_by_hand_and_unprojection():
    K = C.intrinsics(100, 80, 90.0)                  # fx = 50 / tan(45°) = 50
    assert np.allclose(K, [[50, 0, 50], [0, 50, 40], [0, 0, 1]])
    cam = C.Camera(K, np.eye(3), np.zeros(3), 100, 80)
    uv, z = cam.project(np.array([1.0, 0.5, 2.0]))
    assert np.allclose(uv, [75.0, 52.5]) and z == 2.0
    x = np.random.default_rng(2).normal(size=(10, 3)) + [0, 0, 5]
    uv, z = cam.project(x)
    assert np.allclose(cam.unproject(uv, z), x)
    # homogeneous form K (R x + t) gives the same pixels
    cam2 = C.make_camera([2, -1, 1.5], [0, 0, 0], 64, 48, 60)
    h = (cam2.K @ (cam2.R @ x.T + cam2.t[:, None])).T
    assert np.allclose(cam2.project(x)[0], h[:, :2] / h[:, 2:])
    assert cam2.pixel_centers()[0, 0].tolist() == [0.5, 0.5] and cam2.pixel_centers().shape == (48, 64, 2)


def test_projection_jacobian_matches_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 3)) * 0.5 + [0, 0, 3]
    fx, fy = 40.0, 55.0
    K = np.array([[fx, 0, 10], [0, fy, 12], [0, 0, 1]])
    J = C.projection_jacobian(x, fx, fy)
    eps = 1e-6
    for k in range(3):
        d = np.zeros(3); d[k] = eps
        fd = (C.project_points(x + d, K)[0] - C.project_points(x - d, K)[0]) / (2 * eps)
        assert np.allclose(J[:, :, k], fd, atol=1e-6)
    xt = torch.tensor(x, requires_grad=True)
    Jt = C.projection_jacobian(xt, fx, fy)
    assert np.allclose(Jt.detach().numpy(), J)
    # the 3DGS clamp limits x/z and y/z only
    Jc = C.projection_jacobian(np.array([[10.0, 0.0, 1.0]]), fx, fy, clamp=(1.3, 1.3))
    assert np.isclose(Jc[0, 0, 2], -fx * 1.3)


def test_look_at_and_view_rings():
    cam = C.make_camera([3, 1, 2], [0.2, 0.1, 0.3], 32, 32)
    assert np.allclose(cam.R @ cam.R.T, np.eye(3)) and np.isclose(np.linalg.det(cam.R), 1)
    assert np.allclose(cam.project(np.array([0.2, 0.1, 0.3]))[0], [16, 16])
    assert np.allclose(cam.center, [3, 1, 2])
    # "up" (world +z) appears upward in the image (smaller v): y axis points down
    uv_lo, _ = cam.project(np.array([0.2, 0.1, 0.3])); uv_hi, _ = cam.project(np.array([0.2, 0.1, 0.6]))
    assert uv_hi[1] < uv_lo[1]
    ring = C.view_ring(8, radius=2.5, elevation_deg=30, target=(0, 0, 0.1), width=16, height=12)
    cs = np.stack([c.center for c in ring])
    assert np.allclose(np.linalg.norm(cs - [0, 0, 0.1], axis=1), 2.5)
    assert np.allclose(cs[:, 2] - 0.1, 2.5 * np.sin(np.radians(30)))
    assert len({tuple(np.round(c, 6)) for c in cs}) == 8
    for c in ring: assert np.allclose(c.project(np.array([0, 0, 0.1]))[0], [8, 6])
    sph = C.view_sphere(10, 3.0, 10, 60)
    el = np.degrees(np.arcsin(np.stack([c.center for c in sph])[:, 2] / 3.0))
    assert el.min() >= 10 and el.max() <= 60
    assert cam.resized(64, 64).fx == 2 * cam.fx


def test_plane_homography_maps_plane_points():
    K1, K2 = C.intrinsics(40, 30, 60), C.intrinsics(50, 40, 55)
    m = C.RigidMotion.from_axis_angle([0.1, 0.05, -0.08], [0.3, -0.1, 0.2])
    n = np.array([0.2, -0.1, -1.0]); n /= np.linalg.norm(n); d = 4.0
    X = np.random.default_rng(4).normal(size=(8, 3)) + [0, 0, 4]
    X -= np.outer(X @ n + d, n)
    H = C.plane_homography(K1, K2, m.R, m.t, n, d)
    assert np.allclose(C.apply_homography(H, C.project_points(X, K1)[0]), C.project_points(m(X), K2)[0])


def test_rigid_motions():
    a = C.RigidMotion.from_axis_angle([0.3, -0.2, 0.1], [1, 2, 3])
    b = C.RigidMotion.from_axis_angle([-0.1, 0.4, 0.2], [0, -1, 0.5])
    x = np.random.default_rng(5).normal(size=(7, 3))
    assert np.allclose((a @ b)(x), a(b(x)))
    assert np.allclose(a.inverse()(a(x)), x)
    hom = np.c_[x, np.ones(7)] @ a.matrix().T
    assert np.allclose(hom[:, :3], a(x))
    assert np.allclose(a(torch.tensor(x)).numpy(), a(x))
    rc = C.rotation_about([1, 0, 0], [0, 0, np.pi])
    assert np.allclose(rc([2, 0, 0]), [0, 0, 0])


def test_bad_parameters_raise_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="'fov_x_deg'"): C.intrinsics(10, 10, 0)
    with pytest.raises(ValueError, match="'width'"): C.intrinsics(0, 10)
    with pytest.raises(ValueError, match="'eye'"): C.look_at([1, 1, 1], [1, 1, 1])
    with pytest.raises(ValueError, match="'up'"): C.look_at([0, 0, 3], [0, 0, 0], up=(0, 0, 1))
    with pytest.raises(ValueError, match="'n'"): C.view_ring(0)
    with pytest.raises(ValueError, match="'radius'"): C.view_ring(3, radius=-1)
    with pytest.raises(ValueError, match="'elevation_deg'"): C.view_ring(3, elevation_deg=90)
    with pytest.raises(ValueError, match="'R'"): C.RigidMotion(np.eye(2))
    with pytest.raises(ValueError, match="'d'"): C.plane_homography(np.eye(3), np.eye(3), np.eye(3), np.zeros(3), [0, 0, 1], 0.0)
