"""`iclrbench docs`: the offline site — nbdev directives, plotly shipped once, widget state, static explorer views,
the claims table on the front page, and no resource from outside the site (checked here on the HTML; the browser
tests check it again in Chromium)."""
from __future__ import annotations

import json, re, subprocess, sys
from pathlib import Path

import pytest

from iclrbench.site import builder as site
from iclrbench.core import load_paper, paper_slugs

ROOT = Path(__file__).resolve().parents[1]
CLI = [str(Path(sys.executable).parent / "iclrbench")]


def _code(src, outputs=(), **meta):
    return {"cell_type": "code", "metadata": meta, "source": src, "outputs": list(outputs), "execution_count": 1}


def test_directives_are_honoured_and_plotly_outputs_become_site_figures():
    fig = {"data": [{"type": "scatter", "y": [1, 2]}], "layout": {"height": 300}}
    nb = {"metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "text"]},
        _code("#| default_exp papers.x"),
        _code("#| hide\nsecret = 1"),
        _code("#| include: false\nnot_shown = 1"),
        _code("#| export\ndef f(x):\n    return x"),
        _code("#| echo: false\nprint('only the output')", [{"output_type": "stream", "name": "stdout", "text": "only the output\n"}]),
        _code("#| output: false\nnoisy()", [{"output_type": "stream", "name": "stdout", "text": "noise\n"}]),
        _code("fig.show()", [{"output_type": "display_data", "metadata": {},
                              "data": {site.PLOTLY_MIME: fig, "text/html": "<div>notebook renderer</div>"}},
                             {"output_type": "display_data", "metadata": {},
                              "data": {"text/html": "<script>/* plotly.js v3 */" + "x" * 200_000 + "</script>"}}]),
    ]}
    out = site.prepare_notebook(nb, "fig-x")
    srcs = [c["source"] for c in out["cells"]]
    assert not any("secret" in s or "default_exp" in s or "not_shown" in s for s in srcs)
    assert "def f(x):\n    return x" in srcs and not any("#|" in s for s in srcs)
    echo = next(c for c in out["cells"] if "only the output" in c["source"])
    assert echo["transient"]["remove_source"] and echo["outputs"]
    assert next(c for c in out["cells"] if "noisy()" in c["source"])["outputs"] == []
    figs = next(c for c in out["cells"] if c["source"] == "fig.show()")["outputs"]
    assert len(figs) == 1, "the output that inlines plotly.js is dropped"
    html = figs[0]["data"]["text/html"]
    assert 'id="fig-x-1"' in html and 'data-plotly-for="fig-x-1"' in html and "notebook renderer" not in html
    spec = json.loads(re.search(r"<script[^>]*>(.*)</script>", html, re.S).group(1))
    assert spec["data"][0]["y"] == [1, 2]


def test_figure_json_is_strict_json_even_with_nan():
    """A figure holding NaN / ±Infinity (a gap in a curve) is written as null: the browser's JSON.parse rejects NaN,
    which left a whole paper page without figures."""
    spec = {"data": [{"type": "scatter", "x": [0, 1, 2, 3], "y": [1.0, float("nan"), float("inf"), -float("inf")]}],
            "layout": {"title": {"text": "gap"}, "yaxis": {"range": [float("nan"), 1.0]}}}
    html = site.plotly_div(spec, "fig-x")
    payload = re.search(r'data-plotly-for="fig-x">(.*)</script>', html).group(1)
    strict = json.loads(payload, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c} in the figure"))
    assert strict["data"][0]["y"] == [1.0, None, None, None] and strict["layout"]["yaxis"]["range"] == [None, 1.0]


