"""Tests of LocoGS-mini: the hash grid by hand, contraction, straight-through estimators, masks, storage bytes =
bytes of the arrays written, decoding, the official quantiser, budget matching, ply I/O and distillation, the
smoke run's claims, determinism and bad parameters."""
import io
import json
import math

import numpy as np
import pytest
import torch

from iclrbench.blocks.scenes3d import GaussianCloud, make_static_scene, scene_views
from iclrbench.papers import locogs as L

TINY = dict(image_size=16, n_gaussians=120, n_gt=400, steps=6, n_train_views=3, n_test_views=2, progress=False)


@pytest.fixture(scope="module")
def init():
    return L.init_from_scene(make_static_scene("smooth", 600, 0).gaussians, 150, np.random.default_rng(0))


def test_hash_grid_by_hand():
    g = L.HashGrid(levels=2, features=1, log2_table=6, base=3, growth=2.0)
    assert g.res == [3, 6] and g.dense == [True, False] and g.sizes == [64, 64]
    c = torch.tensor([5, 2, 1])
    assert int(g.level_index(1, c)) == 64 + ((5 * 1) ^ (2 * 2654435761) ^ (1 * 805459861)) % 64
    assert int(g.level_index(0, torch.tensor([1, 2, 3]))) == 1 + 4 * (2 + 4 * 3)
    with torch.no_grad(): g.table.copy_(torch.arange(128, dtype=torch.float32)[:, None])
    x = torch.tensor([[0.1, 0.5, 0.9]])
    p = x[0] * 3; p0 = torch.floor(p); f = p - p0
    want = 0.0
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                w = (f[0] if dx else 1 - f[0]) * (f[1] if dy else 1 - f[1]) * (f[2] if dz else 1 - f[2])
                cc = p0.long() + torch.tensor([dx, dy, dz])
                want += float(w) * g.table[g.level_index(0, cc), 0].item()
    assert g(x)[0, 0].item() == pytest.approx(want, rel=1e-6)
    # a query touches (and sends gradient to) at most 8 rows per level
    g.table.grad = None
    g(x).sum().backward()
    assert int((g.table.grad != 0).sum()) <= 16 and float(g.table.grad.sum()) == pytest.approx(2.0)


def test_contraction_and_straight_through_estimators():
    x = torch.tensor([[0.0, 0, 0], [0.5, 0, 0], [2.0, 0, 0], [100.0, 0, 0]])
    c = L.contract_to_unisphere(x)
    assert torch.allclose(c[:, 0], torch.tensor([0.5, 0.625, 0.5 + 1.5 / 4, 0.5 + (2 - 0.01) / 4]))
    assert float(c.max()) <= 1.0 and float(c.min()) >= 0.0
    x = torch.tensor([0.1, 0.3333333], requires_grad=True)
    y = L.half_ste(x); (y * torch.tensor([2.0, 3.0])).sum().backward()
    assert torch.equal(y, x.detach().half().float()) and x.grad.tolist() == [2.0, 3.0]
    m = torch.tensor([-5.0, -4.0, 3.0], requires_grad=True)
    b = L.mask_ste(m); b.sum().backward()
    s = torch.sigmoid(m.detach())
    assert b.tolist() == [0.0, 1.0, 1.0] and torch.allclose(m.grad, s * (1 - s))


def test_expon_lr_is_3dgs_schedule():
    assert L.expon_lr(0, 1e-2, 1e-3, 100) == pytest.approx(1e-2)
    assert L.expon_lr(50, 1e-2, 1e-3, 100) == pytest.approx(math.sqrt(1e-5))
    assert L.expon_lr(0, 1e-2, 1e-3, 100, 10, 0.01) == pytest.approx(1e-4)
    assert L.expon_lr(10, 1e-2, 1e-3, 100, 10, 0.01) == pytest.approx(1e-2 * 10 ** (-0.1))


