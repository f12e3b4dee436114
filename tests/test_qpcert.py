"""QPCert: NTK closed forms (vs a wide PyG GCN), the NTK-SVM, and the exact MILP certificates vs brute force."""
from __future__ import annotations

import itertools, json

import numpy as np
import pytest

import iclrbench.papers.qpcert as qp
from iclrbench.blocks.graphs import GraphData, csbm_binary, karate_club, normalized_adjacency
from iclrbench.core import Result
from iclrbench.explorers import qpcert as qx
from iclrbench.views.static import static_view
from static_view_checks import assert_static_view


@pytest.fixture(scope="module")
def small():
    g = csbm_binary(40, seed=3)
    rng = np.random.default_rng(0)
    perm = rng.permutation(g.n)
    return g, np.sort(perm[:8]), np.sort(perm[8:20])


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_sgc_ntk_closed_form(depth):
    g = csbm_binary(50, seed=1)
    S = normalized_adjacency(g.adjacency, "row")
    Sp = np.linalg.matrix_power(S, depth + 1)
    assert np.allclose(qp.ntk_matrix(g.x, g.adjacency, "SGC", depth), (depth + 1) * Sp @ g.x @ g.x.T @ Sp.T)


@pytest.mark.parametrize("arch", qp.ARCHS)
def test_every_ntk_is_symmetric_psd(arch):
    g = csbm_binary(60, seed=2)
    for depth in (1, 2):
        Q = qp.ntk_matrix(g.x, g.adjacency, arch, depth)
        assert np.allclose(Q, Q.T) and np.linalg.eigvalsh(Q).min() > -1e-8 * np.abs(Q).max()


def test_relu_expectations_match_monte_carlo():
    rng = np.random.default_rng(0)
    Sig = np.array([[2.0, 0.7], [0.7, 1.0]])
    h = rng.multivariate_normal([0, 0], Sig, size=400000)
    E, Ed = qp.relu_expectations(Sig)
    relu = np.maximum(h, 0)
    assert np.allclose(E, 2 * (relu.T @ relu) / len(h), rtol=0.02)                 # c_σ = 2
    step = (h > 0).astype(float)
    assert np.allclose(Ed, 2 * (step.T @ step) / len(h), atol=0.01)


def test_ntk_is_the_wide_pyg_gcn_limit():
    k = karate_club()
    chk = qp.ntk_width_check(k, widths=(32, 2048), inits=2)
    assert chk["rel_error"][1] < chk["rel_error"][0] / 3 and chk["rel_error"][1] < 0.1


def test_svm_dual_matches_reference_qp_and_kkt(small):
    from scipy.optimize import minimize
    g, L, _ = small
    Q = qp.ntk_matrix(g.x, g.adjacency, "GCN")
    y = qp.to_pm1(g.y[L])
    for C in (0.01, 0.1, 1.0):
        a = qp.svm_dual(Q[np.ix_(L, L)], y, C)
        K = Q[np.ix_(L, L)] * np.outer(y, y)
        ref = minimize(lambda v: 0.5 * v @ K @ v - v.sum(), np.zeros(len(L)), jac=lambda v: K @ v - 1, method="SLSQP",
                       bounds=[(0, C)] * len(L), options=dict(ftol=1e-14, maxiter=1000)).x
        f = lambda v: 0.5 * v @ K @ v - v.sum()
        assert f(a) <= f(ref) + 1e-10 and np.allclose(a, ref, atol=1e-5)
        gr = K @ a - 1
        assert np.all(gr[a <= 0] >= -1e-8) and np.all(gr[a >= C] <= 1e-8)


@pytest.mark.parametrize("arch", ["GCN", "SGC"])
@pytest.mark.parametrize("formulation", ["pairwise", "aggregated"])
def test_milp_verdict_equals_brute_force(small, arch, formulation):
    """The hard test: for b ≤ 2 the MILP's verdict equals exhaustive enumeration on every test node."""
    g, L, T = small
    Q = qp.ntk_matrix(g.x, g.adjacency, arch)
    y = qp.to_pm1(g.y[L])
    bf = qp.brute_force_certify(Q, L, y, T, 2, 0.1)
    r = qp.certify_nodes(Q, L, y, T, [0, 1, 2], 0.1, monotone=False, formulation=formulation)
    assert r["timeouts"] == 0
    assert np.array_equal(r["certified"], bf), (r["certified"].astype(int), bf.astype(int))
    assert bf[0].all() and not bf[2].all() and bf[1].any()                 # the check is not vacuous here
    mf = qp.min_flip_budgets(Q, L, y, T, 0.1, b_max=len(L))
    assert np.array_equal(np.stack([mf["min_flips"] > b for b in range(3)]), bf)
    # the worst-case flip sets the MILP reports really change the prediction
    Q_LL, Q_TL = Q[np.ix_(L, L)], Q[np.ix_(T, L)]
    for k, t in enumerate(T):
        fl = mf["flips"][k]
        if not fl: continue
        yf = y.copy(); yf[np.isin(L, fl)] *= -1
        pf = qp.svm_predict(Q_TL[k], yf, qp.svm_dual(Q_LL, yf, 0.1))
        assert np.sign(pf) != np.sign(mf["prediction"][k]) or pf == 0
        assert len(fl) == mf["min_flips"][k]


