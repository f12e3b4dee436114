"""ICTSP: tokeniser shapes and alignment (no leakage either way), token normalisation, channel-count independence,
the linear warm-up, retrieval/fusion, the exact last-layer shortcut, and the run's parameter checks."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from iclrbench.blocks import forecasting as fc
from iclrbench.papers import ictsp as ic

TINY = dict(n_seeds=2, n_train=300, n_val=60, n_test=60, lookback=48, token_lookback=4, horizon=4, stride=4, d_model=16,
            n_heads=2, n_layers=1, steps=30, eval_every=15, progress=False)


@pytest.mark.parametrize("L,Lb,Lp,m,C", [(192, 8, 8, 4, 1), (50, 5, 3, 7, 3), (20, 4, 16, 1, 2)])
def test_tokens_shapes_and_alignment(L, Lb, Lp, m, C):
    # x[b, t, c] = 1000 b + 10 t + c, so every value names its position
    x = torch.as_tensor(1000.0 * np.arange(2)[:, None, None] + 10.0 * np.arange(L)[None, :, None] + np.arange(C)[None, None], dtype=torch.float64)
    tok = ic.make_task_tokens(x, Lb, Lp, m)
    N = (L - Lb - Lp) // m + 1
    assert N == ic.n_context_tokens(L, Lb, Lp, m)
    assert tok.context.shape == (2, N * C, Lb + Lp) and tok.target_lookback.shape == (2, C, Lb)
    assert tok.ends[0] == L and np.all(np.diff(tok.ends) == -m) and tok.ends[-1] - Lb - Lp >= 0
    for j in range(N * C):
        k, c = int(tok.time_index[j]), int(tok.channel_index[j])
        t = (tok.context[1, j].numpy() - 1000 - c) / 10
        assert np.array_equal(t, np.arange(tok.ends[k] - Lb - Lp, tok.ends[k]))     # one contiguous observed segment
        assert t.max() <= L - 1                                                      # its future is observed: no leakage
    assert np.all(tok.time_index.numpy() == np.repeat(np.arange(N), C))              # ordered by time index, then channel
    # the target's lookback ends at the last observed step
    assert np.array_equal((tok.target_lookback[0, :, -1].numpy() - np.arange(C)) / 10, np.full(C, L - 1))
    # a window shorter than L_b + L_P has no token: a clear error
    with pytest.raises(ValueError, match="'lookback'"):
        ic.make_task_tokens(x[:, : Lb + Lp - 1], Lb, Lp, m)


def test_target_future_is_the_placeholder_never_data():
    torch.manual_seed(0)
    model = ic.ICTSP(32, 4, 4, 2, d_model=16, n_heads=2, n_layers=1)
    x = torch.randn(3, 32, 2)
    *_, fut_t, last = model.embed(x)
    assert torch.allclose(fut_t, model.w_y(model.placeholder).expand(3, 2, -1))     # independent of the data
    # changing anything before the last L_b steps leaves the target's lookback unchanged, and the forecast depends on it
    x2 = x.clone(); x2[:, :-4] += torch.randn(3, 28, 2)
    model.on_train_step(0, 10)                                                       # warm-up path: target token only
    assert torch.allclose(model(x), model(x2), atol=1e-6)
    model.on_train_step(10, 10)
    assert not torch.allclose(model(x), model(x2), atol=1e-4)                        # the Transformer reads the context


@pytest.mark.parametrize("warm", [True, False])
def test_adding_a_constant_adds_it_to_the_forecast(warm):
    torch.manual_seed(1)
    model = ic.ICTSP(64, 8, 8, 4, d_model=32, n_heads=4, n_layers=2).double()
    model.on_train_step(0 if warm else 100, 100)
    x = torch.randn(4, 64, 3, dtype=torch.float64)
    shift = torch.tensor([5.0, -2.0, 100.0], dtype=torch.float64)
    assert torch.allclose(model(x + shift), model(x) + shift, atol=1e-9)


def test_trained_on_one_channel_runs_on_three_and_beats_last_value():
    torch.manual_seed(2)
    rng = np.random.default_rng(2)
    tr, va = fc.oscillator_windows(400, 48, 4, rng), fc.oscillator_windows(100, 48, 4, rng)
    model = ic.ICTSP(48, 4, 4, 4, d_model=16, n_heads=2, n_layers=1)
    fc.train_forecaster(model, tr["x"], tr["y"], 60, 32, 3e-3, val=(va["x"], va["y"]), eval_every=30, augment=ic.end_shortening(4, 4))
    x3 = np.concatenate([va["x"], va["x"][::-1], -va["x"]], axis=2)                     # [100, 48, 3]
    out = fc.predict(model, x3)
    assert out.shape == (100, 4, 3)
    assert fc.mse(out[..., :1], va["y"]) < fc.mse(np.repeat(va["x"][:, -1:], 4, 1), va["y"])


def test_last_layer_shortcut_equals_the_full_computation():
    torch.manual_seed(3)
    for norm_first in (True, False):
        model = ic.ICTSP(40, 4, 4, 3, d_model=16, n_heads=4, n_layers=2, norm_first=norm_first).double()
        x = torch.randn(2, 40, 3, dtype=torch.float64)
        hc, ht, *_, last = model.embed(x)
        h = model.in_norm(torch.cat([hc, ht], 1))
        for layer in model.layers: h, _ = layer(h)
        ref = model.head(model.out_norm(h[:, -3:])).transpose(1, 2) + last
        out, att = model(x, return_attention=True)
        assert torch.allclose(out, ref, atol=1e-12)
        assert att.shape == (2, 3, hc.shape[1]) and torch.all(att >= 0) and torch.all(att.sum(-1) <= 1 + 1e-9)


def test_end_shortening_keeps_window_and_target_contiguous():
    x = torch.arange(20.0).reshape(1, 20, 1)
    y = torch.arange(20.0, 24.0).reshape(1, 4, 1)
    aug = ic.end_shortening(3, 4)
    gen = torch.Generator().manual_seed(0)
    seen = set()
    for _ in range(40):
        xs, ys = aug(x, y, gen)
        s = 20 - xs.shape[1]
        seen.add(s)
        assert 0 <= s <= 3 and ys.shape == (1, 4, 1)
        assert torch.equal(torch.cat([xs, ys], 1)[0, :, 0], torch.arange(0.0, 24.0 - s))
    assert seen == {0, 1, 2, 3}


def test_fuse_tokens_by_hand_and_retrieval_model_runs():
    h = torch.arange(20.0).reshape(1, 20, 1)
    score = torch.linspace(1.0, 0.05, 20)[None]                 # already in score order
    out = ic.fuse_tokens(h, score, keep_frac=0.1, growth=8)
    assert out.shape == (1, 2 + 1 + 1, 1)                         # 2 kept, a group of 8, the remaining 10
    assert torch.allclose(out[0, :2, 0], h[0, :2, 0] * score[0, :2])
    w = score[0, 2:10]
    assert torch.allclose(out[0, 2, 0], (h[0, 2:10, 0] * w).sum() / w.sum(), atol=1e-4)
    assert ic.fuse_tokens(h, score, token_limit=3).shape[1] == 3
    torch.manual_seed(4)
    model = ic.ICTSP(96, 8, 8, 2, d_model=16, n_heads=2, n_layers=1, retrieval=True)
    y = model(torch.randn(2, 96, 2))
    y.sum().backward()
    assert y.shape == (2, 8, 2) and model.q_proj.weight.grad is not None


def test_bad_parameters_raise_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="'token_lookback'"):
        ic.run("smoke", token_lookback=190, progress=False)
    with pytest.raises(ValueError, match="'d_model'"):
        ic.run("smoke", d_model=30, progress=False)
    with pytest.raises(ValueError, match="'stride'"):
        ic.run("smoke", stride=0, progress=False)
    with pytest.raises(ValueError, match="'lookback'"):
        ic.ICTSP(10, 8, 8, 4)
    with pytest.raises(ValueError, match="'warmup_frac'"):
        ic.ICTSP(64, 8, 8, 4, warmup_frac=1.5)
    with pytest.raises(ValueError, match="max_channels"):
        ic.ICTSP(64, 8, 8, 4, max_channels=2)(torch.randn(1, 64, 3))
    with pytest.raises(ValueError, match="'key'"):
        ic.build_model("arima", ic.SCALES["smoke"])


def test_tiny_run_is_deterministic_in_one_or_two_processes_and_measures_every_model():
    a, b = ic.run("smoke", seed=5, workers=1, **TINY), ic.run("smoke", seed=5, workers=2, **TINY)
    assert json.dumps(a.to_dict(False)["metrics"], sort_keys=True) == json.dumps(b.to_dict(False)["metrics"], sort_keys=True)
    for k in ("last", "nlinear_lb", "nlinear_full", "mlp_lb", "mlp_full", "ictsp", "oracle"):
        assert len(a.metrics[f"mse_{k}"]) == 2 and np.all(np.isfinite(a.metrics[f"mse_{k}"]))
    assert a.metrics["mse_oracle"][0] < a.metrics["mse_last"][0]
    assert np.asarray(b.artefacts["attention"]).shape == (ic.N_SHOW, 11) and "models" in b.objects
    assert a.metrics["n_context_tokens"] == 11
    assert {o.id for o in a.claims} == {c.id for c in ic.CLAIMS}
    json.dumps(a.to_dict())


def test_claim_checks_fail_when_the_mechanism_vanishes():
    """If ICTSP is no better than a map on its own lookback (the context carries nothing), both checks fail."""
    ok = {"mse_ictsp": [0.47, 0.48, 0.46], "mse_last": [1.8, 1.9, 1.7], "mse_nlinear_lb": [1.1, 1.1, 1.0],
          "mse_nlinear_full": [0.78, 0.83, 0.80], "mse_mlp_lb": [0.80, 0.80, 0.76], "mse_mlp_full": [0.50, 0.55, 0.55]}
    checks = {c.id: c.check for c in ic.CLAIMS if c.check is not None}
    assert all(ch(ok)[0] for ch in checks.values())
    bad = dict(ok, mse_ictsp=list(ok["mse_mlp_lb"]))
    assert all(ch(bad)[0] is False for ch in checks.values())
    assert all(ch({})[0] is None for ch in checks.values())
