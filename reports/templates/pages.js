// Renders each plot when it scrolls into view; the specifications are JSON in the page.
(function () {
  "use strict";
  // One plot per frame, so the first appears at once and scrolling stays smooth.
  var queue = [], busy = false;
  function drain() {
    if (busy || !queue.length) return;
    busy = true;
    var el = queue.shift();
    var spec = JSON.parse(document.getElementById(el.dataset.plot).textContent);
    window.Plotly.newPlot(el, spec.data, spec.layout, {displaylogo: false, responsive: true})
      .then(function () {
        el.dataset.rendered = "1";
        busy = false;
        window.requestAnimationFrame(drain);
      });
  }
  function render(el) {
    if (el.dataset.rendered) return;
    el.dataset.rendered = "pending";
    queue.push(el);
    drain();
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
