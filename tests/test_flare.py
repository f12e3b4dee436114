"""FLaRe (Butoi et al., ICLR 2025): recognizers read the true last position, losses, training with selection on
validation CE, LSTM vs transformer on Parity out of range, the HF adapter, and TinyLM's sinusoidal-position option."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import iclrbench.papers.flare as fr
from iclrbench.blocks.formal_languages import Dataset, get_language, sample_dataset
from iclrbench.blocks.lm import LMConfig, TinyLM, sinusoidal_table


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


PARITY = get_language("parity")


def _models(k=2):
    torch.manual_seed(0)
    return [fr.RNNRecognizer(k, 8, cell="rnn"), fr.RNNRecognizer(k, 8, 2, cell="lstm"), fr.TransformerRecognizer(k, 16, 2, 2, max_len=40)]


@pytest.mark.parametrize("i", [0, 1, 2])
def test_logit_is_read_at_the_true_last_position_and_padding_does_not_leak(i):
    m = _models()[i].eval()
    x = torch.tensor([[1, 0, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]])
    L = torch.tensor([6, 2])
    H = m.states(x, L)
    assert H.shape == (2, 7, H.shape[-1])
    logits = fr.recognition_logits(m, x, L)
    # equals the logit of each string alone (no padding at all)
    for b in range(2):
        alone = fr.recognition_logits(m, x[b:b + 1, :int(L[b])], L[b:b + 1])
        assert torch.allclose(alone, logits[b:b + 1], atol=1e-5)
    x2 = x.clone(); x2[1, 2:] = 1 - x2[1, 2:]
    assert torch.allclose(fr.recognition_logits(m, x2, L), logits, atol=1e-6)
    # the empty string reads the initial state / BOS position; it depends on no symbol
    e = fr.recognition_logits(m, x[:, :0], torch.tensor([0, 0]))
    assert torch.allclose(e, fr.recognition_logits(m, x, torch.tensor([0, 0])), atol=1e-6)


def test_losses_by_hand_and_auxiliary_terms_use_positives_only():
    torch.manual_seed(0)
    m = fr.RNNRecognizer(2, 8, cell="lstm")
    ds = Dataset([("1",), ("0", "1", "1"), ()], [1, 0, 0], [0, 2, -1])
    b = fr.encode(ds, PARITY)
    total, parts = fr.recognizer_loss(m, b, c_lm=0.5, c_ns=2.0)
    H = m.states(b.x, b.lengths)
    rec = F.binary_cross_entropy_with_logits(m.rec_head(H[[0, 1, 2], [1, 3, 0]]).squeeze(-1), b.labels)
    lp = torch.log_softmax(m.lm_logits(H[0, :2]), -1)
    lm = -(lp[0, 1] + lp[1, 2]) / 2                      # "1" then EOS (id 2)
    ns_t = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])    # after ε: {0, 1}; after "1": {0, 1, EOS}
    ns = F.binary_cross_entropy_with_logits(m.ns_head(H[0, :2]), ns_t)
    assert parts["rec"] == pytest.approx(float(rec), abs=1e-6)
    assert parts["lm"] == pytest.approx(float(lm), abs=1e-6) and parts["ns"] == pytest.approx(float(ns), abs=1e-6)
    assert float(total) == pytest.approx(float(rec + 0.5 * lm + 2.0 * ns), abs=1e-5)
    # no positives in the batch: only the recognition loss
    nb = fr.encode(Dataset([("0",), ()], [0, 0], [1, -1]), PARITY)
    t2, p2 = fr.recognizer_loss(m, nb, c_lm=1.0, c_ns=1.0)
    assert set(p2) == {"rec"} and float(t2) == pytest.approx(p2["rec"])
    # tied embeddings: the LM head's weight is the input embedding
    g = torch.autograd.grad(fr.recognizer_loss(m, b, c_lm=1.0)[1]["lm"] * 0 + fr.recognizer_loss(m, b, c_lm=1.0)[0], m.emb.weight)[0]
    assert g[2].abs().sum() > 0                         # EOS row only reachable through the output side


def test_gradient_of_the_recognition_loss_matches_finite_differences():
    torch.manual_seed(1)
    m = fr.RNNRecognizer(2, 4, cell="lstm").double()
    b = fr.encode(sample_dataset(PARITY, 6, 0, 5, np.random.default_rng(0)), PARITY)
    w = m.rec_head.weight
    loss = fr.recognizer_loss(m, b)[0]
    g = torch.autograd.grad(loss, w)[0]
    h = 1e-6
    for j in range(4):
        with torch.no_grad():
            w[0, j] += h; up = float(fr.recognizer_loss(m, b)[0]); w[0, j] -= 2 * h
            dn = float(fr.recognizer_loss(m, b)[0]); w[0, j] += h
        assert (up - dn) / (2 * h) == pytest.approx(float(g[0, j]), rel=1e-5, abs=1e-8)


def test_lstm_generalises_on_parity_and_beats_the_transformer_out_of_range():
    rng = np.random.default_rng(0)
    tr, va = sample_dataset(PARITY, 800, 0, 12, rng), sample_dataset(PARITY, 100, 0, 12, rng)
    te = sample_dataset(PARITY, 150, 13, 40, rng)
    e_tr, e_va, e_te = (fr.encode(d, PARITY, False) for d in (tr, va, te))
    acc = {}
    for arch, lr in (("lstm", 1e-2), ("transformer", 1e-3)):
        torch.manual_seed(0)
        m = fr.build_recognizer(arch, 2, dict(hidden=16, rnn_layers=1, d_model=16, tf_layers=1, n_heads=2, test_max_len=40))
        log = fr.train_recognizer(m, e_tr, e_va, steps=200, batch_size=32, lr=lr, eval_every=50)
        assert log.best_val == min(v for _, v in log.val) and log.best_step in [s for s, _ in log.val]
        acc[arch] = fr.correct(m, e_te).mean()
    assert acc["lstm"] >= 0.95 and acc["lstm"] - acc["transformer"] >= 0.2, acc


def test_checkpoint_selection_restores_the_best_validation_state():
    rng = np.random.default_rng(1)
    tr, va = sample_dataset(PARITY, 200, 0, 8, rng), sample_dataset(PARITY, 60, 0, 8, rng)
    torch.manual_seed(0)
    m = fr.RNNRecognizer(2, 8)
    log = fr.train_recognizer(m, fr.encode(tr, PARITY), fr.encode(va, PARITY), steps=60, lr=3e-2, eval_every=10)
    assert fr.recognition_ce(m, fr.encode(va, PARITY)) == pytest.approx(log.best_val, rel=1e-5)


def test_tiny_run_is_deterministic_and_reports_both_aggregations():
    kw = dict(n_seeds=2, steps=20, eval_every=10, n_train=120, n_val=50, n_test_in=50, n_test_long=50, test_max_len=60,
              progress=False)
    a, b = fr.run("smoke", 3, **kw), fr.run("smoke", 3, **kw)
    k = "acc_out:parity:lstm:rec"
    assert a.metrics[k] == b.metrics[k] and len(a.metrics[k]) == 2 and a.metrics["seeds"] == [3, 4]
    assert a.metrics["mean_" + k] == pytest.approx(np.mean(a.metrics[k])) and a.metrics["max_" + k] == max(a.metrics[k])
    assert a.metrics["positives_rejected"] == 0 and a.metrics["negatives_accepted"] == 0
    assert {c.id: c.status for c in a.claims}["controls-generalise"] == "not measured in this run"


def test_bad_parameters_raise_value_errors():
    with pytest.raises(ValueError, match="steps"):
        fr.run("smoke", steps=0, progress=False)
    with pytest.raises(ValueError, match="languages"):
        fr.run("smoke", languages="english", progress=False)
    with pytest.raises(ValueError, match="losses"):
        fr.run("smoke", languages="binary_addition", losses="rec+lm+ns", n_seeds=1, progress=False)
    with pytest.raises(ValueError, match="d_model"):
        fr.run("smoke", d_model=30, n_heads=4, progress=False)
    with pytest.raises(ValueError, match="cell"):
        fr.RNNRecognizer(2, 8, cell="gru")
    with pytest.raises(ValueError, match="arch"):
        fr.build_recognizer("gru", 2, {})


def test_sinusoidal_positions_option_of_tinylm():
    pe = sinusoidal_table(50, 8)
    p, i = 7, 2
    assert float(pe[p, 2 * i]) == pytest.approx(math.sin(p / 10000 ** (2 * i / 8)), abs=1e-6)
    assert float(pe[p, 2 * i + 1]) == pytest.approx(math.cos(p / 10000 ** (2 * i / 8)), abs=1e-6)
    torch.manual_seed(0)
    m = TinyLM(LMConfig(vocab_size=7, n_layer=1, n_head=2, d_model=8, max_len=50, positions="sinusoidal"))
    assert m.pos_emb is None and "sin_pos" not in m.state_dict()
    x = torch.tensor([[1, 2, 3, 3, 3, 3]])
    y = m(x)
    # the last three inputs are equal; only their positions differ, so their outputs differ
    assert not torch.allclose(y[0, 3], y[0, 5])
    # the default keeps learned positions (GPT) exactly as before: same parameters, same output
    torch.manual_seed(0); d1 = TinyLM(LMConfig(vocab_size=7, n_layer=1, n_head=2, d_model=8, max_len=50))
    torch.manual_seed(0); d2 = TinyLM(LMConfig(vocab_size=7, n_layer=1, n_head=2, d_model=8, max_len=50, positions="default"))
    assert d1.pos_emb is not None and torch.equal(d1(x), d2(x))
    with pytest.raises(ValueError, match="positions"):
        LMConfig(vocab_size=7, positions="alibi")


def test_hf_recognizer_on_a_tiny_random_gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    dec = transformers.GPT2Model(transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=4, n_positions=64))
    m = fr.HFRecognizer(dec, k=2)
    ds = sample_dataset(PARITY, 32, 0, 12, np.random.default_rng(0))
    ds.strings[0], ds.labels[0] = (), 0                 # include the empty string
    b = fr.encode(ds, PARITY)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    before = float(fr.recognizer_loss(m, b, c_lm=0.3, c_ns=0.3)[0])
    for _ in range(3):
        loss, _ = fr.recognizer_loss(m, b, c_lm=0.3, c_ns=0.3)
        opt.zero_grad(); loss.backward(); opt.step()
    assert float(fr.recognizer_loss(m, b, c_lm=0.3, c_ns=0.3)[0]) < before
    m.eval()
    e = fr.recognition_logits(m, torch.zeros(1, 0, dtype=torch.long), torch.tensor([0]))
    assert e.shape == (1,) and torch.isfinite(e).all()
    with pytest.raises(ValueError, match="vocab_size"):
        fr.HFRecognizer(dec, k=3)
