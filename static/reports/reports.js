// Manager pages: charts (vendored Chart.js, no build step) and progress polling.
(function () {
  "use strict";
  function charts() {
    var node = document.getElementById("chart-data");
    if (!node || !window.Chart) return;
    var d = JSON.parse(node.textContent);
    if (document.documentElement.dataset.theme === "night") {
      // night theme (static/theme/night.css): axis and legend text legible on dark
      Chart.defaults.color = "#cfd6d2";
      Chart.defaults.borderColor = "rgba(255,255,255,.18)";
    }
    var green = "#0b4d2c", gold = "#e3b448";
    new Chart(document.getElementById("chart-days"), {
      data: {
        labels: d.days,
        datasets: [
          { type: "bar", label: "commission", data: d.commission, backgroundColor: green, order: 2 },
          { type: "line", label: "expected", data: d.expected, borderColor: "#a07400", pointRadius: 0, order: 1 },
          { type: "line", label: "95 % high", data: d.high, borderColor: gold, borderDash: [4, 3], pointRadius: 0, fill: false, order: 1 },
          { type: "line", label: "95 % low", data: d.low, borderColor: gold, borderDash: [4, 3], pointRadius: 0, fill: "-1", backgroundColor: "rgba(227,180,72,0.18)", order: 1 }
        ]
      },
      options: { animation: false, responsive: true, maintainAspectRatio: false,
                 plugins: { legend: { labels: { boxWidth: 12 } } } }
    });
    new Chart(document.getElementById("chart-tables"), {
      type: "bar",
      data: {
        labels: d.tables,
        datasets: [
          { label: "commission", data: d.table_commission, backgroundColor: green },
          { label: "expected", data: d.table_expected, backgroundColor: gold }
        ]
      },
      options: { animation: false, responsive: true, maintainAspectRatio: false, indexAxis: "y",
                 scales: { y: { ticks: { autoSkip: false } } },
                 plugins: { legend: { labels: { boxWidth: 12 } } } }
    });
  }
  function poll() {
    var rows = document.querySelectorAll("[data-job],[data-run]");
    var q = [], live = false;
    rows.forEach(function (el) {
      if (el.dataset.job) q.push("job=" + el.dataset.job);
      if (el.dataset.run) q.push("run=" + el.dataset.run);
      if (el.dataset.live !== "" || el.tagName === "TR") live = true;
    });
    if (!q.length || !live) return;
    fetch("/reports/progress.json?" + q.join("&"), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        var again = false;
        data.jobs.concat(data.runs.map(function (r) { r.run = true; r.rows = r.coups; return r; }))
          .forEach(function (j) {
            var el = document.querySelector(j.run ? "[data-run='" + j.id + "']" : "[data-job='" + j.id + "']");
            if (!el) return;
            var bar = el.querySelector(".bar > span"), pct = el.querySelector(".pct");
            var rowsEl = el.querySelector(".rows"), st = el.querySelector(".status");
            if (bar) bar.style.width = j.percent + "%";
            if (pct) pct.textContent = j.percent;
            if (rowsEl) rowsEl.textContent = j.rows;
            var expEl = el.querySelector(".expected");
            if (expEl && j.rows_expected) expEl.textContent = j.rows_expected;
            if (st) { st.textContent = j.status; st.className = "status " + j.status; }
            if (j.status === "queued" || j.status === "running") again = true;
            else if (el.dataset.live) { window.location.reload(); }
          });
        if (again) setTimeout(poll, 1500);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  document.addEventListener("DOMContentLoaded", function () { charts(); setTimeout(poll, 1000); });
})();
