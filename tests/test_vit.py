"""Tests of iclrbench.blocks.vit: patch embedding, mask token, layer scale, timm-style forward_features."""
import pytest
import torch
from torch import nn

from iclrbench.blocks.masking import sincos_2d
from iclrbench.blocks.vit import Attention, Block, DropPath, PatchEmbed, TinyViT


def test_patch_embed_matches_manual_unfold():
    torch.manual_seed(0)
    pe = PatchEmbed((8, 12), 4, 3, 5)
    x = torch.randn(2, 3, 8, 12)
    patches = x.unfold(2, 4, 4).unfold(3, 4, 4)                     # B, C, gh, gw, 4, 4
    patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(2, 6, 48)   # row-major grid, (C, ph, pw) flattened
    ref = patches @ pe.proj.weight.reshape(5, 48).T + pe.proj.bias
    assert pe.grid_size == (2, 3) and pe.num_patches == 6
    assert torch.allclose(pe(x), ref, atol=1e-5)
    with pytest.raises(ValueError, match="patch_size"): PatchEmbed(10, 4)


def test_attention_matches_torch_reference():
    torch.manual_seed(0)
    att = Attention(8, 2)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(att.qkv.weight); mha.in_proj_bias.copy_(att.qkv.bias)
        mha.out_proj.weight.copy_(att.proj.weight); mha.out_proj.bias.copy_(att.proj.bias)
    x = torch.randn(3, 5, 8)
    assert torch.allclose(att(x), mha(x, x, x, need_weights=False)[0], atol=1e-5)


def test_layer_scale_and_drop_path():
    x = torch.randn(2, 4, 8)
    b = Block(8, 2, 2.0, layer_scale_init=0.1)
    assert torch.allclose(b.gamma_1, torch.full((8,), 0.1)) and b.gamma_1.requires_grad
    with torch.no_grad(): b.gamma_1.zero_(); b.gamma_2.zero_()
    assert torch.allclose(b(x), x)                                 # zero layer scale = identity block
    dp = DropPath(0.3)
    assert torch.equal(dp.eval()(x), x)                            # identity at eval
    torch.manual_seed(0)
    y = dp.train()(torch.ones(4000, 1))
    assert abs(y.mean().item() - 1.0) < 0.05 and torch.allclose(y[y > 0], torch.tensor(1 / 0.7))
    with pytest.raises(ValueError, match="drop_path"): DropPath(1.0)


def test_tiny_vit_shapes_mask_token_and_gradients():
    m = TinyViT(16, 4, 3, 16, depth=2, num_heads=2, head_dim=6, seed=1)
    x = torch.randn(2, 3, 16, 16)
    f = m.forward_features(x)
    assert f.shape == (2, 17, 16) and m(x).shape == (2, 17, 6)
    mask = torch.zeros(2, 16, dtype=torch.bool); mask[0, 3] = True
    e = m.embed(x, mask)
    assert torch.allclose(e[0, 1 + 3], (m.mask_token + m.pos_embed[:, 1 + 3])[0, 0])   # masked patch → mask token
    assert torch.allclose(e[1], m.embed(x)[1])                                          # row 1 unmasked
    m(x, mask).sum().backward()
    assert m.mask_token.grad is not None and m.mask_token.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="mask"): TinyViT(16, 4, use_mask_token=False)(x, mask)
    with pytest.raises(ValueError, match="pos_embed"): TinyViT(16, 4, pos_embed="rope")


def test_sincos_positions_are_fixed_and_seeding_is_bitwise():
    m = TinyViT(16, 4, 3, 16, 1, 2, pos_embed="sincos", pos_base=100.0)
    assert torch.equal(m.pos_embed[0], sincos_2d(4, 4, 16, base=100.0, cls_token=True))
    assert "pos_embed" not in dict(m.named_parameters())
    x = torch.randn(1, 3, 16, 16)
    assert torch.equal(TinyViT(16, 4, 3, 16, 2, 2, seed=5)(x), TinyViT(16, 4, 3, 16, 2, 2, seed=5)(x))
    assert not torch.equal(TinyViT(16, 4, 3, 16, 2, 2, seed=5)(x), TinyViT(16, 4, 3, 16, 2, 2, seed=6)(x))


def test_attention_weights_path_matches_fused_path():
    torch.manual_seed(1)
    att = Attention(8, 2)
    x = torch.randn(2, 6, 8)
    out, w = att(x, return_attention=True)
    assert torch.allclose(out, att(x), atol=1e-5) and torch.allclose(w.sum(-1), torch.ones(2, 2, 6))
