// Renders each plot when it scrolls into view; the specifications are JSON in the page.
(function () {
  "use strict";
  function render(el) {
    if (el.dataset.rendered) return;
    el.dataset.rendered = "pending";
    var spec = JSON.parse(document.getElementById(el.dataset.plot).textContent);
    window.Plotly.newPlot(el, spec.data, spec.layout,
                          {displaylogo: false, responsive: true})
      .then(function () { el.dataset.rendered = "1"; });
  }
  function start() {
    var plots = document.querySelectorAll("[data-plot]");
    if (!("IntersectionObserver" in window)) { plots.forEach(render); return; }
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { observer.unobserve(entry.target); render(entry.target); }
      });
    }, {rootMargin: "300px"});
    plots.forEach(function (el) { observer.observe(el); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
