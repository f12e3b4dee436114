// Puts each deduplicated anywidget module back into the saved widget state before the HTML manager reads it.
// The asset prefix and the widget-state MIME type (the two placeholders below) are filled in by iclrbench.site.builder.
document.addEventListener("DOMContentLoaded", function () {
  var store = window.ICLRBENCH_ASSETS || {}, prefix = "__ASSET_PREFIX__";
  document.querySelectorAll('script[type="__WIDGET_STATE_MIME__"]').forEach(function (tag) {
    if (tag.textContent.indexOf(prefix) < 0) return;
    var state = JSON.parse(tag.textContent), models = state.state || {};
    Object.keys(models).forEach(function (id) {
      var s = models[id].state || {};
      ["_esm", "_css"].forEach(function (k) {
        if (typeof s[k] === "string" && s[k].indexOf(prefix) === 0) {
          var key = s[k].slice(prefix.length);
          if (key in store) s[k] = store[key]; else console.error("iclrbench: widget asset " + key + " is missing");
        }
      });
    });
    tag.textContent = JSON.stringify(state);
  });
});
