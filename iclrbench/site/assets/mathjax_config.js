// MathJax 3, plus the one MathJax 2 call the widget manager makes (`MathJax.Hub.Queue(["Typeset", Hub, el])`).
// The vendored scripts' path (the placeholder below) is filled in per page by iclrbench.site.builder.
(function () {
  var hub = {Queue: function (job) {
    var el = job && job[2];
    if (window.MathJax && MathJax.typesetPromise) MathJax.typesetPromise(el ? [el] : undefined).catch(function (e) { console.warn(e); });
  }};
  window.MathJax = {Hub: hub, tex: {inlineMath: [['$', '$'], ['\\(', '\\)']], displayMath: [['$$', '$$'], ['\\[', '\\]']],
    processEscapes: true, processEnvironments: true, tags: 'ams'}, loader: {paths: {mathjax: '__VENDOR__mathjax'}},
    chtml: {fontURL: '__VENDOR__mathjax/output/chtml/fonts/woff-v2'},
    startup: {ready: function () { MathJax.startup.defaultReady(); MathJax.Hub = hub; }}};
}());