def test_anywidget_modules_are_stored_once_and_stale_buffers_dropped():
    esm = "export default {render() {}};" + " " * 30_000
    state = {"a": {"model_name": "AnyModel", "state": {"_esm": esm, "_py2js_addTraces": None, "_widget_data": [{}]},
                   "buffers": [{"path": ["_py2js_addTraces", "trace_data", 0, "x", "buffer"], "data": "AA==", "encoding": "base64"},
                               {"path": ["_widget_data", 0, "y"], "data": "AA==", "encoding": "base64"}]},
             "b": {"model_name": "AnyModel", "state": {"_esm": esm, "_py2js_restyle": {"x": 1}}},
             "c": {"model_name": "IntSliderModel", "state": {"value": 3}}}
    nb = {"metadata": {"widgets": {site.WIDGET_STATE_MIME: {"state": state, "version_major": 2, "version_minor": 0}}}}
    store: dict[str, str] = {}
    keys = site.dedupe_widget_assets(nb, store)
    assert len(keys) == 1 and store[keys[0]] == esm
    assert state["a"]["state"]["_esm"] == state["b"]["state"]["_esm"] == site.ASSET_PREFIX + keys[0]
    assert [b["path"][0] for b in state["a"]["buffers"]] == ["_widget_data"]
    assert state["b"]["state"]["_py2js_restyle"] is None and state["c"]["state"]["value"] == 3
    js = site.asset_script(keys[0], esm)
    assert js.startswith("(window.ICLRBENCH_ASSETS") and json.dumps(esm) in js


@pytest.mark.parametrize("slug", [pytest.param(s, marks=pytest.mark.xdist_group(s)) for s in paper_slugs()])
def test_every_paper_has_a_static_explorer_view(slug, smoke_result):
    """`static_view(result)` (or the first fig_* as a fallback) is a plotly figure; a real static view has client-side
    controls whose steps hold different data."""
    import plotly.graph_objects as go
    mod = load_paper(slug)
    try:
        fig, source = site.static_view_figure(mod, smoke_result(slug))
    except ValueError as e:
        pytest.skip(f"{slug}: no static view in the docs yet ({e}); add static_view(result) to the paper")
    assert isinstance(fig, go.Figure) and len(fig.data) > 0
    # the site draws from result.json, not from the live object: the view must survive the JSON round trip
    from iclrbench.core import Result
    again = Result.from_dict(json.loads(json.dumps(smoke_result(slug).to_dict())))
    fig2, source2 = site.static_view_figure(mod, again)
    assert source2 == source and len(fig2.data) == len(fig.data)
    if source in ("static_view", "explorer grid"):
        from static_view_checks import assert_static_view
        assert_static_view(fig)
    else:
        pytest.skip(f"{slug} has no static_view(result); the docs show {source}(result) (add static_view to the paper)")


def test_docs_command_rejects_bad_input_in_one_line(tmp_path):
    for args, msg in ((["docs", "--only", "no_such_paper"], "unknown paper 'no_such_paper'"),
                      (["docs", "--jobs", "0"], "jobs'"), (["docs", "--scale", "huge"], "'--scale'")):
        out = subprocess.run(CLI + args + ["--offline-html", "--out", str(tmp_path / "s")], capture_output=True, text=True,
                             cwd=ROOT, timeout=120)
        lines = [l for l in out.stderr.splitlines() if l.strip()]
        assert out.returncode == 2 and len(lines) == 1 and msg in lines[0], (args, out.stdout[-500:], out.stderr)
        assert not (tmp_path / "s").exists()


def test_docs_runs_nbdev_docs_where_quarto_is_installed(monkeypatch):
    from iclrbench.run import cli
    calls = []
    monkeypatch.setattr(site, "quarto_available", lambda: True)
    monkeypatch.setattr(site, "nbdev_docs", lambda: calls.append("nbdev-docs") or 0)
    monkeypatch.setattr(site, "build_site", lambda *a, **k: pytest.fail("the offline builder ran although Quarto is installed"))
    assert cli.main(["docs"]) == 0 and calls == ["nbdev-docs"]


# ---- the built site (notebooks run once per session, for a few papers) ------------------------------------

@pytest.fixture(scope="module")
def built():
    from site_build import built_site
    return built_site()


EXTERNAL = re.compile(r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)\s*=\s*[\"'](?:https?:)?//", re.I)
CDNS = ("cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com", "cdn.plot.ly", "fonts.googleapis.com")