def test_field_is_queried_at_detached_positions_and_masks_act_on_opacity_and_scale(init):
    torch.manual_seed(0)
    m = L.LocoGS(init, 1, log2_table=8)
    a = m.attributes()
    (a["opacities"].sum() + a["scales"].sum() + a["colors"].sum()).backward()
    assert m.means.grad is None and m.grid.table.grad.abs().sum() > 0
    with torch.no_grad():
        m.mask[:10] = -8.0                           # σ < 0.01: masked
        m.sh_mask[:5] = -8.0                         # degree-1 band off for 5 Gaussians
    m.active_sh = 1
    a = m.attributes()
    assert torch.all(a["opacities"][:10] == 0) and torch.all(a["scales"][:10] == 0) and torch.all(a["opacities"][10:] > 0)
    assert torch.all(a["colors"][:5, 1:] == 0) and torch.any(a["colors"][5:, 1:] != 0)
    assert torch.equal(a["colors"][:, 0], m.dc.detach())
    assert int(m.keep_mask().sum()) == len(m) - 10
    m.active_sh = 0
    assert torch.all(m.attributes()["colors"][:, 1:] == 0)


def test_training_prunes_masked_gaussians_and_keeps_adam_state(init):
    torch.manual_seed(0)
    m = L.LocoGS(init, 1, log2_table=8)
    with torch.no_grad(): m.mask[:7] = -8.0
    cams, _ = scene_views(2, 1, 12)
    imgs = torch.rand(2, 12, 12, 3)
    log = L.train_locogs(m, cams, imgs, 3, (1, 1, 1), 0, tile=4)
    assert len(m) == 150 - 7 and log.n[-1] == 150 - 7 or len(m) == 150 - 7
    e = L.Explicit3DGS(init)
    opt = torch.optim.Adam([e.means, e.opacity], lr=0.1)
    (e.means.sum() + e.opacity.sum()).backward(); opt.step()
    st = opt.state[e.means]["exp_avg"].clone()
    keep = torch.arange(0, 150, 2)
    L.prune_parameters(e, ["means", "opacity"], opt, keep)
    assert len(e.means) == 75 and torch.equal(opt.state[e.means]["exp_avg"], st[keep])


def test_official_quantiser_and_bit_packing():
    x = np.random.default_rng(0).normal(size=1000)
    x[0] = 50.0                                       # an outlier: clipped to mean + d·std
    codes, scale, lo = L.quantize(x, 8)
    d = 3 + 3 * 7 / 15
    assert codes.dtype == np.uint8 and codes.max() == 255 and codes[0] == 255
    y = L.dequantize(codes, scale, lo)
    assert y.max() == pytest.approx(min(50.0, x.mean() + d * x.std()), rel=1e-5)
    inner = np.abs(x) < 2
    assert np.abs(y[inner] - x[inner]).max() <= 0.5 / scale + 1e-6
    c6, s6, l6 = L.quantize(x, 6, log=True)
    back = L.dequantize(c6, s6, l6, log=True)
    assert c6.max() <= 63 and np.abs(back[inner] - x[inner]).max() < 0.15
    assert np.array_equal(L.unpack_bits(L.pack_bits(c6, 6), 6, 1000), c6) and len(L.pack_bits(c6, 6)) == 750
    with pytest.raises(ValueError, match="'bits'"): L.quantize(x, 9)


