"""Tests of iclrbench.papers.tjepa: masks, tokenizer, encoder/predictor, EMA and gradients, the sklearn adapter, the run."""
import json

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_classification

from iclrbench.papers import tjepa as tj


def test_masks_are_disjoint_sized_per_batch_and_drawn_per_row():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = tj.sample_masks(16, 30, (0.15, 0.6), (0.15, 0.6), 4, rng)
        n_ctx, n_tgt = m.context.shape[1], m.targets.shape[2]
        assert 1 <= n_ctx and 1 <= n_tgt and n_ctx + n_tgt <= 30 and m.targets.shape[:2] == (4, 16)
        for b in range(16):
            assert len(set(m.context[b])) == n_ctx
            for p in range(4):
                assert len(set(m.targets[p, b])) == n_tgt and not set(m.targets[p, b]) & set(m.context[b])
        assert len({tuple(r) for r in m.context}) > 1                    # membership differs between rows
    # sizes follow round(D u) with u in the share ranges
    sizes = [tj.sample_mask_sizes(100, (0.2, 0.3), (0.1, 0.2), rng) for _ in range(200)]
    assert all(20 <= a <= 30 and 10 <= b <= 20 for a, b in sizes)
    with pytest.raises(ValueError, match="'ctx_share'"): tj.sample_mask_sizes(10, (0.5, 0.2), (0.1, 0.2), rng)
    with pytest.raises(ValueError, match="'num_preds'"): tj.sample_masks(2, 10, num_preds=0)


def test_reg_modes_map_features_to_sequence_positions():
    m = tj.Masks(np.array([[0, 3]]), np.array([[[1, 5]], [[2, 4]]]))
    c, t = tj.sequence_positions(m, 2, "always_visible")
    assert c.tolist() == [[0, 1, 2, 5]] and t[:, 0].tolist() == [[3, 7], [4, 6]]     # [REG] always in, never a target
    c, t = tj.sequence_positions(m, 2, "released_code")
    assert c.tolist() == [[0, 3]] and t[:, 0].tolist() == [[1, 5], [2, 4]]           # the released code's indexing
    with pytest.raises(ValueError, match="'reg_mode'"): tj.sequence_positions(m, 2, "other")


def test_tokenizer_and_positions_by_hand():
    tk = tj.TabularTokenizer(2, (3,), d=4, n_reg=1)
    x = torch.tensor([[2.0, -1.0]])
    out = tk(x, torch.tensor([[2]]))
    assert out.shape == (1, 4, 4)
    assert torch.allclose(out[0, 0], tk.reg[0])
    assert torch.allclose(out[0, 1], 2 * tk.num_weight[0] + tk.num_bias[0])
    assert torch.allclose(out[0, 3], tk.cat_embedding.weight[2] + tk.cat_bias[0])
    e = tj.sincos_embedding([0, 1], 4, base=100.0)
    assert torch.allclose(e[1], torch.tensor([np.sin(1.0), np.sin(0.1), np.cos(1.0), np.cos(0.1)], dtype=torch.float32))
    enc = tj.TabularEncoder(3, d=8, n_reg=1, layers=1, heads=2, ffn=8)
    pred = tj.JEPAPredictor(8, enc.seq_len, 4, 1, 2)
    assert torch.allclose(enc.pos, tj.sincos_embedding(np.arange(4), 8, 100.0))
    assert torch.allclose(pred.pos, tj.sincos_embedding(np.arange(4), 4, 10000.0))
    assert not enc.blocks.layers[0].norm_first                                      # post-norm encoder


def test_loss_gradients_reach_context_encoder_and_predictor_only_and_match_finite_differences():
    torch.manual_seed(0)
    enc = tj.TabularEncoder(6, d=8, n_reg=1, layers=1, heads=2, ffn=8).double()
    tgt = tj.EMATeacher(enc, 0.996)
    pred = tj.JEPAPredictor(8, enc.seq_len, 4, 1, 2).double()
    with torch.no_grad():
        for q in tgt.parameters(): q.add_(0.05 * torch.randn_like(q))        # teacher ≠ student
    x = torch.randn(5, 6, dtype=torch.float64)
    m = tj.sample_masks(5, 6, (0.3, 0.4), (0.2, 0.3), 2, np.random.default_rng(0))
    c, t = tj.sequence_positions(m, 1)
    enc.eval(); pred.eval(); tgt.eval()
    loss = tj.tjepa_loss(enc, tgt, pred, x, None, c, t)
    loss.backward()
    assert all(q.grad is None for q in tgt.parameters())
    w = enc.tokenizer.num_weight
    assert w.grad is not None and pred.proj.weight.grad is not None
    i, j = 2, 3
    with torch.no_grad():
        w[i, j] += 1e-6; up = tj.tjepa_loss(enc, tgt, pred, x, None, c, t)
        w[i, j] -= 2e-6; dn = tj.tjepa_loss(enc, tgt, pred, x, None, c, t)
        w[i, j] += 1e-6
    assert float(w.grad[i, j]) == pytest.approx(float((up - dn) / 2e-6), rel=1e-4, abs=1e-9)


