"""Tests for loss-based sample reweighting (Sow et al., ICLR 2025): weights, the LM loss, the regression gate."""
from __future__ import annotations

import itertools, json

import numpy as np
import pytest

import iclrbench.papers.loss_reweighting as lr
from iclrbench.core import Result
from iclrbench.explorers import loss_reweighting as lrx
from iclrbench.views.static import static_view
from static_view_checks import assert_static_view


def test_normalisation_and_strategy_shapes():
    l = np.array([0.3, 0.5, 1.0, 2.0, 4.0])
    h = lr.normalise_losses(l)
    assert h.min() == pytest.approx(-1) and h.max() == pytest.approx(1)
    assert np.allclose(np.diff(h) / np.diff(l), 2 / (4.0 - 0.3))           # affine in the loss
    assert np.allclose(lr.strategy_score(h, "linupper"), np.minimum(h + 1, 1))
    assert np.allclose(lr.strategy_score(h, "quadratic"), 1 - h ** 2)
    assert np.allclose(lr.strategy_score(h, "extremes"), np.abs(h))
    # constant losses: span clamped at 1e-6, no NaN
    assert np.all(np.isfinite(lr.sample_weights(np.ones(8), "linupper")))


@pytest.mark.parametrize("strategy", lr.STRATEGIES)
def test_weights_are_on_the_simplex_and_match_the_kl_maximiser(strategy):
    rng = np.random.default_rng(0)
    l = rng.exponential(size=32)
    r = 0.7
    w = lr.sample_weights(l, strategy, r)
    assert np.all(w >= 0) and w.sum() == pytest.approx(1)
    f = lr.strategy_score(lr.normalise_losses(l), strategy)
    obj = lambda v: v @ f - r * np.sum(v * np.log(np.maximum(v * len(v), 1e-300)))
    for v in rng.dirichlet(np.ones(32), 200):                                  # w maximises Σ w f − r KL(w‖unif)
        assert obj(w) >= obj(v) - 1e-12


def test_linupper_is_monotone_and_capped_and_large_r_is_uniform():
    l = np.linspace(0.1, 3, 40)
    w = lr.sample_weights(l, "linupper", 0.5)
    assert np.all(np.diff(w) >= -1e-15)
    assert np.allclose(w[l >= (l.min() + l.max()) / 2], w.max())              # flat over the high-loss half
    assert np.allclose(lr.sample_weights(l, "linupper", 1e7), 1 / 40, atol=1e-7)
    with pytest.raises(ValueError, match="'r'"):
        lr.sample_weights(l, "linupper", 0.0)
    with pytest.raises(ValueError, match="'strategy'"):
        lr.sample_weights(l, "magic")


def test_torch_and_numpy_weights_agree_and_carry_no_gradient():
    torch = pytest.importorskip("torch")
    l = torch.rand(16, requires_grad=True)
    for s in lr.STRATEGIES:
        w = lr.sample_weights(l * 2, s, 0.4)
        assert not w.requires_grad
        assert np.allclose(w.numpy(), lr.sample_weights(l.detach().numpy() * 2, s, 0.4), atol=1e-6)


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    import torch
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=4))


def _tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    import torch
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=128, n_positions=64))


@pytest.mark.parametrize("make", [_tiny_llama, _tiny_gpt2])
def test_lm_loss_on_tiny_hf_models(make):
    pytest.importorskip("transformers")
    import torch
    model = make()
    ids = torch.randint(0, 128, (6, 20), generator=torch.Generator().manual_seed(1))
    out = model(input_ids=ids, labels=ids)
    # (a) uniform equals HF's own mean loss (equal-length, unpadded)
    loss, w, per = lr.reweighted_lm_loss(out.logits, ids, "uniform")
    assert loss.item() == pytest.approx(out.loss.item(), rel=1e-5)
    assert torch.allclose(w, torch.full((6,), 1 / 6))
    # (b) weights on the simplex, monotone in the loss for LinUpper
    loss, w, per = lr.reweighted_lm_loss(out.logits, ids, "linupper", r=0.3)
    assert w.sum().item() == pytest.approx(1, abs=1e-6) and (w >= 0).all()
    order = per.argsort()
    assert (w[order].diff() >= -1e-7).all()
    assert loss.item() == pytest.approx((w * per).sum().item(), rel=1e-6)
    # (c) padding targets (-100) do not change a sample's token-averaged loss
    lab = ids.clone(); lab[0, 12:] = -100
    per_pad = lr.per_sample_lm_losses(out.logits, lab)[0]
    import torch.nn.functional as F
    manual = F.cross_entropy(out.logits[0, :11], ids[0, 1:12])
    assert per_pad[0].item() == pytest.approx(manual.item(), rel=1e-5)
    assert torch.allclose(per_pad[1:], per[1:])
    # (d) no gradient through the weights; one optimizer step runs
    assert not w.requires_grad
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = [p.detach().clone() for p in model.parameters()]
    loss.backward(); opt.step()
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))
    # (e) r → large gives uniform weights; burn-in gives the token mean
    _, w_big, _ = lr.reweighted_lm_loss(out.logits, ids, "linupper", r=1e7)
    assert torch.allclose(w_big, torch.full((6,), 1 / 6), atol=1e-6)
    l_burn, _, _ = lr.reweighted_lm_loss(out.logits, ids, "linupper", r=0.3, step=3, burn_in=10)
    assert l_burn.item() == pytest.approx(out.loss.item(), rel=1e-5)