def test_node_limit_is_a_limit_out_and_runs_are_deterministic():
    """The per-MILP budget is HiGHS' branch-and-bound node count (machine-independent): a MILP it stops is reported as a
    limit-out and counts as not certified; the same problem solved twice takes the same nodes and gives the same verdicts.
    Instance: smoke seed 14, SGC, 4 test nodes, b = 2 (MILPs that need 2-32 nodes)."""
    p = qp.SCALES["smoke"]
    g, L, T = qp.csbm_instance(14, p["n_nodes"], p["n_labeled"], p["n_test"])
    T = T[:4]
    Q = qp.ntk_matrix(g.x, g.adjacency, "SGC")
    y = qp.to_pm1(g.y[L])
    r1 = qp.certify_nodes(Q, L, y, T, [2], 0.1, formulation="aggregated")
    r2 = qp.certify_nodes(Q, L, y, T, [2], 0.1, formulation="aggregated")
    assert r1["nodes"] == r2["nodes"] and np.array_equal(r1["certified"], r2["certified"])
    assert r1["timeouts"] == r1["time_outs"] == r1["failures"] == 0 and max(r1["nodes"]) > 2
    lim = qp.certify_nodes(Q, L, y, T, [2], 0.1, formulation="aggregated", node_limit=2)
    big = np.array(r1["nodes"]) > 2                                   # MILPs that needed more than the budget
    assert lim["timeouts"] >= big.sum() > 0 and lim["time_outs"] == 0
    assert not (lim["certified"] & ~r1["certified"]).any()            # sound: a limit never certifies more
    assert not lim["certified"][0, big].any()                         # a MILP stopped by the node limit is not certified
    M = qp.LabelFlipMILP(Q[np.ix_(L, L)], y, 0.1, formulation="aggregated", node_limit=2)
    pr = qp.svm_predict(Q[np.ix_(T, L)], y, qp.svm_dual(Q[np.ix_(L, L)], y, 0.1))
    k = int(np.flatnonzero(big)[0])
    c = M.certify(Q[T[k], L], pr[k], 2)
    assert c.limit == "node" and not c.certified and "node limit" in c.status and c.nodes == 2
    mf = qp.min_flip_budgets(Q, L, y, T, 0.1, b_max=4)
    assert mf["nodes"] == qp.min_flip_budgets(Q, L, y, T, 0.1, b_max=4)["nodes"] and mf["timeouts"] == 0
    mf1 = qp.min_flip_budgets(Q, L, y, T, 0.1, b_max=4, node_limit=1)
    assert mf1["time_outs"] == 0 and (mf1["min_flips"] <= mf["min_flips"]).all()  # limit-outs give sound lower bounds


def test_false_infeasible_answer_is_solved_again_not_counted_as_certified():
    """HiGHS (aggregated form, presolve off) reports the always-feasible b = 0 MILP of smoke seed 14 / GCN / first test
    node infeasible; it is solved again in the pairwise form and matches brute force."""
    p = qp.SCALES["smoke"]
    g, lab, test = qp.csbm_instance(14, p["n_nodes"], p["n_labeled"], p["n_test"])
    Q = qp.ntk_matrix(g.x, g.adjacency, "GCN")
    y = qp.to_pm1(g.y[lab])
    Q_LL = Q[np.ix_(lab, lab)]
    pr = qp.svm_predict(Q[np.ix_(test[:1], lab)], y, qp.svm_dual(Q_LL, y, 0.1))
    r = qp.LabelFlipMILP(Q_LL, y, 0.1, formulation="aggregated").certify(Q[test[0], lab], pr[0], 0)
    assert r.certified and r.limit == "" and "pairwise re-solve" in r.status

def test_collective_certificate_equals_brute_force(small):
    g, L, T = small
    Q = qp.ntk_matrix(g.x, g.adjacency, "SGC")
    y = qp.to_pm1(g.y[L])
    Q_LL, Q_TL = Q[np.ix_(L, L)], Q[np.ix_(T, L)]
    p0 = qp.svm_predict(Q_TL, y, qp.svm_dual(Q_LL, y, 0.1))
    for b in (0, 1, 2):
        worst = 0
        for size in range(b + 1):
            for F in itertools.combinations(range(len(L)), size):
                yf = y.copy(); yf[list(F)] *= -1
                pf = qp.svm_predict(Q_TL, yf, qp.svm_dual(Q_LL, yf, 0.1))
                worst = max(worst, int((np.sign(p0) * pf < 0).sum()))
        c = qp.collective_certificate(Q, L, y, T, b, 0.1)
        assert c["optimal"] and c["changed"] == worst
        samplewise = int((qp.min_flip_budgets(Q, L, y, T, 0.1, b + 1)["min_flips"] > b).sum())
        assert c["certified"] >= samplewise