def test_pretraining_schedules_and_target_encoder_features():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(64, 8)).astype(np.float32)
    cfg = tj.TJEPAConfig(d=8, ffn=8, pred_d=4, epochs=2, batch_size=32, warmup_epochs=1)
    pt = tj.pretrain_tjepa(X, config=cfg, seed=0, monitor=X[:16])
    mom = pt.history["momentum"]
    assert len(mom) == 4 and mom[0] == pytest.approx(0.996) and np.all(np.diff(mom) > 0) and mom[-1] < 1.0
    assert pt.history["lr"][0] == 0.0 and max(pt.history["lr"]) == pytest.approx(1e-3)
    assert len(pt.history["collapse_ratio"]) == 2
    ft, fc = tj.encode(pt.target_encoder, X), tj.encode(pt.context_encoder, X)
    assert ft.shape == (64, 9 * 8) and not np.allclose(ft, fc)                       # the target, not the context encoder
    again = tj.pretrain_tjepa(X, config=cfg, seed=0)
    assert np.array_equal(tj.encode(again.target_encoder, X), ft)                     # same seed, same numbers


def test_sklearn_adapter_on_make_classification_with_categoricals():
    X, _ = make_classification(n_samples=120, n_features=6, random_state=0)
    rng = np.random.default_rng(0)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    for k, card in zip(("c1", "c2", "c3"), (3, 4, 2)):
        df[k] = pd.Categorical(rng.choice([f"v{i}" for i in range(card)], size=120))
    model = tj.TJEPA(d=8, ffn=8, pred_d=4, epochs=2, batch_size=32).fit(df)
    assert model.cat_columns_ == ["c1", "c2", "c3"] and model.cards_ == [4, 5, 3]    # + one unseen-value code
    Z = model.transform(df)
    assert Z.shape == (120, (1 + 9) * 8) and np.array_equal(Z, model.transform(df))   # deterministic in eval mode
    assert all(not q.requires_grad for q in model.model_.target.parameters())
    other = df.copy(); other["c1"] = "never seen"
    assert model.transform(other).shape == Z.shape
    # the array path: numeric columns first, integer codes after
    A = np.column_stack([X, rng.integers(0, 3, 120), rng.integers(0, 2, 120)])
    m2 = tj.TJEPA(num_features=6, cat_cardinalities=(3, 2), d=8, ffn=8, pred_d=4, epochs=1).fit(A)
    assert m2.transform(A).shape == (120, 9 * 8)
    with pytest.raises(ValueError, match="'num_features'"): tj.TJEPA(num_features=5, cat_cardinalities=(3, 2)).fit(A)
    with pytest.raises(ValueError, match="not fitted"): tj.TJEPA().transform(A)


def test_bad_parameters_raise_value_error_naming_the_parameter():
    for kw, name in ((dict(epochs=0), "'epochs'"), (dict(dataset="iris"), "'dataset'"), (dict(enc_heads=3), "'enc_heads'"),
                     (dict(ctx_min=0.5, ctx_max=0.2), "'ctx_min'"), (dict(label_budgets="5,x"), "'label_budgets'"),
                     (dict(reg_compare="9"), "'reg_compare'"), (dict(reg_mode="x"), "'reg_mode'")):
        with pytest.raises(ValueError, match=name): tj.run("smoke", progress=False, **kw)


def test_tiny_run_same_seed_same_numbers_and_claims_evaluated():
    kw = dict(n_seeds=1, epochs=1, progress=False)
    a, b = tj.run("smoke", seed=3, **kw), tj.run("smoke", seed=3, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    assert {o.id for o in a.claims} == {c.id for c in tj.CLAIMS}
    assert a.metrics["feature_dim"] == (1 + a.metrics["n_features"]) * 32
    json.dumps(a.to_dict())


def test_claim_checks_can_fail():
    ok = {"acc_tjepa": [0.90, 0.91, 0.92], "acc_raw": [0.85, 0.86, 0.87], "acc_pca": [0.8] * 3, "acc_mlp_raw": [0.8] * 3,
          "labels_per_class": 10, "collapse_ratio": [0.7, 0.6, 0.8], "target_moved": [0.9] * 3, "n_reg": 1, "reg_compare_ratio": {"0": 0.1}}
    by_id = {c.id: c for c in tj.CLAIMS}
    assert by_id["beats-raw"].check(ok)[0] and by_id["reg-tokens-collapse"].check(ok)[0]
    assert not by_id["beats-raw"].check(dict(ok, acc_tjepa=[0.86, 0.87, 0.88]))[0]
    assert not by_id["reg-tokens-collapse"].check(dict(ok, collapse_ratio=[0.01, 0.02, 0.5]))[0]
    assert not by_id["reg-tokens-collapse"].check(dict(ok, target_moved=[0.15] * 3))[0]   # the target never left its init
    assert by_id["matches-gbdt"].check(ok)[0] is None