def test_storage_bytes_are_the_bytes_of_the_arrays_written(init, tmp_path):
    torch.manual_seed(0)
    m = L.LocoGS(init, 1, levels=4, log2_table=8, width=16)
    with torch.no_grad(): m.mask[:3] = -8.0
    st = L.compress_locogs(m)
    path = tmp_path / "c.npz"
    path.write_bytes(st.to_npz())
    back = np.load(path)
    assert sum(back[k].nbytes for k in back.files) == st.nbytes
    assert st.breakdown() == L.locogs_bytes(147, 1, 4, 8, width=16)
    assert st.meta["n"] == 147 and st.arrays["positions.xyz"].dtype == np.float16
    assert st.arrays["grid.table.codes"].nbytes == math.ceil(m.grid.table.numel() * 6 / 8)
    assert all(a.dtype == np.float16 for k, a in st.arrays.items() if k.startswith("mlps."))
    # decoding from the written file alone reproduces C's attributes up to the quantisation
    st2 = L.Stored({k: back[k] for k in back.files}, st.meta)
    dec = L.decompress_locogs(st2, m)
    with torch.no_grad(): a = m.attributes()
    keep = m.keep_mask().numpy()
    order = L.morton_order(m.means.detach().numpy()[keep])
    assert torch.equal(dec["means"], torch.tensor(m.means.detach().numpy()[keep][order].astype(np.float16).astype(np.float32)))
    assert torch.allclose(dec["opacities"], a["opacities"][keep][order], atol=0.02)
    e = L.Explicit3DGS(init)
    for bits in (None, 8):
        s = L.compress_explicit(e, bits)
        assert s.nbytes == L.explicit_bytes(150, 1, bits) and len(s.to_npz()) > s.nbytes
    assert L.compress_explicit(e).nbytes == 150 * 23 * 4            # xyz 3 + DC 3 + SH rest 9 + opacity 1 + scale 3 + rotation 4
    n = L.budget_matched_n(L.explicit_bytes(100, 1, 8) + 10, 150, 1)
    assert n == 100 and L.budget_matched_n(10 ** 9, 150, 1) == 150


def test_ply_roundtrip_and_distillation(tmp_path):
    sc = make_static_scene("smooth", 300, 1)
    path = tmp_path / "tiny.ply"
    L.write_3dgs_ply(path, sc.gaussians)
    back = L.read_3dgs_ply(path)
    g = sc.gaussians
    assert np.allclose(back.means, g.means, atol=1e-6) and np.allclose(back.sh, g.sh, atol=1e-5)
    assert np.allclose(back.opacities, g.opacities, atol=1e-6) and np.allclose(back.scales, g.scales, rtol=1e-5)
    assert np.allclose(np.abs((back.quats * g.quats).sum(1)), 1, atol=1e-6)
    model, err = L.distil_ply(path, steps=150, log2_table=10, levels=6)
    o = np.log(g.opacities / (1 - g.opacities))
    assert err["opacity"] < 0.2 * o.var() and set(err) == {"opacity", "scale", "rotation", "sh_rest"}
    assert len(model) == 300 and np.allclose(model.means.detach().numpy(), g.means, atol=1e-6)


def test_fit_to_user_images_with_known_cameras():
    sc = make_static_scene("smooth", 300, 2)
    cams, _ = scene_views(3, 1, 12)
    ims = L.render_views(sc.gaussians, cams, sc.background)
    model, st = L.fit_locogs(list(ims), cams, points=sc.gaussians.means[::3], steps=4, tile=4)
    assert st.nbytes > 0 and len(model) <= 100
    with pytest.raises(ValueError, match="'images'"): L.fit_locogs([ims[0][:5]], cams[:1])
    with pytest.raises(ValueError, match="'images'"): L.fit_locogs(list(ims), cams[:2])


def test_smoke_run_claims_and_the_mechanism(smoke_result):
    r = smoke_result("locogs")
    m = r.metrics
    assert m["bytes_A"] == [1500 * 23 * 4] and m["n_A"] == [1500]
    assert m["ratio_A_C"][0] == pytest.approx(m["bytes_A"][0] / m["bytes_C"][0])
    assert 0.95 * m["bytes_C"][0] <= m["bytes_B"][0] <= m["bytes_C"][0]  # B at C's bytes, never more
    assert m["n_B_start"][0] > m["n_A"][0] and m["n_B"][0] > m["n_C"][0]   # B buys more Gaussians
    assert min(m["psnr_A"][0], m["psnr_B"][0], m["psnr_C"][0]) > 30      # every model trained (48 px views, 300 steps)
    assert m["locality_A_colour"][0] < 0.5 and m["locality_gt_opacity"][0] < 0.5
    assert {c.id: c.status for c in r.claims}["speed"] == "not reproducible offline"
    json.dumps(r.to_dict())


