"""`iclrbench bench`: explorer latencies, the benchmarks page and the docs' benchmarks page (issue 24)."""
from __future__ import annotations

import json

import ipywidgets as widgets
import plotly.graph_objects as go
import pytest

from iclrbench.run.bench import (benchmarks_html, control_values, explorer_latencies, latency_summary, site_benchmarks,
                                 write_benchmarks)
from iclrbench.views.explorer import Explorer, style


class _Toy(Explorer):
    def __init__(self, broken: bool = False):
        self.broken = broken
        super().__init__({"k": widgets.IntSlider(value=1, min=0, max=4), "mode": widgets.Dropdown(options=["a", "b"]),
                          "go": widgets.Button(description="go")}, ["f"])
        self.on_button("go", lambda: self.refresh("go"))
        self.refresh()

    def refresh(self, changed=None):
        if self.broken and changed == "mode": raise RuntimeError("no")
        self.draw("f", style(go.Figure(go.Scatter(x=[0, 1], y=[0, self.state["k"]])), "toy"))


def test_every_control_is_timed_and_errors_are_counted():
    rows = explorer_latencies(_Toy())
    assert [(r["control"], r["kind"]) for r in rows] == [("k", "slider")] * 4 + [("mode", "slider")] * 2 + [("go", "button")]
    assert all(r["seconds"] >= 0 and r["error"] is None for r in rows)
    s = latency_summary(rows)
    assert s["slider"]["n"] == 6 and s["button"]["n"] == 1 and s["slider"]["worst_s"] >= s["slider"]["median_s"]
    bad = explorer_latencies(_Toy(broken=True), buttons=False, values_per_control=1)
    assert [r["control"] for r in bad] == ["k", "k", "mode", "mode"]
    assert bad[2]["error"].startswith("mode: RuntimeError")


def test_control_values_cover_the_range_and_come_back():
    s = widgets.FloatSlider(value=0.3, min=0.0, max=1.0)
    assert control_values(s) == [1.0, 0.0, 0.5, 0.3]
    assert control_values(widgets.Checkbox(value=True)) == [False, True]


def test_page_and_json(tmp_path):
    rep = dict(date="2026-12-05T00:00:00+00:00", commit="0123456789abc", machine="a machine", load=0.5, quick=True,
               teal=[dict(p=0.5, threads=1, kernel="numba", dense_ms=2.0, sparse_ms=1.0, speedup=2.0, ideal=2.0)],
               ot=[dict(solver="entropic GW", n=100, ours_ms=10.0, pot_ms=40.0, ratio=0.25)],
               explorers=[dict(slug="mixmax", slider_n=10, slider_median_s=0.05, slider_worst_s=0.3, slider_worst_control="k",
                               errors=0)],
               smoke=[dict(slug="mixmax", wall_s=20.0, budget_s=60.0, date="2026-12-05", commit="0123")], full=[])
    html = benchmarks_html(rep)
    for text in ("2.00×", "0.25", "50 ms", "20.0 s", "0123456789", "a machine", "quick pass"):
        assert text in html, text
    j, h = write_benchmarks(rep, tmp_path / "b")
    assert json.loads(j.read_text()) == rep and "<h1>iclrbench — benchmarks</h1>" in h.read_text()


def test_site_benchmarks_modes(tmp_path):
    from iclrbench.core.settings import load_settings
    ini = tmp_path / "settings.ini"
    ini.write_text(f"[run]\noutput_dir = {tmp_path / 'runs'}\nledger = {tmp_path / 'runs' / 'ledger.sqlite'}\n")
    settings = load_settings(ini)
    free = site_benchmarks("stored", settings, log=lambda m: None)     # nothing measured: only the run-time tables
    assert free["ot"] == [] and free["smoke"] == [] and isinstance(free["full"], list)
    write_benchmarks(dict(free, ot=[dict(solver="s", n=1, ours_ms=1.0, pot_ms=1.0, ratio=1.0)]), tmp_path / "runs" / "benchmarks")
    assert site_benchmarks("stored", settings)["ot"][0]["solver"] == "s"          # what `iclrbench bench` wrote
    assert site_benchmarks(None, settings) is None
    with pytest.raises(ValueError, match="'bench'"):
        site_benchmarks("slow", settings)


def test_cli_rejects_unknown_papers(capsys):
    from iclrbench.run.cli import main
    assert main(["bench", "--only", "no_such_paper"]) != 0
    assert "no_such_paper" in capsys.readouterr().err
