"""Tests of iclrbench.blocks.ntk: the empirical NTK against hand-derived kernels, an explicit autograd Jacobian
and central finite differences, on tiny float64 models."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from iclrbench.blocks.ntk import empirical_ntk, ntk_parameters, parameter_count, per_sample_jacobian


def _mlp(seed: int = 0, out: int = 1) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 4), nn.Softplus(), nn.Linear(4, out)).double()


def _explicit_jacobian(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    "Reference: one autograd.grad call per sample and output entry, parameters in named_parameters() order."
    params = [p for p in model.parameters()]
    rows = []
    for a in range(x.shape[0]):
        out = model(x[a:a + 1]).reshape(-1)
        rows.append(torch.stack([torch.cat([g.reshape(-1) for g in torch.autograd.grad(out[i], params, retain_graph=True)])
                                 for i in range(out.numel())]))
    return torch.stack(rows)                     # (n, O, P)


def _finite_difference_jacobian(model: nn.Module, x: torch.Tensor, h: float = 1e-6) -> torch.Tensor:
    "Reference: central differences in every scalar parameter."
    cols = []
    with torch.no_grad():
        for p in model.parameters():
            flat = p.view(-1)
            for k in range(flat.numel()):
                old = flat[k].item()
                flat[k] = old + h; up = model(x).reshape(x.shape[0], -1).clone()
                flat[k] = old - h; dn = model(x).reshape(x.shape[0], -1).clone()
                flat[k] = old
                cols.append((up - dn) / (2 * h))
    return torch.stack(cols, dim=2)              # (n, O, P)


def test_linear_layer_kernel_by_hand():
    lin = nn.Linear(3, 2).double()
    x, z = torch.randn(4, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    K = empirical_ntk(lin, x, z, output="full")
    expect = torch.einsum("ab,ij->abij", x @ z.T + 1, torch.eye(2, dtype=torch.float64))
    assert K.shape == (4, 2, 2, 2) and torch.allclose(K, expect, atol=1e-12)
    assert torch.allclose(empirical_ntk(lin, x, z, output="diagonal"), (x @ z.T + 1)[..., None].expand(4, 2, 2))
    # only the weight: Θ = x·x' per output; trace over the two outputs doubles it
    assert torch.allclose(empirical_ntk(lin, x, z, params=["weight"]), 2 * x @ z.T, atol=1e-12)


def test_readout_only_kernel_is_the_feature_gram_matrix():
    net = _mlp(1)
    x = torch.randn(6, 3, dtype=torch.float64)
    feats = net[:4](x)                                           # the last hidden layer's activations
    K = empirical_ntk(net, x, params=["4.weight", "4.bias"])
    assert torch.allclose(K, feats @ feats.T + 1, atol=1e-12)


@pytest.mark.parametrize("out", [1, 3])
def test_jacobian_matches_explicit_autograd_and_finite_differences(out):
    net = _mlp(2, out)
    x = torch.randn(5, 3, dtype=torch.float64)
    J = per_sample_jacobian(net, x)
    assert J.shape == (5, out, parameter_count(net))
    assert torch.allclose(J, _explicit_jacobian(net, x), atol=1e-12)
    Jfd = _finite_difference_jacobian(net, x)
    assert torch.allclose(J, Jfd, atol=1e-7, rtol=1e-6)
    K = empirical_ntk(net, x, output="full")
    K_fd = torch.einsum("aip,bjp->abij", Jfd, Jfd)
    assert torch.allclose(K, K_fd, atol=1e-6, rtol=1e-6)


def test_cross_kernel_is_a_block_of_the_joint_kernel_and_the_kernel_is_psd():
    net = _mlp(3)
    x = torch.randn(7, 3, dtype=torch.float64)
    K = empirical_ntk(net, x)
    assert torch.allclose(K, K.T, atol=1e-12)
    assert torch.linalg.eigvalsh(K).min() > -1e-10
    assert torch.allclose(empirical_ntk(net, x[:3], x[3:]), K[:3, 3:], atol=1e-12)


def test_a_convolutional_model_and_chunked_vmap():
    torch.manual_seed(4)
    net = nn.Sequential(nn.Conv1d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 6, 2)).double()
    x = torch.randn(4, 2, 8, dtype=torch.float64)
    J = per_sample_jacobian(net, x, chunk_size=2)
    assert torch.allclose(J, _explicit_jacobian(net, x), atol=1e-12)
    assert torch.allclose(empirical_ntk(net, x, chunk_size=1), torch.einsum("aip,bip->ab", J, J), atol=1e-12)


def test_kernel_at_other_parameter_values_and_the_model_is_untouched():
    net, other = _mlp(5), _mlp(6)
    x = torch.randn(4, 3, dtype=torch.float64)
    before = {n: p.clone() for n, p in net.named_parameters()}
    K_other = empirical_ntk(net, x, params=dict(other.named_parameters()))
    assert torch.allclose(K_other, empirical_ntk(other, x), atol=1e-12)
    assert not torch.allclose(K_other, empirical_ntk(net, x))
    assert all(torch.equal(p, before[n]) and p.grad is None for n, p in net.named_parameters())
    # a partial mapping: only the last layer at the other values, the rest held at the model's own
    last = {"4.weight": other[4].weight}
    K_mix = empirical_ntk(net, x, params=last)
    assert torch.allclose(K_mix, net[:4](x) @ net[:4](x).T, atol=1e-12)


def test_frozen_parameters_are_excluded_by_default():
    net = _mlp(7)
    net[0].weight.requires_grad_(False)
    sel, fixed = ntk_parameters(net)
    assert "0.weight" not in sel and "0.weight" in fixed
    assert parameter_count(net) == parameter_count(_mlp(7)) - 15


def test_bad_arguments_raise_value_error_naming_the_parameter():
    net = _mlp(0)
    x = torch.randn(3, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="'output'"):
        empirical_ntk(net, x, output="eigen")
    with pytest.raises(ValueError, match="'params'"):
        empirical_ntk(net, x, params=["nope.weight"])
    with pytest.raises(ValueError, match="'params'"):
        empirical_ntk(net, x, params={"0.weight": torch.zeros(2, 2)})
    with pytest.raises(ValueError, match="'params'"):
        empirical_ntk(net, x, params=[])
    with pytest.raises(ValueError, match="'x1'"):
        empirical_ntk(net, [[0.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="'x2'"):
        empirical_ntk(net, x, torch.zeros(0, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="'chunk_size'"):
        per_sample_jacobian(net, x, chunk_size=0)
