"""Library tests for the colour-vision simulator (Kotani & Ng, ICLR 2025): eye, cortex, read-outs, reference cones."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import iclrbench.explorers.color_vision as cve
import iclrbench.papers.color_vision as cv
from iclrbench.core import Result
from iclrbench.views.static import static_view
from static_view_checks import assert_static_view


@pytest.fixture(autouse=True)
def _one_thread():
    import torch
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# --- eye -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lmax", [419.0, 440.0, 500.0, 530.0, 545.0, 560.0, 610.0, 390.0, 640.0])
def test_nomogram_peaks_at_lmax(lmax):
    wl = np.arange(370.0, 720.0, 0.25)
    assert abs(wl[cv.govardovskii(wl, lmax).argmax()] - lmax) <= 2.0
    S = cv.cone_fundamentals([lmax], wl)
    assert S.max() == pytest.approx(1.0, abs=1e-4)


def test_bad_peaks_raise():
    with pytest.raises(ValueError, match="'lmax'"):
        cv.govardovskii(cv.WAVELENGTHS, 250.0)
    with pytest.raises(ValueError, match="'peaks'"):
        cv.cone_fundamentals([])


def test_nomogram_matches_stockman_sharpe_cone_fundamentals():
    """Fitting our nomogram's peak to colour-science's Stockman & Sharpe 2° cone fundamentals (400–700 nm, 5 nm)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import colour
    ss = colour.MSDS_CMFS["Stockman & Sharpe 2 Degree Cone Fundamentals"]
    wl = np.arange(400.0, 701.0, 5.0)
    ref = np.stack([np.asarray(ss[w]) for w in wl])                  # (n, 3): L, M, S
    fits = [cv.fit_nomogram_peak(wl, ref[:, i]) for i in range(3)]
    (pL, rL), (pM, rM), (pS, rS) = fits
    assert rL >= 0.97 and rM >= 0.97 and rS >= 0.93, fits
    # corneal (pre-receptoral filtered) peaks sit above the photopigment peaks 560 / 530 / 419 nm
    assert pL == pytest.approx(573, abs=3) and pM == pytest.approx(549, abs=3) and pS == pytest.approx(447, abs=4), fits
    assert pL > 560 and pM > 530 and pS > 419


def test_dog_sums_to_one_minus_surround_weight():
    k = cv.dog_kernel()
    assert k.shape == (7, 7)
    assert k.sum() == pytest.approx(1 - 0.91, abs=1e-12)
    assert cv.dog_kernel(surround_weight=0.5).sum() == pytest.approx(0.5, abs=1e-12)
    with pytest.raises(ValueError, match="'surround_weight'"):
        cv.dog_kernel(surround_weight=1.5)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_equal_mosaic_has_equal_proportions(n):
    m = cv.cone_mosaic(24, cv.PEAK_SETS[n], "equal", np.random.default_rng(1))
    counts = np.bincount(m.ravel(), minlength=n)
    assert counts.max() - counts.min() <= 1 and counts.sum() == 576


def test_human_mosaic_proportions_and_sparse_s_lattice():
    rng = np.random.default_rng(0)
    m = cv.cone_mosaic(64, cv.PEAK_SETS[3], "human", rng)
    L, M, S = (np.mean(m == t) for t in range(3))
    assert L / M == pytest.approx(1.92, rel=0.12)
    assert 0.02 < S < 0.12
    for i in range(64 - 5):                                           # no 6 x 6 window lacks an S cone
        for j in range(64 - 5):
            assert (m[i:i + 6, j:j + 6] == 2).any()
    # 'human Q' tetrachromat: half of the L cells become Q (type 1 = 545 nm)
    q = cv.cone_mosaic(64, cv.HUMAN_Q, "human", np.random.default_rng(0))
    Lq, Qq, Mq = (np.mean(q == t) for t in range(3))
    assert Lq == pytest.approx(Qq, rel=0.05) and (Lq + Qq) / Mq == pytest.approx(1.92, rel=0.12)
    with pytest.raises(ValueError, match="'mosaic'"):
        cv.cone_mosaic(8, cv.PEAK_SETS[3], "striped")


