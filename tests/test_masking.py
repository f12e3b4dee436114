"""Tests of iclrbench.blocks.masking: BEiT block-wise masks, random masks, sin-cos position embeddings."""
import math

import numpy as np
import pytest
import torch

from iclrbench.blocks.masking import block_mask, block_masks, random_mask, sincos_1d, sincos_2d


def test_block_mask_counts_shapes_and_determinism():
    for seed in range(20):
        m = block_mask(14, 14, 75, min_num_patches=16, rng=seed)
        assert m.shape == (14, 14) and m.dtype == bool
        assert 50 <= m.sum() <= 75                       # never above the target; BEiT may stop slightly below
    assert np.array_equal(block_mask(8, 8, 26, rng=3), block_mask(8, 8, 26, rng=3))
    assert not np.array_equal(block_mask(8, 8, 26, rng=3), block_mask(8, 8, 26, rng=4))
    b = block_masks(50, 8, 8, 0.4, rng=0)
    assert b.shape == (50, 64) and b.dtype == torch.bool and b.sum(1).max() <= 26 and b.sum(1).float().mean() > 23


def test_block_mask_is_blockwise_not_scattered():
    # masked patches come in rectangles: far more 4-adjacent masked pairs than a random mask of the same size
    def adj(m):
        m = m.reshape(8, 8)
        return int((m[1:] & m[:-1]).sum() + (m[:, 1:] & m[:, :-1]).sum())
    blk = block_masks(100, 8, 8, 0.4, rng=0).numpy()
    rnd = random_mask(100, 64, 26 / 64, rng=0).numpy()
    assert np.mean([adj(m) for m in blk]) > 1.5 * np.mean([adj(m) for m in rnd])


def test_random_mask_exact_count():
    m = random_mask(7, 10, 0.3, rng=1)
    assert m.shape == (7, 10) and torch.all(m.sum(1) == 3)


def test_sincos_by_hand_and_base():
    pe = sincos_1d([2.0], 4, base=100.0)[0]                 # ω = [1, 1/10]
    assert torch.allclose(pe, torch.tensor([math.sin(2), math.sin(0.2), math.cos(2), math.cos(0.2)]))
    big, small = sincos_1d(np.arange(10), 8, 10000.0), sincos_1d(np.arange(10), 8, 100.0)
    assert not torch.allclose(big, small) and torch.allclose(big[:, 0], small[:, 0])   # ω_0 = 1 for every base
    p2 = sincos_2d(3, 4, 8, base=50.0, cls_token=True)
    assert p2.shape == (13, 8) and torch.all(p2[0] == 0)
    r, c = 2, 1
    assert torch.allclose(p2[1 + r * 4 + c], torch.cat([sincos_1d([c], 4, 50.0)[0], sincos_1d([r], 4, 50.0)[0]]))


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="num_masking_patches"): block_mask(4, 4, 17)
    with pytest.raises(ValueError, match="mask_ratio"): block_masks(2, 4, 4, 1.2)
    with pytest.raises(ValueError, match="dim"): sincos_1d([0, 1], 3)
    with pytest.raises(ValueError, match="base"): sincos_1d([0, 1], 4, base=0.0)
    with pytest.raises(ValueError, match="dim"): sincos_2d(2, 2, 6)
