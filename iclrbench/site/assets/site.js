// The docs site's script: draws the plotly figures from their JSON and runs the search box.
(function () {
  function drawFigures() {
    if (!window.Plotly) { console.error("iclrbench: plotly.js did not load"); return; }
    document.querySelectorAll('script[data-plotly-for]').forEach(function (tag) {
      var el = document.getElementById(tag.getAttribute("data-plotly-for"));
      if (!el || el.getAttribute("data-drawn")) return;
      var spec = JSON.parse(tag.textContent);
      var config = Object.assign({responsive: true, displaylogo: false}, spec.config || {});
      Plotly.newPlot(el, spec.data, spec.layout, config).then(function () {
        if (spec.frames && spec.frames.length) Plotly.addFrames(el, spec.frames);
        el.setAttribute("data-drawn", "1");
      });
    });
  }
  function search() {
    var box = document.getElementById("site-search-input"), list = document.getElementById("site-search-results");
    if (!box || !window.ICLRBENCH_SEARCH) return;
    var root = document.body.getAttribute("data-site-root") || "";
    box.addEventListener("input", function () {
      var terms = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      list.innerHTML = "";
      if (!terms.length) { list.hidden = true; return; }
      var hits = [];
      window.ICLRBENCH_SEARCH.forEach(function (e) {
        var hay = (e.t + " " + e.h + " " + e.x).toLowerCase(), score = 0;
        for (var i = 0; i < terms.length; i++) {
          if (hay.indexOf(terms[i]) < 0) return;
          score += (e.h.toLowerCase().indexOf(terms[i]) >= 0 ? 3 : 0) + (e.t.toLowerCase().indexOf(terms[i]) >= 0 ? 2 : 0) + 1;
        }
        hits.push([score, e]);
      });
      hits.sort(function (a, b) { return b[0] - a[0]; });
      hits.slice(0, 25).forEach(function (h) {
        var e = h[1], li = document.createElement("li"), a = document.createElement("a");
        a.href = root + e.u; a.textContent = e.h || e.t;
        var s = document.createElement("small"), i = e.x.toLowerCase().indexOf(terms[0]);
        s.textContent = e.t + " — " + e.x.slice(Math.max(0, i - 40), i + 80);
        a.appendChild(s); li.appendChild(a); list.appendChild(li);
      });
      if (!hits.length) { var li = document.createElement("li"); li.textContent = "no match"; li.style.padding = "6px 10px"; list.appendChild(li); }
      list.hidden = false;
    });
    document.addEventListener("click", function (ev) { if (!ev.target.closest(".site-search")) list.hidden = true; });
  }
  document.addEventListener("DOMContentLoaded", function () { drawFigures(); search(); });
}());