def test_same_seed_same_numbers():
    a, b, c = L.run("smoke", seed=3, **TINY), L.run("smoke", seed=3, **TINY), L.run("smoke", seed=4, **TINY)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    assert a.metrics["psnr_C"] != c.metrics["psnr_C"]


def test_parallel_parts_give_the_numbers_of_one_process():
    kw = dict(TINY, n_seeds=2, control=True)
    one, two = L.run("smoke", seed=1, workers=1, **kw), L.run("smoke", seed=1, workers=2, **kw)
    assert "seeds (parallel)" in two.timings and "seeds (parallel)" not in one.timings
    assert json.dumps(one.to_dict(False)["metrics"]) == json.dumps(two.to_dict(False)["metrics"])
    strip = lambda r: {k: v for k, v in r.artefacts.items() if k not in ("render_ms", "train_s")}   # wall-clock ones differ
    assert json.dumps(strip(one)) == json.dumps(strip(two)) and set(two.objects["models"]) == {"A", "B", "C"}


def test_scales_paper_is_the_issue_configuration_and_full_is_between_smoke_and_paper():
    smoke, full, paper = (L.SCALES[s] for s in ("smoke", "full", "paper"))
    assert {k: paper[k] for k in ("n_seeds", "image_size", "n_gaussians", "n_gt", "steps", "control")} == \
        dict(n_seeds=3, image_size=96, n_gaussians=4000, n_gt=8000, steps=3000, control=True)
    assert full["n_seeds"] == 3 and full["control"] and set(full) == set(paper)
    for k in ("image_size", "n_gaussians", "n_gt", "steps"):
        assert smoke[k] <= full[k] <= paper[k], k
    assert any(full[k] > smoke[k] for k in ("image_size", "n_gaussians", "steps"))
    # paper takes a GPU where there is one, and searches the learning-rate multipliers on every seed
    sized = ("image_size", "n_gaussians", "n_gt", "steps", "device", "lr_search", "lr_mult_A", "lr_mult_B", "lr_mult_C")
    assert paper["lr_search"] and not full["lr_search"] and not smoke["lr_search"]
    assert {k: v for k, v in full.items() if k not in sized} == {k: v for k, v in paper.items() if k not in sized}
    assert full["device"] == "cpu" and paper["device"] == "auto"


def test_claim_checks_fail_when_the_effect_vanishes():
    ok = {"ratio_A_C": [6.0], "bytes_A": [138000], "bytes_B": [22600], "bytes_C": [23000], "grid_bytes_C": [9000],
          "mlp_bytes_C": [5000], "zlib_A": [127000], "zlib_C": [18000], "psnr_A": [31.0], "psnr_B": [29.0], "psnr_C": [31.5],
          "n_B": [800], "n_C": [1500]}
    for c in L.CLAIMS:
        if c.check: assert c.check(ok)[0], c.id
    bad = dict(ok, ratio_A_C=[1.9], psnr_C=[28.5])
    for c in L.CLAIMS:
        if c.check: assert c.check(bad)[0] is False, c.id
    # C beats a B that is not at C's bytes (B kept every Gaussian and is still smaller): not "at matched bytes"
    small_b = dict(ok, bytes_B=[16000])
    assert {c.id: c.check(small_b)[0] for c in L.CLAIMS if c.check}["locality-pays"] is False