@pytest.mark.slow
def test_site_front_page_is_the_claims_table(built):
    from site_build import site_papers
    index = (built.out / "index.html").read_text()
    n_claims = sum(len(load_paper(s).CLAIMS) for s in site_papers())
    rows = re.findall(r'<tr class="claim ([a-z-]+)" data-slug="([^"]+)" data-claim="([^"]+)">', index)
    assert len(rows) == n_claims, f"{len(rows)} claim rows for {n_claims} claims"
    assert {r[0] for r in rows} <= {"held", "not-held", "not-reproducible-offline", "not-checked-at-this-scale",
                                    "check-failed", "run-failed"}
    for slug in site_papers():
        assert f'href="papers/{slug}.html"' in index
        run = built.runs[slug]
        assert run.status == "ok", run.error
        row = re.search(rf'<tr class="run" data-slug="{slug}">(.*?)</tr>', index).group(1)
        assert f"{run.wall_s:.1f} s" in row and f"<td>{run.seed}</td>" in row and f"<td>{run.version}</td>" in row
    print(built.summary())


@pytest.mark.slow
def test_site_pages_need_nothing_from_outside(built):
    from site_build import site_papers
    pages = [built.out / "index.html"] + [built.out / "papers" / f"{s}.html" for s in site_papers()]
    for page in pages:
        html = page.read_text()
        assert not EXTERNAL.search(html), f"{page.name} loads {EXTERNAL.search(html).group(0)}"
        assert not any(c in html for c in CDNS), f"{page.name} names a CDN"
        for ref in re.findall(r'<(?:script|link)\b[^>]*\b(?:src|href)="([^"#]+)"', html):
            if ref.startswith("data:"): continue
            assert (page.parent / ref).resolve().exists(), f"{page.name} refers to missing {ref}"
    bundles = [p for p in built.out.rglob("*") if p.is_file() and p.stat().st_size > 1_000_000
               and b"plotly.js v" in p.read_bytes()[:2000]]
    assert [p.relative_to(built.out).as_posix() for p in bundles] == ["vendor/plotly.min.js"], "plotly.js ships once"


@pytest.mark.slow
def test_site_serves_the_fonts_the_widget_manager_css_names(built):
    "The widget manager's style sheet asks for `../webfonts/fa-*.woff2` from a page under papers/: every one exists."
    manager = built.out / "vendor" / "html-manager" / "embed-amd.js"
    if not manager.exists(): pytest.skip("widget manager not vendored (npm unavailable): " + "; ".join(built.warnings))
    names = set(re.findall(r"url\(\.\./webfonts/([\w.-]+\.woff2)\)", manager.read_text(encoding="utf-8")))
    assert names, "the vendored widget manager no longer names ../webfonts/: re-check where its fonts resolve"
    for name in names:
        assert (built.out / "papers" / ".." / "webfonts" / name).resolve().is_file(), f"webfonts/{name} is missing"


@pytest.mark.slow
def test_site_paper_pages_hold_figures_widget_state_and_static_view(built):
    from site_build import site_papers
    if not (built.out / "vendor" / "html-manager" / "embed-amd.js").exists():
        pytest.skip("widget manager not vendored (npm unavailable): " + "; ".join(built.warnings))
    for slug in site_papers():
        html = (built.out / "papers" / f"{slug}.html").read_text()
        assert len(html) < 3_000_000, f"{slug} page is {len(html) / 1e6:.1f} MB: a bundle is inlined"
        assert html.count("data-plotly-for=") >= 2, "the notebook's figures and the static view"
        assert f'id="static-view-{slug}"' in html
        assert "application/vnd.jupyter.widget-view+json" in html and site.WIDGET_STATE_MIME in html
        for key in set(re.findall(re.escape(site.ASSET_PREFIX) + r"([0-9a-f]+)", html)):
            assert f"vendor/widget-assets/{key}.js" in html and (built.out / "vendor" / "widget-assets" / f"{key}.js").exists()
        assert "#|" not in re.sub(r"<script.*?</script>", "", html, flags=re.S), "nbdev directives are stripped"
        assert "default_exp" not in html
        state = json.loads(re.search(r'<script type="application/vnd.jupyter.widget-state\+json">\s*(.*?)\s*</script>', html,
                                     re.S).group(1).replace("<\\/", "</"))
        figs = [m["state"] for m in state["state"].values() if "_widget_data" in m["state"]]
        assert figs and any(f["_widget_data"] for f in figs), "explorer figures carry their data in the saved state"
        assert all(f["_widget_layout"].get("title") for f in figs), "and their current layout (an empty figure keeps its title)"
    index = json.loads((built.out / "search-index.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    for slug in site_papers():
        assert any(e["u"].startswith(f"papers/{slug}.html") for e in index)
