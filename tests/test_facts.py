"""FACTS: exactness of the layer (row-permutation invariance, slot-permutation equivariance, causality, parallel ==
recurrent, chunked mode by its definition), the router, the data, the baselines, the forecaster and the graph path."""
import copy
import json

import numpy as np
import pytest
import torch

import iclrbench.papers.facts as fx


def _layer(M=5, K=4, D=8, heads=2, C_rank=8, dtype=torch.float64, **kw):
    torch.manual_seed(0)
    return fx.FACTS(D, M, K, D, n_heads=heads, C_rank=C_rank, **kw).to(dtype)


def _x(B=2, T=7, M=5, D=8, dtype=torch.float64, seed=1):
    return torch.randn(B, T, M, D, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("C_rank", [0, 8])
def test_row_permutation_invariance_float64(C_rank):
    f, x = _layer(C_rank=C_rank), _x()
    y, z = f(x)
    for perm in ([4, 2, 0, 1, 3], [1, 0, 2, 3, 4]):
        y2, z2 = f(x[:, :, perm])
        assert (y2 - y).abs().max() < 1e-5 and (z2 - z).abs().max() < 1e-5
    assert (y2 - y).abs().max() < 1e-12                  # in fact exact up to round-off


def test_row_permutation_invariance_float32_relative_and_world_model_two_layers():
    f, x = _layer(dtype=torch.float32), _x(dtype=torch.float32)
    y, _ = f(x)
    y2, _ = f(x[:, :, [3, 1, 4, 0, 2]])
    assert ((y2 - y).abs().max() / y.abs().max()) < 1e-5
    torch.manual_seed(0)
    wm = fx.FACTSWorldModel(n_balls=4, n_slots=3, slot_size=16, n_layers=2, n_heads=2, out_dim=36).double()
    xb = torch.rand(3, 6, 4, 2, dtype=torch.float64)
    assert (wm(xb) - wm(xb[:, :, [2, 0, 3, 1]])).abs().max() < 1e-10
    # a permutation that changes with time is NOT an invariance (the causal conv runs along each row)
    xs = xb.clone(); xs[:, 3:] = xs[:, 3:, [1, 0, 2, 3]]
    assert (wm(xb) - wm(xs)).abs().max() > 1e-4


def test_slot_permutation_equivariance_and_decoder_invariance():
    f, x = _layer(), _x()
    y, z = f(x)
    sp = [2, 0, 3, 1]
    g = copy.deepcopy(f)
    g.slots.data = f.slots.data[:, sp]
    y2, z2 = g(x)
    assert torch.allclose(y2, y[:, :, sp], atol=1e-12) and torch.allclose(z2, z[:, :, sp], atol=1e-12)
    torch.manual_seed(0)
    wm = fx.FACTSWorldModel(n_balls=3, n_slots=4, slot_size=16, out_dim=36).double()
    xb = torch.rand(2, 5, 3, 2, dtype=torch.float64)
    wm2 = copy.deepcopy(wm)
    wm2.layers[-1].facts.slots.data = wm.layers[-1].facts.slots.data[:, sp]
    assert (wm(xb) - wm2(xb)).abs().max() < 1e-12          # slot-mixture decoder: the slot order does not matter


@pytest.mark.parametrize("kw", [dict(), dict(chunk_size=3), dict(query="previous")])
def test_causality(kw):
    f, x = _layer(**kw), _x(T=8)
    y, _ = f(x)
    x2 = x.clone(); x2[:, 5:] += torch.randn_like(x2[:, 5:])
    y2, _ = f(x2)
    assert (y2[:, :5] - y[:, :5]).abs().max() < 1e-12 and (y2[:, 5:] - y[:, 5:]).abs().max() > 1e-3


def test_scans_agree_with_the_recurrence_for_short_sequences():
    g = torch.Generator().manual_seed(0)
    dA = -2 * torch.rand(3, 16, 4, 8, generator=g, dtype=torch.float64)
    dBu, z0 = torch.randn(3, 16, 4, 8, generator=g, dtype=torch.float64), torch.randn(3, 1, 4, 8, generator=g, dtype=torch.float64)
    ref = fx.scan_recurrent(dA, dBu, z0)
    # hand check of one step: z_0 = e^{a_0} z_start + b_0
    assert torch.allclose(ref[:, 0], torch.exp(dA[:, 0]) * z0[:, 0] + dBu[:, 0])
    for m in fx.SCANS:
        assert (fx.selective_scan(dA, dBu, z0, m) - ref).abs().max() < 1e-10
        assert (fx.selective_scan(dA.float(), dBu.float(), z0.float(), m) - ref.float()).abs().max() < 1e-5
    f, x = _layer(), _x()
    outs = {}
    for m in fx.SCANS:
        f.scan = m
        outs[m] = f(x)[0]
    assert (outs["cumsum"] - outs["recurrent"]).abs().max() < 1e-5 and (outs["logspace"] - outs["recurrent"]).abs().max() < 1e-5
    # for long stretches only the log-space form stays finite
    a = -torch.full((1, 3000, 1, 1), 0.5, dtype=torch.float64)
    assert torch.isfinite(fx.scan_logspace(a, torch.ones_like(a), torch.ones(1, 1, 1, 1, dtype=torch.float64))).all()


def _manual_chunked(f, x, chunk):
    "The chunked mode by its definition: per chunk, queries and scan start = the last memory of the previous chunk."
    feats, params, _ = f.proj(x)
    q, z0 = f.initial_memory(x)
    ys = []
    for i in range(0, x.shape[1], chunk):
        y, z, _ = f.ssm(feats[:, i:i + chunk], params[:, i:i + chunk], q, z0)
        ys.append(y)
        q = z0 = z[:, -1:]
    return torch.cat(ys, 1)


def _manual_previous(f, x):
    "query='previous' step by step: route with queries z_{t-1}, then z_t = exp(ΔA) z_{t-1} + Δ B u (C ≡ 1 here)."
    feats, params, _ = f.proj(x)
    _, z = f.initial_memory(x)
    z = z[:, 0]
    A = -torch.exp(f.A_log)
    out = []
    for t in range(x.shape[1]):
        u, p, _ = f.router(feats[:, t], z, params[:, t])
        dt, B = p.split([f.D, f.D], -1)
        delta = torch.nn.functional.softplus(dt)
        z = torch.exp(delta * A) * z + delta * B * u
        out.append(z)
    return torch.stack(out, 1)


def test_chunked_and_previous_query_modes_match_their_definitions():
    f, x = _layer(chunk_size=3), _x(T=8)
    y = f(x)[0]
    assert torch.allclose(y, _manual_chunked(f, x, 3), atol=1e-12)
    f.chunk_size = 8                                       # one chunk = the fully parallel mode with queries Z0
    y_fast = f(x)[0]
    f.chunk_size = -1
    assert torch.allclose(y_fast, f(x)[0], atol=1e-12) and (y - y_fast).abs().max() > 1e-4
    g, x = _layer(C_rank=0, query="previous"), _x(T=6)
    assert torch.allclose(g(x)[0], _manual_previous(g, x), atol=1e-10)


def test_gradients_match_finite_differences():
    torch.manual_seed(0)
    f = fx.FACTS(3, 3, 2, 3, n_heads=1, C_rank=3).double()
    x = torch.randn(1, 4, 3, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: f(a)[0], (x,), eps=1e-6, atol=1e-5)


def test_router_weights_mask_and_meanpool():
    torch.manual_seed(0)
    r = fx.SlotRouter(8, 2, n_heads=2).double()
    inp, slots, par = torch.randn(3, 5, 8, dtype=torch.float64), torch.randn(3, 4, 8, dtype=torch.float64), torch.randn(3, 5, 16, dtype=torch.float64)
    u, p, w = r(inp, slots, par)
    assert u.shape == (3, 4, 8) and p.shape == (3, 4, 16) and torch.allclose(w.sum(-1), torch.ones_like(w[..., 0]))
    mask = torch.rand(4, 5, generator=torch.Generator().manual_seed(2)) > 0.4
    mask[:, 0] = True
    _, _, wm = r(inp, slots, par, mask=mask)
    assert (wm[..., ~mask] == 0).all()
    r.mode = "meanpool"
    u1, _, w1 = r(inp, slots, par)
    assert torch.allclose(w1, torch.full_like(w1, 0.2))
    u2, _, _ = r(inp, torch.randn(3, 4, 8, dtype=torch.float64), par)
    assert torch.allclose(u1, u2)                           # mean-pooling ignores the slots: every slot gets the same input
    with pytest.raises(ValueError, match="'mask'"):
        r(inp, slots, par, mask=torch.ones(3, 3, dtype=torch.bool))


def test_bouncing_balls_data():
    rng = np.random.default_rng(0)
    pos = fx.simulate_balls(50, 3, 40, rng)
    assert ((pos >= 0) & (pos <= 1)).all()
    step = np.linalg.norm(np.diff(pos, axis=1), axis=-1)
    far = ((pos[:, :-1] > 0.1) & (pos[:, :-1] < 0.9) & (pos[:, 1:] > 0.1) & (pos[:, 1:] < 0.9)).all(-1)
    assert np.allclose(step[far], np.broadcast_to(step[:, :1], step.shape)[far])   # constant speed away from walls
    assert (step[:, 0] >= fx.SPEED[0] - 1e-9).all() and (step[:, 0] <= fx.SPEED[1] + 1e-9).all()
    d = fx.bouncing_balls(20, 3, 8, np.random.default_rng(1), order="sorted")
    assert (np.diff(d["x"][:, 0, :, 0], axis=1) >= 0).all()
    assert np.allclose(d["now"][:, 1:], d["y"][:, :-1])
    # a frame is a sum of blobs: order-free, worked value at a pixel centre
    one = fx.render_frames(np.array([[[0.5 / 12, 0.5 / 12]]]), 12, 0.08)
    assert one[0, 0] == pytest.approx(1.0) and one[0, 1] == pytest.approx(np.exp(-(1 / 12) ** 2 / (2 * 0.08 ** 2)))
    xp, perm = fx.permute_rows(d["x"], np.random.default_rng(2))
    assert not (perm == np.arange(3)).all(1).any()
    assert np.allclose(fx.render_frames(xp), fx.render_frames(d["x"]))
    c = fx.simulate_balls(200, 3, 30, np.random.default_rng(3), collisions=True)
    assert not np.allclose(c, fx.simulate_balls(200, 3, 30, np.random.default_rng(3)))


def test_gru_baseline_depends_on_the_order():
    torch.manual_seed(0)
    gru = fx.GRUWorldModel(3, 36, 16)
    x = torch.rand(2, 5, 3, 2)
    assert (gru(x) - gru(x[:, :, [1, 2, 0]])).abs().max() > 1e-4


def test_method_beats_baselines_on_held_out_data(smoke_result):
    r = smoke_result("facts")
    m = r.metrics
    assert np.mean(m["mse_facts"]) < np.mean(m["mse_gru"])
    assert max(m["max_change_facts"]) < 1e-4 and min(m["max_change_gru"]) > 1e-3
    assert {o.id for o in r.claims} == {c.id for c in fx.CLAIMS}
    json.dumps(r.to_dict())


def test_forecaster_and_graph_path():
    torch.manual_seed(0)
    fc = fx.FACTSForecaster(48, 8, 3, num_factors=4, slot_size=16, e_layers=2).double()
    x = torch.randn(2, 48, 3, dtype=torch.float64)
    y = fc(x, None, None, None)
    assert y.shape == (2, 8, 3)
    assert torch.allclose(fc(3 * x + 2, None, None, None), 3 * y + 2, atol=1e-4)   # RevIN: input-window statistics only
    with pytest.raises(ValueError, match="'x_enc'"):
        fc(torch.randn(2, 40, 3, dtype=torch.float64))
    snaps = fx.karate_snapshots(6)
    X, mask = fx.snapshots_to_tensor(snaps)
    assert X.shape == (6, 34, 4) and mask.shape == (34, 34) and mask.diagonal().all() and torch.equal(mask, mask.T)
    g = fx.FACTS(4, 34, 34, 4, init="self")
    y, z, w = g(X[None], mask=mask, return_routing=True)
    assert y.shape == (1, 6, 34, 4) and (w[..., ~mask] == 0).all()


def test_bad_parameters_raise_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="'n_balls'"):
        fx.run("smoke", n_balls=0)
    with pytest.raises(ValueError, match="'order'"):
        fx.run("smoke", order="diagonal")
    with pytest.raises(ValueError, match="'init'"):
        fx.FACTS(4, 3, 2, 4, init="zeros")
    with pytest.raises(ValueError, match="'scan'"):
        fx.FACTS(4, 3, 2, 4, scan="fft")
    with pytest.raises(ValueError, match="'router'"):
        fx.FACTS(4, 3, 2, 4, router="magic")
    with pytest.raises(ValueError, match="'init'"):
        fx.FACTS(4, 3, 2, 4, init="self")                  # needs M == K
    with pytest.raises(ValueError, match="'order'"):
        fx.order_balls(np.zeros((1, 2, 3, 2)), "x", np.random.default_rng(0))
    with pytest.raises(ValueError, match="'key'"):
        fx.build_world_model("transformer", dict(n_balls=3, image_size=12))


def test_same_seed_same_numbers():
    kw = dict(n_seeds=1, n_train=100, n_val=50, n_test=50, steps=20, eval_every=10, workers=1, progress=False)
    a, b = fx.run("smoke", seed=3, **kw), fx.run("smoke", seed=3, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