def test_rgb_derived_spectra_have_rank_three():
    """RGB-derived scenes: a 4-cone eye's excitations span only 3 dimensions (the 4th cone is predictable)."""
    for mode, expect_rank3 in (("rgb", True), ("rich", False)):
        E = cv.excitations(cv.spectral_scene("astronaut", mode, seed=0), cv.cone_fundamentals(cv.PEAK_SETS[4]))
        sv = np.linalg.svd(E.reshape(4, -1), compute_uv=False)
        assert (sv[3] / sv[0] < 1e-6) == expect_rank3, (mode, sv)


# --- cortex ---------------------------------------------------------------------------------------------
def _retina(**kw):
    args = dict(peaks=cv.PEAK_SETS[3], size=16, images=("coffee", "chelsea"), noise=0.0, seed=0)
    args.update(kw)
    return cv.Retina(**args)


def test_untrained_cortex_is_colour_blind_and_reencodes_exactly():
    import torch
    r = _retina(eye_motion=0)
    cx = cv.Cortex(16, K=8)
    ons = r.sample(3, np.random.default_rng(0))["ons1"]
    with torch.no_grad():
        assert torch.allclose(cx.encode(cx.decode(ons)), ons, atol=1e-6)
    sv = cv.identity_spectrum(cx.identities().detach().numpy(), r.mosaic, 3)
    assert cv.colour_dims(sv) == 1 and sv[1] < 1e-6
    sim = cv.Simulation(r, seed=0)
    assert sim.dims() == 1 and cv.cmf_sim(sim)["dims"] == 1