def test_real_model_path_on_pyg_karate():
    from torch_geometric.datasets import KarateClub
    data = KarateClub()[0]
    kf = karate_club("faction")
    data.y = __import__("torch").as_tensor(kf.y)
    lab = np.array([0, 1, 32, 33])
    r = qp.certify_graph(data, lab, np.arange(2, 32), "SGC", C=0.01, b_max=4)
    assert r["Q"].shape == (34, 34) and len(r["min_flips"]) == 30 and (r["min_flips"] >= 1).all()
    assert (np.sign(r["prediction"]) == qp.to_pm1(kf.y[2:32])).mean() > 0.8           # the factions are predicted


def test_bad_parameters_raise():
    g = csbm_binary(30, seed=0)
    with pytest.raises(ValueError, match="'arch'"):
        qp.ntk_matrix(g.x, g.adjacency, "GAT")
    with pytest.raises(ValueError, match="'depth'"):
        qp.ntk_matrix(g.x, g.adjacency, "GCN", 0)
    with pytest.raises(ValueError, match="'C'"):
        qp.svm_dual(np.eye(2), np.ones(2), 0.0)
    with pytest.raises(ValueError, match="'labels'"):
        qp.to_pm1(np.array([0, 2]))
    with pytest.raises(ValueError, match="'n_labeled'"):
        qp.run("smoke", n_nodes=20, n_labeled=12, n_test=20)
    with pytest.raises(ValueError, match="'architectures'"):
        qp.run("smoke", architectures="GAT")
    with pytest.raises(ValueError, match="'node_limit'"):
        qp.LabelFlipMILP(np.eye(2), np.ones(2), 0.1, node_limit=0)
    with pytest.raises(ValueError, match="'node_limit'"):
        qp.run("smoke", node_limit=0)


def test_same_seed_same_numbers_and_checks_can_fail():
    kw = dict(n_seeds=1, n_nodes=40, n_labeled=6, n_test=6, b_max=3, brute_force_b=1, ntk_check=False, progress=False)
    a, b = qp.run("smoke", seed=5, **kw), qp.run("smoke", seed=5, **kw)
    assert json.dumps(a.to_dict(False)["metrics"]) == json.dumps(b.to_dict(False)["metrics"])
    json.dumps(a.to_dict())
    # the docs' static view, generated from the explorer over its STATIC_GRID (dataset × architecture × budget b), from
    # the JSON round trip; the rings of the test nodes come from each node's stored minimal flip budget
    fig = static_view(qx.explore(Result.from_dict(json.loads(json.dumps(a.to_dict())))))
    assert_static_view(fig)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 20
    mf = np.asarray(a.artefacts["csbm"]["GCN"]["min_flips"])
    for b_ in range(5):                                   # frames 10..14: CSBM, GCN, b = 0..4
        shown = [t for t, v in zip(fig.data, steps[10 + b_].args[0]["visible"]) if v]
        test = next(t for t in shown if (t.name or "").startswith("test"))
        assert list(test.marker.line.color) == np.where(mf > b_, "#2ca02c", "#d62728").tolist()
    m = dict(a.metrics)
    assert qp._check_exact(m)[0] and qp._check_monotone(m)[0]
    bad = dict(m, exact_mismatches=1)
    assert not qp._check_exact(bad)[0]
    bad = dict(m, ratio={"GCN": [[1.0, 0.5, 0.6, 0.0]], "SGC": [[0.9, 0.5, 0.4, 0.0]]})
    assert not qp._check_monotone(bad)[0]
    bad = dict(m, auc={"GCN": [2.0], "SGC": [1.0]})
    assert not qp._check_sgc(bad)[0]
    assert not qp._check_ntk(dict(m, ntk_rel_error=[0.1, 0.2], ntk_widths=[64, 4096]))[0]
    flat = {"GCN": [[1, .9, .5, .5, .5, .5, .2, 0, 0]], "SGC": [[1, .8, .6, .6, .6, .3, .1, 0, 0]]}
    assert qp._check_plateau(dict(m, delta_ratio=flat))[0]
    assert not qp._check_plateau(dict(m, delta_ratio={"GCN": [[1, .9, .8, .7, .6, .5, .2, .1, 0]]}))[0]



def test_checks_say_not_measured_when_the_quantity_was_not_run():
    """brute_force_b=0 compares no MILP verdict with brute force; fewer than three architectures give no ranking:
    both are 'not measured' (None), never 'not held'."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("cx_qpcert", Path(__file__).parent / "counterexamples" / "qpcert.py")
    cx = importlib.util.module_from_spec(spec); spec.loader.exec_module(cx)
    checks = {c.id: c.check for c in qp.CLAIMS if c.check}
    assert checks["exact-certificate"](cx.NOT_MEASURED["exact-certificate"])[0] is None
    assert checks["no-single-best"]({"auc": {"GCN": [1.0], "SGC": [2.0]}})[0] is None
