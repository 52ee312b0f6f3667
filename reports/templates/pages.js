// Renders each plot when it scrolls into view (or its folded section opens); the
// specifications are JSON in the page.
(function () {
  "use strict";
  var config = {displaylogo: false, responsive: true, displayModeBar: "hover",
                modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"]};
  // Chromium keeps about 16 WebGL contexts per page and counts a context until it is
  // lost or garbage-collected: a plot turned into a picture lets go of its context at
  // once (release), not when the collector gets to it, so scrolling through many
  // surfaces never makes the browser drop a live plot's.  Contexts are recorded as they
  // are made, so that releasing one never creates another.
  var contextOf = new WeakMap(), getContext = HTMLCanvasElement.prototype.getContext;
  HTMLCanvasElement.prototype.getContext = function (kind) {
    var context = getContext.apply(this, arguments);
    if (context && /webgl/.test(kind)) contextOf.set(this, context);
    return context;
  };
  function release(canvases) {
    canvases.forEach(function (canvas) {
      var gl = contextOf.get(canvas);
      contextOf.delete(canvas);
      var lose = gl && !gl.isContextLost() && gl.getExtension("WEBGL_lose_context");
      if (lose) lose.loseContext();
    });
  }
  var webgl = (function () {
    try {
      var canvas = document.createElement("canvas");
      var found = !!(canvas.getContext("webgl") || canvas.getContext("experimental-webgl"));
      release([canvas]);
      return found;
    } catch (e) { return false; }
  })();
  // One plot per frame, so the first appears at once and scrolling stays smooth.
  var queue = [], busy = false;
  function done(el) {
    el.dataset.rendered = "1";
    busy = false;
    window.requestAnimationFrame(drain);
  }
  // A 3-D plot holds a WebGL context, and a browser keeps only about 16 per page (it
  // drops the oldest, leaving a blank plot): past LIVE_3D, the plot drawn longest ago is
  // kept as a picture of itself, which turns back into a live plot when clicked.
  var LIVE_3D = 6, live3d = [];
  function freeze(el) {
    return window.Plotly.toImage(el, {format: "png", width: el.clientWidth || 500,
                                      height: el.clientHeight || 420}).then(function (url) {
      var canvases = Array.prototype.slice.call(el.querySelectorAll("canvas"));
      window.Plotly.purge(el);
      release(canvases);
      el.textContent = "";
      var img = document.createElement("img");
      img.className = "snapshot";
      img.src = url;
      img.alt = img.title = "3-D surface (a picture): click to turn it";
      img.addEventListener("click", function () {
        el.textContent = "";
        el.dataset.rendered = "";
        render(el);
      });
      el.appendChild(img);
    });
  }
  function drawn(el) {
    if (!el.dataset.webgl) return Promise.resolve();
    live3d.push(el);
    return live3d.length > LIVE_3D ? freeze(live3d.shift()) : Promise.resolve();
  }
  function drain() {
    if (busy || !queue.length) return;
    busy = true;
    var el = queue.shift();
    if (el.dataset.webgl && !webgl) {
      el.classList.add("no-webgl");
      el.textContent = "This browser cannot draw 3-D plots (no WebGL): see the heat map beside it.";
      done(el);
      return;
    }
    // A plot that cannot be drawn says so in its place, and the plots after it are drawn
    // (one failure used to leave the queue busy for ever, and every later plot blank).
    (el.dataset.webgl ? fullBundle() : Promise.resolve())
      .then(function () {
        var spec = JSON.parse(document.getElementById(el.dataset.plot).textContent);
        return window.Plotly.newPlot(el, spec.data, spec.layout, config);
      })
      .then(function () {
        return drawn(el).catch(function (error) {
          console.error("a 3-D plot not turned into a picture: " + error);
        });
      }, function (error) {
        console.error("plot " + el.dataset.plot + " not drawn: " + error);
        el.classList.add("plot-failed");
        el.textContent = "This plot could not be drawn (" + error + ").";
      })
      .then(function () { done(el); });
  }
  // A page opens with the cartesian plotly bundle (2-D plots, a third of the full one's
  // size) unless 3-D surfaces are on its first screen; the first 3-D plot opened further
  // down loads the full bundle, once, and every later plot is drawn with it.
  var FULL = "plotly.min.js", loading = null;
  function fullBundle() {
    if (!loading) {
      var have = document.querySelector('script[src$="/' + FULL + '"]');
      loading = have ? Promise.resolve() : new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = "assets/" + FULL;
        script.onload = resolve;
        script.onerror = function () { reject(new Error("cannot load assets/" + FULL)); };
        document.head.appendChild(script);
      });
    }
    return loading;
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
    // A plot inside a closed <details> is not visible: it is observed, and renders
    // when the section opens and it scrolls into view.
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { observer.unobserve(entry.target); render(entry.target); }
      });
    }, {rootMargin: "300px"});
    plots.forEach(function (el) { observer.observe(el); });
  }
  // A link to one figure's chart (the banner's, the CLI's) opens its folded section.
  function openTarget() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
    }
    if (target) target.scrollIntoView();
  }
  window.addEventListener("hashchange", openTarget);
  function ready() { openTarget(); start(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