def test_bad_parameters_raise_value_error_naming_the_parameter(init):
    with pytest.raises(ValueError, match="'sh_degree'"): L.run("smoke", sh_degree=3)
    with pytest.raises(ValueError, match="'scene'"): L.run("smoke", scene="stripes")
    with pytest.raises(ValueError, match="'hash_table_log2'"): L.run("smoke", hash_table_log2=30)
    with pytest.raises(ValueError, match="'n_gaussians'"): L.init_from_scene(make_static_scene("smooth", 100, 0).gaussians, 500, np.random.default_rng(0))
    with pytest.raises(ValueError, match="'sh_degree'"): L.LocoGS(init, 3)
    with pytest.raises(ValueError, match="'mlp_width'"): L.LocoGS(init, 1, width=0)
    with pytest.raises(ValueError, match="'grid_levels'"): L.HashGrid(levels=0)


def test_b_starts_from_c_points_plus_more_and_can_meet_c_bytes():
    gt = make_static_scene("smooth", 600, 0).gaussians
    base = L.init_from_scene(gt, 150, np.random.default_rng(0))
    more = L.extend_init(base, gt, 400, np.random.default_rng(1))
    assert np.array_equal(more.means[:150], base.means) and np.array_equal(more.rgb[:150], base.rgb)
    assert len(more) == 400 and len(np.unique(more.idx)) == 400 and set(base.idx) <= set(more.idx)
    with pytest.raises(ValueError, match="'n'"): L.extend_init(base, gt, 100, np.random.default_rng(1))
    with pytest.raises(ValueError, match="'n'"): L.extend_init(base, gt, 601, np.random.default_rng(1))
    for scale in ("smoke", "full", "paper"):
        p = L.SCALES[scale]
        c_max = sum(L.locogs_bytes(p["n_gaussians"], p["sh_degree"], p["grid_levels"], p["hash_table_log2"], p["grid_base"],
                                   p["grid_growth"], p["mlp_width"]).values())
        n0 = L.b_start_count(p)
        assert p["n_gaussians"] <= n0 <= p["n_gt"], scale                  # never fewer than C's start, from the ground truth
        assert L.explicit_bytes(n0, p["sh_degree"], 8) >= 0.99 * c_max, scale   # so pruning can meet C's bytes
        # where C's fixed field cost dominates (smoke, full), B starts from more Gaussians than C
        assert (n0 > p["n_gaussians"]) == (L.explicit_bytes(p["n_gaussians"], p["sh_degree"], 8) < c_max), scale


def test_learning_rate_multiplier_scales_every_group(init):
    cams, _ = scene_views(2, 1, 12)
    imgs = torch.rand(2, 12, 12, 3)
    steps = {}
    for mult in (1.0, 3.0):
        torch.manual_seed(0)
        A = L.Explicit3DGS(init, 1)
        before = {k: v.detach().clone() for k, v in A.named_parameters()}
        L.train_explicit(A, cams, imgs, 1, (1, 1, 1), 0, tile=4, lr_mult=mult)
        steps[mult] = {k: (v.detach() - before[k]).abs().max().item() for k, v in A.named_parameters()}
    for k in steps[1.0]:                      # Adam's first step is lr · sign(g): three times the rate, three times the step
        if steps[1.0][k] > 0: assert steps[3.0][k] == pytest.approx(3 * steps[1.0][k], rel=1e-3), k


def test_validation_search_keeps_the_best_multiplier_and_never_uses_test_views():
    r = L.run("smoke", seed=0, lr_search=True, workers=1, **TINY)
    table = r.artefacts["lr_search"][0]
    for m in "ABC":
        assert set(table[m]) == {str(x) for x in L.LR_MULTS}
        best = max(table[m], key=table[m].get)
        assert r.metrics[f"lr_mult_{m}"][0] == float(best)
        assert r.metrics[f"val_psnr_{m}"][0] == pytest.approx(table[m][best], abs=1e-3)
    train, test = scene_views(3, 2, 16)
    val = L.validation_views(2, 16)
    centres = lambda cs: {tuple(np.round(c.center, 6)) for c in cs}
    assert not centres(val) & centres(test) and not centres(val) & centres(train)