def test_read_outs_use_the_cells_the_loss_scores():
    """The cone-identity rank reads the cells at least LOSS_BORDER from the edge (the cells the loss scores, as the probe
    and CMF-SIM do); `border=0` reads every cell. Here the border cells are colour-blind (C = e1) and the interior cells
    hold one identity direction per type: the interior read-out sees N orthogonal directions, the every-cell one dilutes them."""
    H, N, K, b = 16, 3, 8, cv.LOSS_BORDER
    mosaic = cv.cone_mosaic(H, cv.PEAK_SETS[N], "equal", np.random.default_rng(0))
    C = np.zeros((K, H, H)); C[0] = 1.0
    inner = np.zeros((H, H), bool); inner[b:H - b, b:H - b] = True
    for t in range(N):
        sel = inner & (mosaic == t)
        C[:, sel] = 0.0; C[t, sel] = 1.0
    sv_in = cv.identity_spectrum(C, mosaic, N, border=b)
    sv_all = cv.identity_spectrum(C, mosaic, N)
    assert np.allclose(sv_in, 1.0, atol=0.2) and cv.colour_dims(sv_in) == N
    assert sv_all[-1] < sv_in[-1] - 0.2
    M = cv.type_means(C, mosaic, N, border=b)
    for t in range(N):
        assert np.allclose(M[t], C[:, inner & (mosaic == t)].mean(1))
    # the rings partition the retina, and the outer rings are the colour-blind ones
    starts, spectra = cv.ring_spectra(C, mosaic, N, width=2)
    assert list(starts) == list(range(0, H // 2, 2))
    assert all(s[1] < 1e-9 for s in spectra[:b // 2]) and all(s[-1] > 0.5 for s in spectra[b // 2:])
    # a retina too small for the border keeps its central cells rather than none
    assert cv.interior(np.zeros((2, 8, 8)), 4).shape == (2, 2, 2)
    sim = cv.Simulation(_retina(), seed=0)
    assert np.allclose(sim.spectrum(), cv.identity_spectrum(sim.identities(), sim.retina.mosaic, N, border=b))
    assert len(cve.fig_edge_profile(sim).data) == N + 1
    assert cv.cmf_sim(sim, border=0)["dims"] == 1 and np.isfinite(cv.probe_r2(sim, 2, 2, border=0)).all()   # border 0 reads every cell


def test_warp_recovers_a_synthetic_eye_shift_exactly():
    """The scene content at t2 is the t1 content warped by the true shift, exactly, on every valid cell (and not by the
    opposite shift); for a one-cone eye without lateral inhibition the optic-nerve signal itself warps exactly; the
    eye-shift estimator recovers the true shifts from the optic-nerve signals alone."""
    import torch
    r = _retina(eye_motion=3)
    b = r.sample(8, np.random.default_rng(3))
    assert (b["shifts"] != 0).any()
    mask = cv.loss_mask(b["shifts"], 16, border=0, kernel_size=1).bool().expand_as(b["e1"])
    assert torch.equal(cv.warp(b["e1"], b["shifts"])[mask], b["e2"][mask])
    assert not torch.equal(cv.warp(b["e1"], -b["shifts"])[mask], b["e2"][mask])
    r1 = _retina(peaks=cv.PEAK_SETS[1], eye_motion=3, lateral_inhibition=False)
    b1 = r1.sample(8, np.random.default_rng(3))
    m1 = cv.loss_mask(b1["shifts"], 16, border=0, kernel_size=1).bool()
    assert torch.equal(cv.warp(b1["ons1"], b1["shifts"])[m1], b1["ons2"][m1])
    r2 = _retina(eye_motion=3, size=32)                                                # three cones, lateral inhibition
    b2 = r2.sample(8, np.random.default_rng(4))
    assert torch.equal(cv.estimate_shift(b2["ons1"], b2["ons2"], 3), b2["shifts"])


def test_cortex_convolutions_match_plain_reflect_padded_conv2d():
    """The cortex's fast paths compute the plain maths: the lateral-inhibition kernels as one grouped convolution, and D in
    channels-last layout, against `F.conv2d` on reflect-padded maps and `nn.Conv2d(padding_mode="reflect")`."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    cx = cv.Cortex(16, K=8)
    for conv in cx.D.convs: torch.nn.init.normal_(conv.weight, std=0.2); torch.nn.init.normal_(conv.bias, std=0.1)
    x, k = torch.randn(5, 1, 16, 16), torch.randn(1, 1, 7, 7)
    assert torch.allclose(cx._conv(x, k), F.conv2d(F.pad(x, (3, 3, 3, 3), mode="reflect"), k), atol=1e-5)
    h = torch.randn(3, 8, 16, 16)
    y = h
    for i, conv in enumerate(cx.D.convs):
        y = conv(y.contiguous())                     # nn.Conv2d's own reflect padding, contiguous layout
        if i < len(cx.D.convs) - 1: y = F.relu(y)
    assert torch.allclose(cx.D(h), h + y, atol=1e-5)


def test_training_in_worker_processes_gives_the_same_numbers():
    """`train_job` through the run's process pool (`RunContext.map`, two forked workers; one job boosts its trained
    trichromat and trains on, as the run does) gives the same cortices as training one after another in this process;
    a simulation sent back from a worker keeps training identically."""
    import torch
    from iclrbench.core.experiment import RunContext
    def jobs():
        return [(cv.Simulation(_retina(), seed=0), 6, 4), (cv.Simulation(_retina(), seed=1), 6, None)]
    ctx = RunContext(params={}, seed=0, seeds=[0])
    par, ser = ctx.map(cv.train_job, jobs(), workers=2), ctx.map(cv.train_job, jobs(), workers=1)
    for (a, ab), (b, bb) in zip(par, ser):
        assert a.step == b.step and a.history["loss"] == b.history["loss"]
        assert torch.equal(a.cortex.C, b.cortex.C)
    (pb, before, at), (sb, before_s, at_s) = par[0][1], ser[0][1]
    assert (before, at) == (before_s, at_s) and pb.step == sb.step == 10 and pb.boost_step == 6
    assert pb.history["loss"] == sb.history["loss"] and torch.equal(pb.cortex.C, sb.cortex.C)
    a, b = par[1][0], ser[1][0]
    assert a.opt.param_groups[0]["params"][0] is next(a.cortex.parameters())   # optimiser still drives the cortex
    a.train(3); b.train(3)
    assert a.history["loss"] == b.history["loss"] and torch.equal(a.cortex.C, b.cortex.C)


def test_neural_scopes_never_reach_the_cortex():
    import torch.nn.functional as F
    sim = cv.Simulation(_retina(), seed=0)
    b = sim.retina.sample(2, np.random.default_rng(0))
    _, ip = cv.prediction_loss(sim.cortex, b["ons1"], b["ons2"], b["shifts"])
    s_loss = F.mse_loss(sim.scope_rgb(ip.detach().permute(0, 2, 3, 1)), b["rgb1"].permute(0, 2, 3, 1))
    s_loss.backward()
    assert all(p.grad is None for p in sim.cortex.parameters())


def test_same_seed_same_numbers():
    a = cv.Simulation(_retina(), seed=5).train(15)
    b = cv.Simulation(_retina(), seed=5).train(15)
    assert a.history["loss"] == b.history["loss"]
    assert np.array_equal(a.identities(), b.identities())


def test_boost_adds_a_cone_type_to_half_of_one_class_and_keeps_the_cortex():
    import torch
    sim = cv.Simulation(_retina(size=24), seed=0).train(5)
    C0 = sim.cortex.C.detach().clone()
    L0 = int((sim.retina.mosaic == 0).sum())
    b = sim.boost(500.0, from_type=0)
    assert b.retina.n_types == 4 and b.retina.peaks[-1] == 500.0
    assert int((b.retina.mosaic == 3).sum()) == round(L0 / 2) and int((b.retina.mosaic == 0).sum()) == L0 - round(L0 / 2)
    assert np.array_equal(b.retina.mosaic[b.retina.mosaic != 3], sim.retina.mosaic[b.retina.mosaic != 3])
    assert b.cortex is not sim.cortex and torch.equal(b.cortex.C, C0)
    assert b.dims() <= 3                 # the new Q cells start with the L cells' identities
    b.train(2)
    assert b.step == 7 and sim.step == 5 and torch.equal(sim.cortex.C, C0)      # the trichromat itself is untouched
    summary = cv.summarise(b, 0)                                                    # read-outs of a boosted (ragged) history
    assert len(summary["history"]["sv"][0]) == 3 and len(summary["history"]["sv"][-1]) == 4
    # as in the official script only the weights carry over: Adam starts afresh unless asked to keep its moments
    fresh, kept = sim.boost(500.0), sim.boost(500.0, keep_optimizer=True)
    assert not fresh.opt.state and fresh.opt.param_groups[0]["lr"] == sim.lr
    assert all(torch.equal(kept.opt.state[q]["exp_avg_sq"], sim.opt.state[p]["exp_avg_sq"])
               for q, p in zip(kept.cortex.parameters(), sim.cortex.parameters()))
    assert fresh.opt.param_groups[0]["params"][0] is next(fresh.cortex.parameters())


def test_excitation_spectrum_measures_the_eyes_own_colour_dimensions():
    """The eye's signal read-out equals the normalised singular values of the unit-norm cone-excitation columns (numpy
    on the same input), ignores a cone's scale, gives a rank-3 ceiling on RGB-derived scenes, and ranks the boosted
    eye's 500 nm cone (nearly a mix of 560/530/419 nm) far below the generic tetrachromat's 4th direction."""
    import torch
    r = cv.Retina(cv.PEAK_SETS[4], size=16, images=("coffee", "astronaut"), seed=1)
    X = r.E.numpy().astype(float).transpose(0, 2, 3, 1).reshape(-1, 4)
    ref = np.linalg.svd(X / np.linalg.norm(X, axis=0), compute_uv=False)
    got = cv.excitation_spectrum(r)
    assert np.allclose(got, ref / ref[0]) and got[0] == 1.0 and np.all(np.diff(got) <= 0)
    r.E = r.E * torch.tensor([1.0, 3.0, 0.5, 1.0])[None, :, None, None]
    assert np.allclose(cv.excitation_spectrum(r), got, atol=1e-6)
    rgb = cv.Retina(cv.PEAK_SETS[4], size=16, spectra="rgb", images=("coffee",))
    assert cv.excitation_spectrum(rgb)[3] < 1e-6 < cv.excitation_spectrum(rgb)[2]
    boosted = cv.excitation_spectrum(cv.Retina(cv.PEAK_SETS[3], size=16, images=("coffee", "astronaut"), seed=1).add_cone_type(500.0))
    assert len(boosted) == 4 and boosted[3] < 0.5 * got[3]


def test_run_reports_the_boosting_control_and_the_eyes_spectra():
    """With boost_control the run also trains a cortex from scratch on the boosted eye (same cones and mosaic as the
    boosted trichromat's retina) and the boosting check quotes it beside the eyes' own 4th singular values."""
    overrides = dict(grid=12, steps=3, boost=True, boost_steps=2, boost_control=True, boost_generic=True, control=False)
    res = cv.run("smoke", progress=False, **overrides)
    p = dict(cv.SCALES["smoke"], **overrides)
    m = res.metrics
    assert len(m["dims_boost_control"]) == 1 and len(m["sv_boost_control"][0]) == 4 and len(m["boost_eye_sv"][0]) == 4
    assert m["eye_sv_N3"][0][0] == 1.0 and len(m["eye_sv_N3"][0]) == 3
    assert len(res.artefacts["runs"]["boost_control"][0]["history"]["step"]) >= 2
    fig = cve.fig_dimensionality_summary(res)
    assert sum(t.name == "the eye's cone signals" for t in fig.data) == len(res.artefacts["runs"])   # one per condition
    held, msg = cv._check_boost(m)
    assert "from scratch on the boosted eye" in msg and "own cone signals" in msg and held == (m["boost_dims_before"] == [3] and m["boost_dims_after"] == [4])
    # the generic boost: its own trichromat (610/560/440), boosted with the 500 nm cone in half of the 610 nm cells
    assert m["dims_N3_generic"] == [m["boost_generic_dims_before"][0]] and len(m["boost_generic_sv_after"][0]) == 4
    assert "generic trichromat 610/560/440" in msg
    assert len(m["boost_generic_eye_sv"][0]) == 4 and m["boost_generic_eye_sv"][0] == res.artefacts["runs"]["boost_generic"][0]["eye_sv"]
    assert res.artefacts["boost_step"] == {"boost": [3], "boost_generic": [3]}
    ex = cve.explore(res, background=False)          # the stored boosted runs show their switch marker
    for tag in ("boost", "boost_generic"):
        ex.controls["run"].value = tag
        assert sum(t.name == "boost (new cone type)" for t in ex.figures["stored"].data) == 1
    assert not ex.errors
    eye = cv.make_retina(cv.PEAK_SETS[3], p, 0, 3)
    assert np.array_equal(cv.Simulation(eye, seed=0).boost().retina.mosaic, eye.add_cone_type(cv.BOOST_Q_PEAK, 0, 0.5, 0).mosaic)


def test_checks_say_not_measured_when_the_run_switched_their_part_off():
    "cone_counts without N = 4 or boost=False leave a claim unmeasured, not failed; a part that ran and failed still fails."
    from iclrbench.core import NOT_HELD, NOT_MEASURED, evaluate_claims
    m = dict(cone_counts="1,2,3", **{f"dims_N{n}": [n] * 3 for n in (1, 2, 3)},
             **{f"sv_N{n}": [[1.0, 0.2, 0.1][:n]] * 3 for n in (1, 2, 3)})
    held, msg = cv._check_dims_track_n(m)
    assert held is None and "N = [4] not run" in msg
    assert cv._check_dims_track_n(dict(m, dims_N2=[2, 1, 2]))[0] is False     # N = 2 ran and failed
    assert cv._check_boost({})[0] is None
    status = {o.id: o.status for o in evaluate_claims(cv.CLAIMS, m, "full")}
    assert NOT_HELD not in [status[c.id] for c in cv.CLAIMS if c.check in (cv._check_dims_track_n, cv._check_boost)]
    switched_off = [c.id for c in cv.CLAIMS if c.check in (cv._check_dims_track_n, cv._check_boost)]
    assert len(switched_off) == 2 and all(status[i] == NOT_MEASURED for i in switched_off)


def test_bad_parameters_raise_naming_them():
    with pytest.raises(ValueError, match="'eye_motion'"):
        _retina(eye_motion=20)
    with pytest.raises(ValueError, match="'spectra'"):
        cv.spectral_scene("coffee", "hyper")
    with pytest.raises(ValueError, match="'image'"):
        cv.load_image("lena")
    with pytest.raises(ValueError, match="'latent_k'"):
        cv.Cortex(16, K=0)
    with pytest.raises(ValueError, match="'cone_counts'"):
        cv.run("smoke", cone_counts="5")


# --- emergence ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_rgb_derived_spectra_cap_a_four_cone_eye_at_three_dimensions():
    """A 4-cone eye on rank-3 (RGB-derived) spectra: colour emerges, but the 4th identity direction gets no signal —
    after the same short training it stays far below the rich-spectra eye's and below the dimension threshold.
    (The rank-3 property itself is tested exactly in `test_rgb_derived_spectra_have_rank_three`.)"""
    sv = {}
    for mode in ("rgb", "rich"):
        sim = cv.Simulation(cv.Retina(cv.PEAK_SETS[4], size=16, spectra=mode, eye_motion=3, seed=0), seed=0).train(300)
        sv[mode] = sim.spectrum()
    assert sv["rgb"][1] >= 0.04                      # colour does emerge from RGB-derived scenes ...
    assert sv["rgb"][3] < cv.DIM_THRESHOLD           # ... but no fourth dimension
    assert sv["rgb"][3] < 0.5 * sv["rich"][3], sv    # and the 4th direction lags the rich-spectra eye's


def test_read_outs_are_deterministic():
    """CMF-SIM and the percept are noise-free: repeated read-outs of one cortex give identical numbers."""
    import torch
    sim = cv.Simulation(cv.Retina(cv.PEAK_SETS[3], size=16, images=("coffee",), noise=0.02, seed=0), seed=0).train(3)
    a = cv.cmf_sim(sim)
    torch.manual_seed(123)
    b = cv.cmf_sim(sim)
    assert a["errors"] == b["errors"]
    assert np.array_equal(sim.percept()["percept"], sim.percept()["percept"])


def test_static_view_steps_through_training_per_retina():
    """The docs' static view, generated from the explorer over its STATIC_GRID, draws from a result's stored histories
    (a tiny run with boosting, after a JSON round trip, so no live cortex): one frame per stored run and checkpoint."""
    import json
    res = cv.run("smoke", grid=12, steps=15, boost=True, boost_steps=5, progress=False)
    back = Result.from_dict(json.loads(json.dumps(res.to_dict())))
    assert not back.objects and set(res.objects["simulations"]) == {"N3", "no_motion", "boost"}
    ex = cve.explore(back, background=False)
    assert ex.STATIC_GRID["run"] == ["N3", "no_motion", "boost"] and ex.n_checkpoints == cve.STATIC_CHECKPOINTS
    fig = static_view(ex)
    assert_static_view(fig)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 3 * cve.STATIC_CHECKPOINTS
    # the boosted run's last checkpoint has four singular values (the new cone type), the others three
    frame = lambda i: [t for t, v in zip(fig.data, steps[i].args[0]["visible"]) if v]
    bars = lambda i: [len(t.x) for t in frame(i) if t.type == "bar"]
    assert bars(cve.STATIC_CHECKPOINTS - 1) == [3] and bars(3 * cve.STATIC_CHECKPOINTS - 1) == [4]
    assert not ex.errors
    assert cve.checkpoints([0, 1, 2], 3) == [0, 1, 2]
    with pytest.raises(ValueError, match="'k'"):
        cve.checkpoints([0, 1], 3)
