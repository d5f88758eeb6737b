// Surveillance charts (vendored Chart.js, no build step): the croupiers'
// funnel, each table's CUSUM path against its limit, a flag's evidence; and
// the progress of a running run.
(function () {
  "use strict";
  var night = document.documentElement.dataset.theme === "night";
  var ink = night ? "#f4f1ea" : "#1d1d1d";
  var green = night ? "#8ee6b0" : "#0b4d2c", gold = "#e3b448", red = night ? "#ff8a8a" : "#b3261e";
  function setup() {
    if (!window.Chart) return false;
    if (night) {
      // night theme (static/theme/night.css): axis and legend text legible on dark
      Chart.defaults.color = "#cfd6d2";
      Chart.defaults.borderColor = "rgba(255,255,255,.18)";
    }
    return true;
  }
  function pairs(xs, ys) {
    var out = [];
    for (var i = 0; i < xs.length; i++) if (ys[i] !== null && ys[i] !== undefined) out.push({ x: xs[i], y: ys[i] });
    return out;
  }
  function limitLine(label, xs, ys, color, dash) {
    return { type: "line", label: label, data: pairs(xs, ys), borderColor: color, borderDash: dash,
             pointRadius: 0, borderWidth: 1.5, fill: false, stepped: false };
  }
  function funnel(canvas, f, mark) {
    var pts = (f.points || []).map(function (p) { return { x: p.n, y: p.rate, label: p.label || p.subject }; });
    var sets = [
      { type: "scatter", label: canvas.dataset.pointsLabel || "croupiers", data: pts,
        backgroundColor: green, pointRadius: 4, order: 0 },
      limitLine("95 %", f.n, f.hi95, gold, [4, 3]),
      limitLine("95 %", f.n, f.lo95, gold, [4, 3]),
      limitLine("99.8 %", f.n, f.hi998, red, [2, 2]),
      limitLine("99.8 %", f.n, f.lo998, red, [2, 2])
    ];
    if (mark && mark.n) sets.unshift({ type: "scatter", label: canvas.dataset.markLabel || "subject",
      data: [{ x: mark.n, y: mark.rate }], backgroundColor: red, pointRadius: 8, pointStyle: "rectRot", order: -1 });
    return new Chart(canvas, {
      data: { datasets: sets },
      options: { animation: false, responsive: true, maintainAspectRatio: false,
        scales: { x: { type: "logarithmic", title: { display: true, text: canvas.dataset.xLabel || "coups" } },
                  y: { min: 0, title: { display: true, text: canvas.dataset.yLabel || "rate" } } },
        plugins: { legend: { labels: { boxWidth: 12, filter: function (item, data) {
          // one legend entry per pair of limits
          return data.datasets.findIndex(function (d) { return d.label === item.text; }) === item.datasetIndex;
        } } },
          tooltip: { callbacks: { label: function (c) {
            var r = c.raw || {}; return (r.label ? r.label + ": " : "") + r.x + ", " + (r.y * 100).toFixed(2) + " %";
          } } } } }
    });
  }
  function cusum(canvas, c) {
    var limit = c.labels ? c.limit : c.limit;
    var labels = c.day || c.labels || [];
    var values = c.y || c.values || [];
    // a tick at the first point of each gaming day (at most 8 of them), so a
    // path of one night does not repeat its date under every point
    var firsts = [];
    labels.forEach(function (d, i) { if (!i || labels[i - 1] !== d) firsts.push(i); });
    var step = Math.ceil(firsts.length / 8), shown = {};
    firsts.forEach(function (i, k) { if (k % step === 0) shown[i] = true; });
    return new Chart(canvas, {
      type: "line",
      data: { labels: labels, datasets: [
        { label: "CUSUM", data: values, borderColor: green, pointRadius: 0, borderWidth: 1.5, fill: false },
        { label: canvas.dataset.limitLabel || "limit", data: labels.map(function () { return limit; }),
          borderColor: red, borderDash: [5, 4], pointRadius: 0, borderWidth: 1.5, fill: false }
      ] },
      options: { animation: false, responsive: true, maintainAspectRatio: false,
        scales: { x: { ticks: { autoSkip: false, maxRotation: 0, callback: function (v, i) {
                    return shown[i] ? labels[i] : null; } } }, y: { min: 0 } },
        plugins: { legend: { display: canvas.dataset.legend === "1", labels: { boxWidth: 12 } } } }
    });
  }
  function bars(canvas, c) {
    return new Chart(canvas, {
      data: { labels: c.labels, datasets: [
        { type: "bar", label: canvas.dataset.observedLabel || "observed", data: c.observed, backgroundColor: green, order: 2 },
        { type: "line", label: canvas.dataset.expectedLabel || "expected", data: c.expected, borderColor: gold,
          backgroundColor: gold, pointRadius: 3, borderWidth: 2, order: 1 }
      ] },
      options: { animation: false, responsive: true, maintainAspectRatio: false,
        scales: { y: { beginAtZero: true } }, plugins: { legend: { labels: { boxWidth: 12 } } } }
    });
  }
  function draw() {
    if (!setup()) return;
    var page = document.getElementById("surveillance-data");
    if (page) {
      var d = JSON.parse(page.textContent);
      var f = document.getElementById("chart-funnel");
      if (f && d.funnel && d.funnel.n) f.chart = funnel(f, d.funnel);
      (d.cusums || []).forEach(function (c) {
        var el = document.getElementById("cusum-" + (c.key || c.table));
        if (el) el.chart = cusum(el, c);
      });
    }
    var ev = document.getElementById("evidence-data");
    if (ev) {
      var c = JSON.parse(ev.textContent), el = document.getElementById("chart-evidence");
      if (el && c) {
        if (c.type === "funnel") el.chart = funnel(el, c, c.subject);
        else if (c.type === "cusum") el.chart = cusum(el, c);
        else if (c.type === "bars") el.chart = bars(el, c);
      }
    }
  }
  function poll() {
    var el = document.querySelector("[data-run][data-live='1']");
    if (!el) return;
    fetch(el.dataset.progress + "?run=" + el.dataset.run, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        var r = data.runs[0];
        if (!r) return;
        var bar = el.querySelector(".bar > span"), pct = el.querySelector(".pct"), st = el.querySelector(".status");
        var stage = el.querySelector(".stage");
        if (bar) bar.style.width = r.percent + "%";
        if (pct) pct.textContent = r.percent;
        if (stage) stage.textContent = r.stage;
        if (st) { st.textContent = r.status; st.className = "status " + r.status; }
        if (r.status === "queued" || r.status === "running") setTimeout(poll, 1500);
        else window.location.reload();
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  document.addEventListener("DOMContentLoaded", function () { draw(); setTimeout(poll, 1000); });
  window.surveillanceCharts = { funnel: funnel, cusum: cusum, bars: bars, ink: ink };
})();
