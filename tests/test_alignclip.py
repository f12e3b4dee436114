"""Library tests for AlignCLIP (Eslami & de Melo, ICLR 2025): IMSep by hand and by loop, gradients, the loss conventions,
the shared towers, a tiny random HF CLIPModel and SharedTowerCLIP on sample-image crops, a small run, bad parameters."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import iclrbench.papers.alignclip as ac


def _imsep_loop(I, T, tau, s):
    "IMSep written entry by entry from the paper's definition (Sec. 3.2; official ClipInModalityLoss)."
    I, T, s = F.normalize(I, dim=1), F.normalize(T, dim=1), F.normalize(s, dim=1)
    n = len(I)
    tot = 0.0
    for X in (T, I):
        for i in range(n):
            logits = []
            for j in range(n):
                l = (X[i] @ X[j]) * (1 - s[i] @ s[j]) + ((I[i] @ T[i]) if i == j else 0.0)
                logits.append(tau * l)
            logits = torch.stack(logits)
            tot = tot - torch.log_softmax(logits, 0)[i] / n
    return tot


def test_imsep_by_hand_and_against_loop():
    e = torch.eye(2)
    assert ac.imsep_loss(e, e, 1.0, e).item() == pytest.approx(2 * -math.log(math.e / (math.e + 1)), abs=1e-6)
    # D_ii = 0: the positive is the paired image-text similarity (here cosine 0 for a crossed pairing), not 1
    assert ac.imsep_loss(e, e.flip(0), 1.0, e).item() == pytest.approx(2 * math.log(2), abs=1e-6)
    g = torch.Generator().manual_seed(0)
    I, T, s = (torch.randn(5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    assert ac.imsep_loss(I, T, 7.0, s).item() == pytest.approx(_imsep_loop(I, T, 7.0, s).item(), rel=1e-10)
    # one-sided variants add up to the two-sided one
    both = ac.imsep_loss(I, T, 7.0, s).item()
    one = ac.imsep_loss(I, T, 7.0, s, separate_image=False).item() + ac.imsep_loss(I, T, 7.0, s, separate_text=False).item()
    assert both == pytest.approx(one, rel=1e-12)


def test_alignclip_loss_conventions_and_gradients():
    g = torch.Generator().manual_seed(1)
    I = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    T = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    s = torch.randn(6, 5, generator=g, dtype=torch.float64)
    # β = 0: the CLIP loss with the directions summed = twice the baselines' averaged ClipLoss
    assert ac.alignclip_loss(I, T, 10.0, beta=0.0).item() == pytest.approx(2 * ac.clip_baseline_loss(I, T, 10.0).item(), rel=1e-12)
    full = ac.alignclip_loss(I, T, 10.0, s, alpha=1.0, beta=0.5).item()
    assert full == pytest.approx(ac.alignclip_loss(I, T, 10.0, beta=0.0).item() + 0.5 * ac.imsep_loss(I, T, 10.0, s).item(), rel=1e-12)
    assert torch.autograd.gradcheck(lambda a, b: ac.alignclip_loss(a, b, 5.0, s, beta=0.7), (I, T))
    # the semantic embeddings are frozen: no gradient reaches them
    s2 = s.clone().requires_grad_(True)
    ac.alignclip_loss(I, T, 5.0, s2).backward()
    assert s2.grad is None


def test_bad_parameters_raise_naming_the_parameter():
    e = torch.eye(3)
    with pytest.raises(ValueError, match="'semantic'"):
        ac.alignclip_loss(e, e, 5.0, None, beta=0.5)
    with pytest.raises(ValueError, match="'beta'"):
        ac.alignclip_loss(e, e, 5.0, e, beta=-1.0)
    with pytest.raises(ValueError, match="'I' and 'T'"):
        ac.imsep_loss(e, torch.eye(2), 5.0, e)
    with pytest.raises(ValueError, match="'model'"):
        ac.model_spec("ViT")
    with pytest.raises(ValueError, match="'noise'"):
        ac.make_world(0, noise=-0.1)
    with pytest.raises(ValueError, match="'steps'"):
        ac.run("smoke", steps=-1, progress=False)
    with pytest.raises(ValueError, match="'models'"):
        ac.run("smoke", models="five", progress=False)
    with pytest.raises(ValueError, match="'extra_dims'"):
        ac.run("smoke", extra_dims="a,b", progress=False)


def test_shared_model_shares_everything_after_the_input_layers():
    w = ac.make_world(0)
    torch.manual_seed(0)
    sh, cl = ac.build_model("AlignCLIP", w), ac.build_model("CLIP", w)
    shared = {id(p) for p in sh.image.parameters()} & {id(p) for p in sh.text.parameters()}
    assert len(shared) == len(list(sh.image.parameters())) - 2          # all but the image input layer
    assert not ({id(p) for p in cl.image.parameters()} & {id(p) for p in cl.text.parameters()})
    # gradients from both modalities reach the shared projection
    d = ac.sample_pairs(w, 8, torch.Generator().manual_seed(0))
    for part in ("image", "text"):
        sh.zero_grad()
        getattr(sh, part)(d["x_img" if part == "image" else "x_txt"]).sum().backward()
        assert sh.image.head.weight.grad is not None and sh.image.head.weight.grad.abs().sum() > 0


def _sample_crops(n=4, size=32):
    from sklearn.datasets import load_sample_images
    imgs = load_sample_images().images
    out = []
    for k in range(n):
        im = imgs[k % len(imgs)]
        y0, x0 = 60 * k, 80 * k
        out.append(im[y0:y0 + 4 * size:4, x0:x0 + 4 * size:4])
    return torch.tensor(np.stack(out), dtype=torch.float32).permute(0, 3, 1, 2) / 255.0


CAPTIONS = ["a china temple roof", "a red flower in bloom", "a temple in the sun", "a flower close up"]


def _tokenize(max_len=8):
    from iclrbench.blocks.hf import word_level_tokenizer
    words = sorted({w for c in CAPTIONS for w in c.split()})
    tok = word_level_tokenizer(words + ["[EOT]"])                # [EOT] last: the largest id (CLIP's argmax convention)
    eot = tok.convert_tokens_to_ids("[EOT]")
    ids = [tok(c)["input_ids"] + [eot] for c in CAPTIONS]
    L = max(map(len, ids))
    ids = torch.tensor([x + [tok.pad_token_id] * (L - len(x)) for x in ids])
    return tok, ids, (ids != tok.pad_token_id).long()


def _bag_of_words(captions):
    "A stand-in frozen sentence encoder: word counts (a callable list[str] -> array)."
    vocab = sorted({w for c in CAPTIONS for w in c.split()})
    return np.array([[c.split().count(w) for w in vocab] for c in captions], dtype=float)


def test_tiny_hf_clip_model_on_sample_images():
    from iclrbench.blocks.hf import tiny_clip_model
    tok, ids, mask = _tokenize()
    model = tiny_clip_model(vocab_size=len(tok), patch_size=8, image_size=32)
    pix = _sample_crops()
    sem = ac.caption_semantics(CAPTIONS, _bag_of_words)
    loss = ac.hf_clip_loss(model, ids, mask, pix, sem)
    assert torch.isfinite(loss)
    loss.backward()
    assert model.vision_model.embeddings.patch_embedding.weight.grad.abs().sum() > 0
    assert model.text_model.embeddings.token_embedding.weight.grad.abs().sum() > 0
    # β = 0 is the CLIP loss in the sum convention: twice HF's own (averaged) CLIP loss
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, pixel_values=pix, return_loss=True)
        l0 = ac.hf_clip_loss(model, ids, mask, pix, None, beta=0.0)
    assert l0.item() == pytest.approx(2 * out.loss.item(), rel=1e-5)
    rep = ac.gap_report(out.image_embeds, out.text_embeds)
    assert 0 <= rep["gap"] <= 2 and -1 <= rep["paired_cos"] <= 1


def test_shared_tower_clip_gradients_from_both_modalities():
    tok, ids, _ = _tokenize()
    torch.manual_seed(0)
    m = ac.SharedTowerCLIP(ac.SharedTowerConfig(vocab_size=len(tok), context_length=ids.shape[1] + 2))
    pix = _sample_crops()
    sem = ac.caption_semantics(CAPTIONS, _bag_of_words)
    I, T, tau = m(pix, ids)
    assert torch.allclose(I.norm(dim=1), torch.ones(4), atol=1e-5) and torch.allclose(T.norm(dim=1), torch.ones(4), atol=1e-5)
    loss = ac.alignclip_loss(I, T, tau, sem)
    assert torch.isfinite(loss)
    assert ac.alignclip_loss(I, T, tau, beta=0.0).item() == pytest.approx(2 * ac.clip_baseline_loss(I, T, tau).item(), rel=1e-5)
    shared = m.transformer.layers[0].linear1.weight
    for enc, arg in ((m.encode_image, pix), (m.encode_text, ids)):     # each modality alone reaches the shared weights
        m.zero_grad()
        enc(arg).sum().backward()
        assert shared.grad is not None and shared.grad.abs().sum() > 0 and m.proj.weight.grad.abs().sum() > 0
    # the text feature sits at the end-of-text token: padding appended after it changes nothing (causal mask)
    padded = torch.cat([ids, torch.zeros(4, 2, dtype=ids.dtype)], 1)
    with torch.no_grad():
        assert torch.allclose(m.encode_text(ids), m.encode_text(padded), atol=1e-5)


def test_small_run_method_beats_baseline_and_is_deterministic():
    w = ac.make_world(3)
    test = ac.sample_pairs(w, 1000, torch.Generator().manual_seed(5))
    kw = dict(steps=200, batch=128, seed=3)
    with_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        clip = ac.train_clip("CLIP", w, **kw)
        align = ac.train_clip("AlignCLIP", w, **kw)
        again = ac.train_clip("AlignCLIP", w, **kw)
    finally:
        torch.set_num_threads(with_threads)
    assert align.losses == again.losses                                # same seed, same numbers
    mc, ma = (ac.evaluate(r.model, test, ac.class_prompts(w)) for r in (clip, align))
    assert ma["gap"] < 0.5 * mc["gap"] and ma["paired_cos"] > mc["paired_cos"]
    assert ma["zero_shot"] > 0.5 and mc["zero_shot"] > 0.5             # both learn the 20 classes (chance 0.05)
    # the post-hoc foil closes the gap by construction
    assert mc["shift_gap"] < 0.1 * mc["gap"]
