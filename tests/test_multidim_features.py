"""Library tests for multi-dimensional features (Engels et al., ICLR 2025): indices, SAE, clustering, corpus,
probe/intervention plumbing, and the Hugging Face path on a tiny random GPT-2 (no download)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

torch.set_num_threads(1)     # small networks: one thread is much faster on the shared 2-core machines

import iclrbench.papers.multidim_features as md


# ---- indices -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clouds():
    return {k: md.synthetic_feature(k, 4096, 0) for k in md.SYNTHETIC}     # the card's size


@pytest.fixture(scope="module")
def mixture(clouds):
    M = md.mixture_index_batch(np.stack([clouds[k] for k in md.SYNTHETIC]), steps=1000)[0]
    return dict(zip(md.SYNTHETIC, M))


def test_circle_is_irreducible(clouds, mixture):
    assert md.separability_index(clouds["circle"]) > 1.0
    assert mixture["circle"] < 0.3


def test_product_of_independent_features_is_separable(clouds, mixture):
    assert md.separability_index(clouds["independent_product"]) < 0.1
    assert md.separability_index(clouds["gaussian"]) < 0.1
    # the minimum over angles matters: at the wrong angle the product looks dependent
    S, ang, mis = md.separability_index(clouds["independent_product"], return_curve=True)
    assert mis.max() > 3 * S


def test_mixture_of_non_cooccurring_features_is_mixture_reducible(clouds, mixture):
    assert mixture["two_features_mixture"] > 0.3 and mixture["mixture"] > 0.3
    assert mixture["two_features_mixture"] > mixture["circle"] + 0.1


def test_circle_scores_highest(clouds, mixture):
    sc = {k: md.irreducibility_score(mixture[k], md.separability_index(clouds[k])) for k in md.SYNTHETIC}
    assert all(sc["circle"] > 3 * v for k, v in sc.items() if k != "circle")


def test_mixture_index_matches_definition_on_a_known_slab():
    # 70% of points exactly on a line, 30% spread: the best slab holds >= 70% of the mass
    rng = np.random.default_rng(0)
    pts = np.concatenate([np.stack([rng.normal(size=700), np.full(700, 0.5)], 1), rng.normal(size=(300, 2)) * 3])
    M, v, c = md.mixture_index(pts, steps=400, return_slab=True)
    z = pts @ v + c
    hard = np.mean(np.abs(z / np.sqrt(np.mean(z ** 2))) < 0.1)
    assert M >= 0.7 and abs(hard - M) < 1e-6


def test_mutual_information_of_independent_and_dependent_histograms():
    assert md.mutual_information_bits(np.outer([1, 2, 3], [4, 5])) == pytest.approx(0, abs=1e-8)
    assert md.mutual_information_bits(np.eye(4)) == pytest.approx(2.0, abs=1e-6)


def test_index_arguments_are_validated():
    with pytest.raises(ValueError, match="'points'"):
        md.separability_index(np.zeros((10, 3)))
    with pytest.raises(ValueError, match="'eps'"):
        md.mixture_index(np.zeros((10, 2)), eps=-1)
    with pytest.raises(ValueError, match="'kind'"):
        md.synthetic_feature("torus")


# ---- SAE -------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sparse_data():
    rng = np.random.default_rng(0)
    D = rng.standard_normal((24, 16)); D /= np.linalg.norm(D, axis=1, keepdims=True)
    codes = rng.exponential(1.0, (4000, 24)) * (rng.random((4000, 24)) < 0.1)
    return (codes @ D).astype(np.float32)


def test_sae_reconstruction_improves_and_decoder_norms_are_kept(sparse_data):
    sae, log = md.train_sae(sparse_data, 48, l1=0.05, steps=400, batch_size=256)
    assert np.mean(log.mse[-40:]) < 0.3 * np.mean(log.mse[:10])
    st = md.sae_stats(sae, sparse_data)
    assert st["fvu"] < 0.2
    assert st["decoder_norm_dev"] < 1e-5                     # unit-norm decoder rows after every step


def test_sae_sparsity_penalty_controls_l0(sparse_data):
    weak = md.sae_stats(md.train_sae(sparse_data, 48, l1=0.0, steps=300, batch_size=256)[0], sparse_data)
    strong = md.sae_stats(md.train_sae(sparse_data, 48, l1=0.5, steps=300, batch_size=256)[0], sparse_data)
    assert strong["l0"] < 0.5 * weak["l0"]
    # the L1 term is Σ f_i ‖d_i‖: with unit rows it equals Σ f_i
    sae = md.SparseAutoencoder(16, 8)
    x = torch.as_tensor(sparse_data[:32])
    loss, mse, sp, f = md.sae_loss(sae, x, 2.0)
    assert torch.allclose(sp, f.sum(-1).mean(), atol=1e-5) and torch.allclose(loss, mse + 2.0 * sp)


def test_dead_latents_are_resampled(sparse_data):
    sae = md.SparseAutoencoder(16, 48, seed=1)
    with torch.no_grad(): sae.b_enc[:20] = -1e3                # 20 latents that can never fire
    assert md.sae_stats(sae, sparse_data)["alive"] <= 28
    sae, log = md.train_sae(sparse_data, l1=0.05, steps=300, batch_size=256, resample_every=100, sae=sae)
    assert log.resampled and log.resampled[0][1] >= 20
    assert md.sae_stats(sae, sparse_data)["alive"] > 28        # the resampled latents fire again
    assert md.sae_stats(sae, sparse_data)["decoder_norm_dev"] < 1e-5


def test_sae_is_deterministic(sparse_data):
    a = md.train_sae(sparse_data, 16, steps=20, batch_size=64, seed=3)[0]
    b = md.train_sae(sparse_data, 16, steps=20, batch_size=64, seed=3)[0]
    assert torch.equal(a.W_dec, b.W_dec)


# ---- clustering, reconstructions -----------------------------------------------------------------------------------
def test_clustering_recovers_groups_of_directions():
    rng = np.random.default_rng(1)
    centres = np.eye(8)[:3]
    W = np.concatenate([c + 0.1 * rng.standard_normal((5, 8)) for c in centres]) * rng.uniform(0.5, 3, (15, 1))  # scale must not matter
    truth = sorted([list(range(0, 5)), list(range(5, 10)), list(range(10, 15))])
    assert sorted(map(sorted, map(list, md.cluster_decoder(W, "spectral", 3)))) == truth
    assert sorted(map(sorted, map(list, md.cluster_decoder(W, "graph")))) == truth


def test_cluster_reconstruction_restricts_to_cluster_latents():
    F = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.5, 0.0]])
    W = np.eye(3)
    rows, R = md.cluster_reconstructions(F, W, [0, 1])
    assert list(rows) == [0, 2] and np.allclose(R, [[1, 0, 0], [0, 0.5, 0]])


def test_score_clusters_finds_a_planted_circle():
    rng = np.random.default_rng(2)
    n, d = 3000, 8
    th = rng.uniform(0, 2 * np.pi, n)
    # 6 latents tile a circle in dims 0-1 (each fires on its arc), 4 latents are independent 1-D features in dims 2-5
    ang = np.arange(6) * np.pi / 3
    W = np.zeros((10, d)); W[:6, 0], W[:6, 1] = np.cos(ang), np.sin(ang); W[6:, 2:6] = np.eye(4)
    F = np.zeros((n, 10))
    F[:, :6] = np.maximum(np.cos(th[:, None] - ang[None]), 0) * (rng.random((n, 1)) < 0.5)
    F[:, 6:] = rng.exponential(1, (n, 4)) * (rng.random((n, 4)) < 0.3)
    ranked = md.score_clusters(F, W, [np.arange(6), np.arange(6, 10)], np.zeros(n, int), mixture_steps=300)
    assert ranked[0].latents == list(range(6)) and ranked[0].score > 2 * ranked[1].score


# ---- corpus, probe, model path -------------------------------------------------------------------------------------
def test_corpus_and_split():
    sp = md.split_problems(0)
    assert len(sp["days"]["train"]) + len(sp["days"]["heldout"]) == 49
    assert len(sp["months"]["train"]) + len(sp["months"]["heldout"]) == 144
    assert not set(sp["days"]["train"]) & set(sp["days"]["heldout"])
    rng = np.random.default_rng(0)
    for a, k in sp["days"]["train"][:10]:
        s = md.arithmetic_sentence("days", a, k, rng)
        assert md.VOCAB[s[-2]] == md.DAYS[(a + k) % 7] and md.VOCAB[s[-4]] == md.DAYS[a]
    b = md.calendar_batch(200, rng, sp)
    assert b.shape == (200, md.SEQ_LEN) and (b[:, 0] == md.BOS).all()


def test_cyclic_order_allows_aliasing_and_rejects_shuffles():
    for k in (1, 2, 3):
        P = np.stack([np.cos(2 * np.pi * k * np.arange(7) / 7), np.sin(2 * np.pi * k * np.arange(7) / 7)], 1)
        assert md.is_cyclic_order(P * [1, -1]) == k
    rng = np.random.default_rng(0)
    hits = sum(md.is_cyclic_order(rng.standard_normal((7, 2))) > 0 for _ in range(300))
    assert hits < 20                                                 # chance ~ 2.4 %


def test_circle_probe_recovers_a_planted_circle_and_intervention_lands_on_it():
    rng = np.random.default_rng(3)
    lab = rng.integers(0, 7, 400)
    basis = np.linalg.qr(rng.standard_normal((16, 2)))[0]
    H = 3 * np.stack([np.cos(2 * np.pi * lab / 7), np.sin(2 * np.pi * lab / 7)], 1) @ basis.T + 0.05 * rng.standard_normal((400, 16))
    pr = md.fit_circle_probe(H, lab, 7, layer=1)
    assert pr.r2 > 0.99
    h = md.intervene(pr, 7, 2 * np.pi * np.arange(7) / 7)
    C = pr.coordinates(h)
    for t in range(7):
        assert np.linalg.norm(C[t] - pr.coordinates(H[lab == t]).mean(0)) < 0.1 * np.linalg.norm(C[t])


def test_tiny_lm_pipeline_end_to_end():
    model, log, probs = md.train_calendar_lm(0, 30, d_model=32)
    assert log.losses[-1] < log.losses[0]
    ids = md.calendar_batch(100, np.random.default_rng(0), probs)
    acts, toks, where = md.collect_activations(model, ids, 1)
    assert acts.shape == ((ids != md.PAD).sum(), 32) and (toks != md.PAD).all()
    iv = md.intervention_experiment(model, 1, "days", 0)
    assert set(iv["success"]) == set(md.INTERVENTIONS) and iv["success"]["full_patch"] >= 0
    p = md.next_token_distribution(model, iv["probe"], 1.0)
    assert p.shape == (7,) and 0 < p.sum() <= 1 + 1e-6
    with pytest.raises(ValueError, match="'layer'"):
        md.collect_activations(model, ids, 5)


def _tiny_gpt2():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    words = ["<pad>", "<unk>"] + [w.capitalize() for w in md.DAYS] + ["Let's", "do", "some", "days", "of", "the", "week",
                                                                      "math.", "from", "is"] + list(md.NUMBER_WORDS)
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=len(words), n_positions=16))
    return model.eval(), tok


def test_hf_hidden_states_match_a_forward_hook_and_pipeline_runs():
    model, tok = _tiny_gpt2()
    texts = [p for p, _, _ in md.days_prompts()]
    seen = {}
    h = model.transformer.h[1].register_forward_pre_hook(lambda m, args: seen.setdefault("x", args[0].detach().clone()))
    enc = tok(texts[:1], return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    h.remove()
    assert torch.allclose(out.hidden_states[1], seen["x"])           # hidden_states[l] = resid_pre of block l
    acts, toks, where = md.collect_hf_activations(model, tok, texts, 1)
    assert acts.shape[1] == 32 and len(acts) == len(toks) == len(where)
    assert (toks != tok.unk_token_id).any()
    an = md.hf_pipeline(model, tok, texts, 1, n_latents=32, sae_steps=50, n_clusters=4)
    summ = md.summarise_pipeline(an, an["vocab"])
    assert summ["n_latents"] == 32 and summ["decoder_norm_dev"] < 1e-5
    with pytest.raises(ValueError, match="'layer'"):
        md.collect_hf_activations(model, tok, texts, 7)


def test_static_view_slides_over_clusters_from_the_json_artefacts():
    import json
    from types import SimpleNamespace
    from static_view_checks import assert_static_view
    from iclrbench.explorers import multidim_features as mdx
    from iclrbench.views.static import static_view
    # the artefacts run() stores (summaries of a trained and a control model's pipelines), built cheaply, JSON round trip
    art = {"models": {}, "synthetic": {"values": {k: {"M": 0.2, "S": 0.5, "score": 0.4} for k in md.SYNTHETIC}}}
    for tag, ctrl in (("trained (seed 0)", False), ("control (seed 0)", True)):
        model, _, _ = md.train_calendar_lm(0, 50, ctrl, d_model=32)
        an = md._analysis(model, dict(n_sequences=200, sae_steps=50, n_clusters=6, n_pairs=1, mixture_steps=50), 0, 1, 64, 1.0,
                          random_calendar=ctrl)
        art["models"][tag] = {"layer 1, 64 latents, l1 1": md.summarise_pipeline(an)}
    r = SimpleNamespace(artefacts=json.loads(json.dumps(art)), seed=0, params=dict(lm_steps=50, d_model=32, weight_decay=1.0),
                        metrics={}, objects={})
    ex = mdx.explore(r)
    assert not ex.errors, ex.errors
    cls = r.artefacts["models"]["trained (seed 0)"]["layer 1, 64 latents, l1 1"]["clusters"]
    assert ex.STATIC_GRID["cluster"] == list(range(1, min(len(cls), 12) + 1)) and len(cls) >= 2
    fig = static_view(ex)
    (slider,) = assert_static_view(fig)
    assert len(slider.steps) == 2 * len(ex.STATIC_GRID["cluster"])
    # each step shows one (cluster, projection): its title names the cluster's rank and its (M, S)
    titles = [s.args[1]["title.text"].replace("<br>", " ") for s in slider.steps]   # long titles are wrapped with <br>
    for k, c in enumerate(cls[:12]):
        assert f"cluster #{k + 1} — M={c['M'][0]:.2f}" in titles[2 * k] and "PCA 0-1" in titles[2 * k] and "PCA 1-2" in titles[2 * k + 1]
    assert len(fig.to_json()) < 2_000_000
    # no live model in a JSON result: the θ rotation asks for the retrain button, which rebuilds the model
    assert "retrain" in ex.figures["next_token"].layout.title.text and not ex.controls["retrain"].disabled
    ex.controls["retrain"].click()
    assert not ex.errors and ex.controls["retrain"].disabled and len(ex.figures["next_token"].data) == 1
    ex.controls["rotation"].value = 90.0
    assert not ex.errors and "θ=90°" in ex.figures["next_token"].layout.title.text
