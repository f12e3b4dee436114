"""CLIBD: the generated world, the multi-positive loss against the official formulation, tiny encoders (also real
`transformers` BERTs over k-mers and taxonomy strings), nearest-key retrieval per level, and a short run."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import iclrbench.papers.clibd as cb
from iclrbench.blocks.contrastive import info_nce, retrieval_eval
from iclrbench.blocks.hf import KmerTokenizer, tiny_bert_model, word_level_tokenizer


@pytest.fixture(scope="module")
def world():
    return cb.make_world(0, n_train=10, n_query=4, n_key=2)


def test_taxonomy_ids_and_tokens_by_hand():
    tax = cb.Taxonomy((2, 2, 3, 4))
    assert tax.n_species == 48 and tax.sizes() == {"order": 2, "family": 4, "genus": 12, "species": 48}
    assert tax.table()[29].tolist() == [1, 2, 7, 29]            # species 29: genus 29//4=7, family 7//3=2, order 1
    assert tax.tokens()[29].tolist() == [1, 2 + 2, 7 + 6, 29 + 18] and tax.vocab_size == 66
    assert tax.name(29) == "O2 F2.1 G2.1.2 S2.1.2.2"
    with pytest.raises(ValueError, match="'shape'"):
        cb.Taxonomy((3, 3, 3, 1))


def test_mutation_rate_and_identity_follow_the_tree():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, 200_000)
    changed = (cb.mutate(x, 0.12, rng) != x).mean()
    assert changed == pytest.approx(0.12 * 3 / 4, abs=0.004)       # a re-drawn base keeps its value 1 time in 4
    tax = cb.Taxonomy((3, 3, 3, 4))
    bc = cb.generate_barcodes(tax, 2000, cb.MUTATION_RATES, np.random.default_rng(1))
    ident = cb.identity_matrix(bc["species"])
    t = tax.table()
    def mean_identity(level_same, level_diff):
        m = (t[:, None, level_same] == t[None, :, level_same]) & (t[:, None, level_diff] != t[None, :, level_diff])
        return ident[m].mean()
    sib_species, sib_genera, sib_orders = mean_identity(2, 3), mean_identity(1, 2), ident[t[:, None, 0] != t[None, :, 0]].mean()
    # two sibling species re-draw each base independently (r = 0.03): same base w.p. (1-r)^2 + (1-(1-r)^2)/4 ≈ 0.956
    r = 0.03
    assert sib_species == pytest.approx((1 - r) ** 2 + (1 - (1 - r) ** 2) / 4, abs=0.005)
    assert sib_species > sib_genera > sib_orders


def test_world_split_has_no_leak_and_keys_cover_every_species(world):
    assert not set(world.train["species"]) & set(world.unseen) and len(world.unseen) == 27
    assert set(world.query["species"]) == set(range(108)) == set(world.keys["species"])
    assert world.train["image"].shape == (81 * 10, 256) and world.train["dna"].shape == (810, 150)
    # images are the species prototype plus noise σ = 0.5
    resid = world.query["image"] - world.prototypes[world.query["species"]]
    assert resid.std() == pytest.approx(0.5, rel=0.05)
    same = cb.make_world(0, n_train=10, n_query=4, n_key=2)
    assert np.array_equal(same.train["image"], world.train["image"]) and np.array_equal(same.train["dna"], world.train["dna"])


def test_kmer_ids_match_the_kmer_tokenizer(world):
    codes = world.barcodes[:5]
    for k in (4, 5):
        ref = KmerTokenizer(k)(cb.barcode_strings(codes), add_special_tokens=False)["input_ids"].numpy()
        assert np.array_equal(cb.kmer_ids(codes, k), ref)


def _official_loss(features, labels, scale):
    "The official per-pair loop: torch CrossEntropyLoss with the unnormalised 0/1 label matrix as targets."
    y = torch.as_tensor(labels)
    P = (y[:, None] == y[None]).float()
    terms = []
    for a, b in itertools.permutations(list(features), 2):
        logits = scale * F.normalize(features[a], dim=1) @ F.normalize(features[b], dim=1).T
        terms.append(nn.CrossEntropyLoss()(logits, P))
    return sum(terms) / len(terms)


@pytest.mark.parametrize("mods", [("image", "dna"), ("image", "dna", "text")])
def test_clibd_loss_equals_the_official_loop_and_counts_2_or_6_pairs(mods):
    torch.manual_seed(0)
    feats = {m: torch.randn(10, 5, dtype=torch.float64) for m in mods}
    y = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3, 4, 5])
    ours = cb.clibd_loss(feats, y, 7.0)
    assert float(ours) == pytest.approx(float(_official_loss(feats, y, 7.0)), rel=1e-10)
    # by hand for one ordered pair: mean over rows of −Σ_{positives} log softmax
    if len(mods) == 2:
        a, b = (F.normalize(feats[m], dim=1) for m in mods)
        ls_ab, ls_ba = (7.0 * a @ b.T).log_softmax(1), (7.0 * b @ a.T).log_softmax(1)
        P = (y[:, None] == y[None]).double()
        want = 0.5 * (-(P * ls_ab).sum(1).mean() - (P * ls_ba).sum(1).mean())
        assert float(ours) == pytest.approx(float(want), rel=1e-10)
    # distinct labels reduce to the ordinary (diagonal) CLIP loss; negative labels are singletons
    distinct = cb.clibd_loss(feats, torch.arange(10), 7.0)
    unlabelled = cb.clibd_loss(feats, -torch.ones(10, dtype=torch.long), 7.0)
    diag = sum(info_nce(feats[a], feats[b], 7.0, reduction="mean") for a, b in itertools.combinations(mods, 2)) / len(list(itertools.combinations(mods, 2)))
    assert float(distinct) == pytest.approx(float(diag), rel=1e-10) and float(unlabelled) == pytest.approx(float(diag), rel=1e-10)
    assert float(cb.clibd_loss_reference(feats, y, 7.0)) == pytest.approx(float(ours), rel=1e-10)


def test_clibd_loss_gradient_matches_finite_differences():
    torch.manual_seed(1)
    a = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    t = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 0, 1, 2, 2, -1])
    assert torch.autograd.gradcheck(lambda a, b, t: cb.clibd_loss({"image": a, "dna": b, "text": t}, y, 5.0), (a, b, t))
    with pytest.raises(ValueError, match="'features'"):
        cb.clibd_loss({"image": a}, y, 5.0)


def test_tiny_clibd_encoders_two_steps_lower_the_loss_and_retrieve_per_level(world):
    model = cb.build_model(world, ("image", "dna", "text"), dim=16, hidden=32, seed=0)
    idx = np.arange(0, 810, 5)
    rec = {k: v[idx] for k, v in world.train.items()}
    data = {m: cb.model_inputs(world, rec, m) for m in ("image", "dna", "text")}
    y = torch.as_tensor(rec["species"])
    with torch.no_grad():
        before = float(cb.clibd_loss(model(data), y, model.logit_scale()))
    losses = cb.train_clibd(model, data, y, steps=2, batch_size=len(y), lr=1e-2, seed=0)
    with torch.no_grad():
        feats = model(data)
        after = float(cb.clibd_loss(feats, y, model.logit_scale()))
    assert losses[0] == pytest.approx(before, rel=1e-5) and after < before
    assert all(torch.allclose(f.norm(dim=1), torch.ones(len(y)), atol=1e-5) for f in feats.values())
    ev = cb.evaluate_routes(cb.model_encoder(model, world), world, cb.ROUTES, gallery=np.arange(3))
    for route in cb.ROUTES:
        for split in ("seen", "unseen"):
            macro = ev["acc"][route][split]["macro"]
            assert set(macro) == set(cb.LEVELS) and all(0 <= v <= 1 for v in macro.values())
            # coarser levels are never harder than finer ones at top-1 (a right species is a right genus)
            micro = ev["acc"][route][split]["micro"]
            assert micro["order"] >= micro["family"] >= micro["genus"] >= micro["species"]
    assert ev["top"]["image->dna"].shape == (3, 5)


def test_cnn_dna_encoder_runs_and_is_seeded(world):
    p = dict(cb.SCALES["smoke"], steps=3, batch_size=64, dna_encoder="cnn")
    m1, l1 = cb.fit_clibd(world, ("image", "dna"), p, seed=3)
    m2, l2 = cb.fit_clibd(world, ("image", "dna"), p, seed=3)
    assert l1 == l2 and isinstance(m1.encoders["dna"], cb.KmerCNNEncoder)


def test_real_model_path_tiny_berts_over_kmers_and_taxonomy_strings(world):
    """CLIBDModel with HF BertModels (k-mer DNA tokens; WordLevel taxonomy strings) and a conv image encoder on
    crops of scikit-learn's sample images: two steps lower the loss, features normalised, retrieval per level."""
    from sklearn.datasets import load_sample_images
    imgs = load_sample_images().images
    rng = np.random.default_rng(0)
    n = 8
    crops = np.stack([imgs[i % 2][r:r + 32, c:c + 32] for i, (r, c) in enumerate(rng.integers(0, 300, (n, 2)))])
    pix = torch.tensor(crops, dtype=torch.float32).permute(0, 3, 1, 2) / 255.0
    species = world.train["species"][:: 101][:n]
    kt = KmerTokenizer(5)
    dna = kt(cb.barcode_strings(world.barcodes[species]))
    names = [world.tax.name(s) for s in species]
    wt = word_level_tokenizer(sorted({w for s in names for w in s.split()}))
    text = dict(wt(names, return_tensors="pt", padding=True))
    text.pop("token_type_ids", None)
    image_encoder = nn.Sequential(nn.Conv2d(3, 8, 5, stride=2), nn.GELU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
    model = cb.CLIBDModel(image_encoder, tiny_bert_model(0, vocab_size=kt.vocab_size, max_position_embeddings=64),
                          tiny_bert_model(1, vocab_size=len(wt)), dim=16, pool="mean")
    data = {"image": pix, "dna": dict(dna), "text": text}
    with torch.no_grad():
        model(data)                                   # builds the projection heads
    y = torch.as_tensor(species)
    losses = cb.train_clibd(model, data, y, steps=3, batch_size=n, lr=3e-3, seed=0)
    assert losses[-1] < losses[0]
    with torch.no_grad():
        feats = model(data)
    assert all(f.shape == (n, 16) and torch.allclose(f.norm(dim=1), torch.ones(n), atol=1e-5) for f in feats.values())
    r = retrieval_eval(feats["image"], feats["dna"], world.tax.table()[species], cb.LEVELS, query_labels=world.tax.table()[species])
    assert set(r["macro"]) == set(cb.LEVELS)


def test_short_run_aligns_unseen_images_with_their_barcodes():
    """Method vs chance and vs the baseline on held-out (unseen) species, at a reduced budget (300 steps)."""
    r = cb.run("smoke", n_seeds=1, steps=300, progress=False)
    m = r.metrics
    assert m["acc_idt_i2d_unseen_species"][0] > 10 / 108 and m["acc_idt_i2d_unseen_genus"][0] > 0.6
    assert m["acc_idt_d2d_unseen_species"][0] > m["acc_idt_i2d_unseen_species"][0]
    assert {c.id for c in r.claims} == {c.id for c in cb.CLAIMS}
    rj = json.loads(json.dumps(r.to_dict()))
    assert len(json.dumps(rj)) < 1_000_000
    assert rj["artefacts"]["top5"][0]["idt"]["image->dna"][0].__len__() == 5


def test_bad_parameters_raise_value_error_naming_the_parameter(world):
    with pytest.raises(ValueError, match="'image_noise'"):
        cb.run("smoke", image_noise=-1.0)
    with pytest.raises(ValueError, match="'dna_encoder'"):
        cb.run("smoke", dna_encoder="transformer")
    with pytest.raises(ValueError, match="'unseen_frac'"):
        cb.make_world(0, unseen_frac=1.5)
    with pytest.raises(ValueError, match="'rate'"):
        cb.mutate(np.zeros(3, int), 1.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="'modalities'"):
        cb.build_model(world, ("image", "smell"))
    with pytest.raises(ValueError, match="'steps'"):
        cb.train_clibd(cb.build_model(world, ("image", "dna")), {}, [], steps=-1)
    with pytest.raises(ValueError, match="'route'"):
        cb.route_features(cb.raw_encoder(world), world, "text->image")
