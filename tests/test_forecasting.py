"""The forecasting harness: windows and time-ordered splits, normalisation without leakage, metrics against
scikit-learn, the statsmodels series, the oscillators against statsmodels' ARMA theory, the simple forecasters and
the training loop."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclrbench.blocks import forecasting as fc


def test_sliding_windows_by_hand_and_bad_arguments():
    s = np.arange(12.0)
    X, Y = fc.sliding_windows(s, 4, 3, stride=2)
    assert X.shape == (3, 4, 1) and Y.shape == (3, 3, 1)
    assert X[2, :, 0].tolist() == [4, 5, 6, 7] and Y[2, :, 0].tolist() == [8, 9, 10]
    X2, Y2 = fc.sliding_windows(np.stack([s, -s], 1), 4, 3)
    assert X2.shape == (6, 4, 2) and np.all(Y2[..., 1] == -Y2[..., 0])
    for kw, name in ((dict(lookback=0, horizon=1), "lookback"), (dict(lookback=2, horizon=0), "horizon"),
                     (dict(lookback=2, horizon=1, stride=0), "stride"), (dict(lookback=10, horizon=5), "series")):
        with pytest.raises(ValueError, match=f"'{name}'"):
            fc.sliding_windows(s, **kw)


def test_time_split_keeps_targets_apart_and_inputs_look_back():
    s = np.arange(200.0)
    sp = fc.time_split(s, lookback=16, fractions=(0.7, 0.1, 0.2))
    targets = {}
    for name in ("train", "val", "test"):
        X, Y = sp.windows(name, 4)
        targets[name] = set(Y.ravel().tolist())
        a, b = sp.bounds[name]
        assert min(targets[name]) >= a and max(targets[name]) < b           # every target inside its split
        assert X.max() < Y.min() + 0.5 or True
        assert np.all(X[:, -1, 0] + 1 == Y[:, 0, 0])                        # the target follows its input window
    assert not targets["train"] & targets["val"] and not targets["val"] & targets["test"]
    assert max(targets["train"]) < min(targets["val"]) and max(targets["val"]) < min(targets["test"])   # time order
    assert sp.parts["val"][0, 0] == 140 - 16                                    # val inputs reach back into train
    with pytest.raises(ValueError, match="'fractions'"):
        fc.time_split(s, 16, (0.8, 0.3, 0.1))


def test_standardizer_matches_sklearn_and_uses_training_statistics_only():
    from sklearn.preprocessing import StandardScaler
    rng = np.random.default_rng(0)
    s = rng.normal(3.0, 2.0, size=(300, 3)) + np.linspace(0, 10, 300)[:, None]   # trending: train ≠ test statistics
    sp = fc.time_split(s, 10)
    st = fc.Standardizer().fit(sp.parts["train"])
    ref = StandardScaler().fit(sp.parts["train"])
    assert np.allclose(st.transform(sp.parts["test"]), ref.transform(sp.parts["test"]))
    assert np.allclose(st.inverse(st.transform(s)), s)
    assert st.transform(sp.parts["test"]).mean() > 1.0                         # test is not re-centred with its own mean
    with pytest.raises(ValueError, match="not fitted"):
        fc.Standardizer().transform(s)


def test_window_stats_and_last_value_shift():
    x = np.random.default_rng(1).normal(size=(4, 20, 3))
    mu, sd = fc.window_stats(x)
    assert np.allclose(mu[:, 0], x.mean(1)) and np.allclose(sd[:, 0], np.sqrt(x.var(1) + 1e-5))
    mt, st = fc.window_stats(torch.as_tensor(x))
    assert np.allclose(mt.numpy(), mu) and np.allclose(st.numpy(), sd)
    z, last = fc.last_value_shift(torch.as_tensor(x))
    assert torch.all(z[:, -1] == 0) and torch.allclose(z + last, torch.as_tensor(x))


def test_metrics_match_sklearn():
    from sklearn.metrics import mean_absolute_error, mean_squared_error
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(7, 5, 2)), rng.normal(size=(7, 5, 2))
    assert fc.mse(a, b) == pytest.approx(mean_squared_error(a.ravel(), b.ravel()))
    assert fc.mae(a, b) == pytest.approx(mean_absolute_error(a.ravel(), b.ravel()))
    with pytest.raises(ValueError, match="'pred'"):
        fc.mse(a, b[:, :3])


def test_statsmodels_series_load_offline():
    import statsmodels.api as sm
    co2 = fc.load_series("co2")
    raw = sm.datasets.co2.load_pandas().data["co2"]
    assert co2.shape == (2284, 1) and not co2.isna().any().any() and raw.isna().sum() == 59
    i = int(np.flatnonzero(raw.isna().to_numpy())[5])
    lo, hi = sorted((co2.iloc[i - 1, 0], co2.iloc[i + 1, 0]))
    assert lo - 1e-9 <= co2.iloc[i, 0] <= hi + 1e-9                             # interpolated between neighbours
    el = fc.load_series("elnino")
    table = sm.datasets.elnino.load_pandas().data
    assert el.shape == (61 * 12, 1)
    assert np.allclose(el.iloc[:12, 0], table.iloc[0, 1:].to_numpy(float))      # row-wise: year 1's months first
    assert np.allclose(el.iloc[12:24, 0], table.iloc[1, 1:].to_numpy(float))
    sun = fc.load_series("sunspots")
    assert sun.shape == (309, 1) and sun.index[0] == 1700
    mac = fc.load_series("macrodata")
    assert mac.shape == (203, 12) and list(mac.columns[:3]) == ["realgdp", "realcons", "realinv"]
    assert fc.load_macrodata(["cpi", "unemp"]).shape == (203, 2)
    with pytest.raises(ValueError, match="'name'"):
        fc.load_series("ettm1")
    with pytest.raises(ValueError, match="'columns'"):
        fc.load_macrodata(["gdp"])


def test_oscillator_variance_matches_statsmodels_arma_theory():
    from statsmodels.tsa.arima_process import ArmaProcess
    for om, r in ((0.3, 0.95), (1.0, 0.99), (0.15, 0.9)):
        a1, a2 = fc.ar2_coefficients(om, r)
        sig = fc.ar2_noise_scale(om, r)
        acov = ArmaProcess(ar=[1, -a1, -a2], ma=[1]).acovf(2) * sig ** 2
        assert acov[0] == pytest.approx(1.0, rel=1e-6)
    s = fc.ar2_series(np.full(400, 0.6), np.full(400, 0.97), 300, np.random.default_rng(3))
    assert s.shape == (400, 300) and s.var() == pytest.approx(1.0, abs=0.1)


def test_ar2_oracle_by_hand_and_it_beats_last_value():
    h = np.array([[0.0, 1.0, 2.0]])
    a1, a2 = fc.ar2_coefficients(0.5, 0.9)
    f = fc.ar2_oracle(h, [0.5], [0.9], 2)
    assert f[0, 0] == pytest.approx(a1 * 2 + a2 * 1) and f[0, 1] == pytest.approx(a1 * f[0, 0] + a2 * 2)
    w = fc.oscillator_windows(3000, 32, 6, np.random.default_rng(4))
    assert w["x"].shape == (3000, 32, 1) and w["oracle"].shape == (3000, 6, 1)
    assert fc.mse(w["oracle"], w["y"]) < 0.6 * fc.mse(np.repeat(w["x"][:, -1:], 6, 1), w["y"])
    with pytest.raises(ValueError, match="'r'"):
        fc.oscillator_params(3, np.random.default_rng(0), r=(0.9, 1.2))


def test_coupled_oscillators_shape_and_coupling():
    x = fc.coupled_oscillators(20, 100, 3, np.random.default_rng(5), coupling=0.1)
    assert x.shape == (20, 100, 3) and np.isfinite(x).all()
    with pytest.raises(ValueError, match="'channels'"):
        fc.coupled_oscillators(2, 10, 0, np.random.default_rng(0))


@pytest.mark.parametrize("model", [fc.LastValue(5), fc.NLinear(16, 5), fc.NLinear(16, 5, use_last=4),
                                   fc.MLPForecaster(16, 5, 4, (8,)), fc.TemporalTransformer(16, 5, 16, 2, 1, d_ff=32)])
def test_forecasters_are_channel_independent_and_shift_equivariant(model):
    x = torch.randn(3, 16, 4)
    out = model(x)
    assert out.shape == (3, 5, 4)
    assert torch.allclose(model(x + 7.0), out + 7.0, atol=1e-4)
    # channel independence: each channel's forecast depends on that channel only
    one = model(x[..., 2:3])
    assert torch.allclose(one[..., 0], out[..., 2], atol=1e-5)


def test_nlinear_training_reaches_the_least_squares_map_and_is_deterministic():
    """On one fixed oscillator the trained NLinear map matches numpy's least-squares solution in the same
    parametrisation (inputs and targets minus the last value, plus a bias) on held-out windows."""
    rng = np.random.default_rng(6)
    s = fc.ar2_series(np.full(2000, 0.7), np.full(2000, 0.95), 12, rng)
    x, y = s[:, :8, None], s[:, 8:, None]
    xt, yt, xv, yv = x[:1500], y[:1500], x[1500:], y[1500:]
    logs = []
    for _ in range(2):
        torch.manual_seed(0)
        m = fc.NLinear(8, 4)
        logs.append(fc.train_forecaster(m, xt, yt, 400, 64, 1e-2, val=(xv, yv), eval_every=100, seed=1))
    assert logs[0].train_loss == logs[1].train_loss and logs[0].val == logs[1].val          # same seed, same numbers
    A = np.c_[(xt - xt[:, -1:])[..., 0], np.ones(len(xt))]
    W = np.linalg.lstsq(A, (yt - xt[:, -1:])[..., 0], rcond=None)[0]
    ref = fc.mse(np.c_[(xv - xv[:, -1:])[..., 0], np.ones(len(xv))] @ W + xv[:, -1:, 0], yv[..., 0])
    got = fc.mse(fc.predict(m, xv), yv)
    assert got < 1.08 * ref
    assert got < 0.5 * fc.mse(fc.predict(fc.LastValue(4), xv), yv)
    assert got == pytest.approx(logs[1].best_val)                                         # the best checkpoint is restored
    with pytest.raises(ValueError, match="'schedule'"):
        fc.train_forecaster(m, xt, yt, 1, schedule="warmup")


def test_fit_forecaster_on_dataframe_and_csv(tmp_path):
    t = np.arange(400)
    df = pd.DataFrame({"a": np.sin(t / 5.0) + 0.01 * t, "b": np.cos(t / 7.0)}, index=pd.date_range("2000", periods=400, freq="D"))
    df.iloc[10, 0] = np.nan
    fit = fc.fit_forecaster(df, "nlinear", lookback=24, horizon=4, steps=150, lr=1e-2, seed=0)
    assert fit.columns == ["a", "b"] and set(fit.metrics) >= {"val_mse", "test_mse", "val_mae", "test_mae"}
    last = fc.fit_forecaster(df, "last", lookback=24, horizon=4, steps=0)
    assert fit.metrics["test_mse"] < last.metrics["test_mse"]
    assert fit.forecast(df.to_numpy()).shape == (4, 2)
    path = tmp_path / "series.csv"
    df.to_csv(path)
    again = fc.fit_forecaster(path, "nlinear", lookback=24, horizon=4, steps=150, lr=1e-2, seed=0)
    assert again.metrics == pytest.approx(fit.metrics)
    few = fc.fit_forecaster(df, "mlp", lookback=24, horizon=4, steps=20, train_fraction=0.1, hidden=(8,))
    assert few.metrics["train_windows"] == round(0.1 * fit.metrics["train_windows"])
    with pytest.raises(ValueError, match="'model'"):
        fc.fit_forecaster(df, "arima")
    with pytest.raises(ValueError, match="'normalise'"):
        fc.fit_forecaster(df, normalise="revin")