def test_gathered_global_batch_gives_the_same_total_loss():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(8, 10, 16, generator=g), torch.randint(0, 16, (8, 10), generator=g)
    full, w_full, _ = lr.reweighted_lm_loss(logits, labels, "quadratic", r=0.5)
    per_all = lr.per_sample_lm_losses(logits, labels)[0]
    parts = [lr.reweighted_lm_loss(logits[k * 4:(k + 1) * 4], labels[k * 4:(k + 1) * 4], "quadratic", r=0.5,
                                   gather=lambda _l: per_all, rank=k) for k in range(2)]
    # DDP averages the two devices' gradients: the mean of the local losses equals the single-device loss
    assert (parts[0][0] + parts[1][0]).item() / 2 == pytest.approx(full.item(), rel=1e-6)
    assert torch.allclose(torch.cat([parts[0][1], parts[1][1]]), w_full)


def test_reweighting_trainer_runs_one_step(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate", reason="transformers.Trainer needs accelerate: pip install iclrbench[hf]")
    import torch
    from transformers import TrainingArguments
    model = _tiny_llama()
    ids = torch.randint(0, 128, (8, 16), generator=torch.Generator().manual_seed(2))
    ds = [{"input_ids": x, "labels": x} for x in ids]
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=8, max_steps=2, report_to=[],
                             use_cpu=True, save_strategy="no", logging_strategy="no")
    tr = lr.reweighting_trainer_class()(model=model, args=args, train_dataset=ds, strategy="linupper", r=0.5, burn_in=1)
    tr.train()
    assert tr.last_weights is not None and tr.last_weights.sum().item() == pytest.approx(1, abs=1e-6)


def test_regression_gate_mechanism_and_shared_batches():
    d = lr.regression_data(5)
    out = lr.train_regression(d, ("uniform", "linupper", "quadratic", "extremes"), steps=400, seed=5)
    a = dict(zip(out["strategies"], lr.loss_at(out, 300)))
    assert a["linupper"] <= 0.5 * a["uniform"] and a["quadratic"] < a["uniform"] and a["extremes"] > a["linupper"], a
    # before burn-in all strategies follow the same trajectory (shared mini-batches, uniform weights)
    out2 = lr.train_regression(d, ("uniform", "linupper"), steps=100, burn_in=100, seed=5)
    assert np.allclose(out2["test_loss"][0], out2["test_loss"][1])
    # after burn-in LinUpper moves weight mass off the redundant (fitted) cluster; Extremes moves mass onto it
    m = out["redundant_mass"]
    assert m[1, 100:300].mean() < m[0, 100:300].mean() - 0.03 and m[3, 100:300].mean() > m[0, 100:300].mean() + 0.01
    # without redundant data there is nothing to down-weight: the gain largely disappears
    d0 = lr.regression_data(5, redundant=0.0)
    o0 = lr.train_regression(d0, ("uniform", "linupper"), steps=300, seed=5)
    a0 = lr.loss_at(o0, 300)
    assert a0[1] > 0.5 * a0[0]


def test_label_outliers_reverse_the_order():
    d = lr.regression_data(0, outliers=0.05)
    out = lr.train_regression(d, ("uniform", "linupper"), steps=300, seed=0)
    u, l = lr.loss_at(out, 300)
    assert l > u


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="'r'"):
        lr.run("smoke", r=0.0)
    with pytest.raises(ValueError, match="'lm_strategy'"):
        lr.run("smoke", lm_strategy="uniform")
    with pytest.raises(ValueError, match="'redundant'"):
        lr.regression_data(0, redundant=1.5)
    with pytest.raises(ValueError, match="'lr'"):
        lr.train_regression(lr.regression_data(0), lr=-1.0)


def test_same_seed_same_numbers_and_checks_can_fail():
    a = lr.run("smoke", seed=2, n_seeds=1, lm_seeds=0, progress=False)
    b = lr.run("smoke", seed=2, n_seeds=1, lm_seeds=0, progress=False)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    assert {o.id for o in a.claims} == {c.id for c in lr.CLAIMS}
    ok = a.metrics
    bad = dict(ok)
    bad["test300_linupper"] = bad["test300_extremes"] = bad["test300_quadratic"] = bad["test300_uniform"]
    bad["lm_gain"] = [-0.01]; bad["lm_uniform"] = [2.0]; bad["lm_reweighted"] = [2.01]
    for c in lr.CLAIMS:
        held, msg = c.check(bad)
        assert not held and msg, c.id
    assert lr.CLAIMS[0].check(ok)[0] and lr.CLAIMS[1].check(ok)[0]


def test_static_view_is_generated_from_the_explorer_over_r_and_outliers():
    """The docs' static view: the explorer's test-loss curves over its STATIC_GRID (temperature r × outlier fraction),
    from a result that went through JSON."""
    res = lr.run("smoke", n_seeds=1, lm_seeds=0, progress=False)
    ex = lrx.explore(Result.from_dict(json.loads(json.dumps(res.to_dict()))))
    fig = static_view(ex)
    assert_static_view(fig)
    grid = list(itertools.product(*lrx.ReweightingExplorer.STATIC_GRID.values()))
    steps = fig.layout.sliders[0].steps
    assert len(steps) == len(grid) == 10 and not ex.errors
    titles = [st.args[1]["title.text"] for st in steps]
    # the small-r divergence the notebook reports shows up in the view; r = 1 trains every strategy
    assert "diverged" in titles[grid.index((0.2, 0.0))]
    assert "diverged" not in titles[grid.index((1.0, 0.0))]
