// sbredis dashboard: live counts and rate charts (polls the JSON endpoint named by <body data-poll>),
// and "select all" for message lists. Plain JavaScript, no library, nothing loaded from elsewhere.
"use strict";
(function () {
  var HISTORY = 60; // points per chart: two minutes at the default two-second poll
  var series = { sent: [], completed: [], dead_lettered: [] };

  function draw(name) {
    var svg = document.querySelector('svg[data-chart="' + name + '"]');
    if (!svg) return;
    var values = series[name];
    var max = Math.max.apply(null, values.concat([1]));
    var step = 200 / (HISTORY - 1);
    var offset = HISTORY - values.length;
    var points = values.map(function (v, i) {
      return ((offset + i) * step).toFixed(1) + "," + (38 - (v / max) * 36).toFixed(1);
    });
    svg.querySelector("polyline").setAttribute("points", points.join(" "));
    svg.setAttribute("data-points", String(values.length));
  }

  function setText(el, text) {
    if (el && el.textContent !== text) el.textContent = text;
  }

  function size(n) {
    var units = ["B", "KiB", "MiB", "GiB"];
    for (var i = 0; i < units.length; i++) {
      if (n < 1024 || i === units.length - 1) return i === 0 ? n + " B" : n.toFixed(1) + " " + units[i];
      n = n / 1024;
    }
  }

  function update(data) {
    Object.keys(series).forEach(function (k) {
      series[k].push(data.totals[k] || 0);
      if (series[k].length > HISTORY) series[k].shift();
      setText(document.querySelector('[data-rate-total="' + k + '"]'), String(data.totals[k] || 0));
      draw(k);
    });
    data.entities.forEach(function (ent) {
      var rows = document.querySelectorAll('[data-entity="' + CSS.escape(ent.name) + '"]');
      rows.forEach(function (row) {
        Object.keys(ent.counts).forEach(function (k) {
          var cell = row.querySelector('[data-count="' + k + '"]');
          if (cell && !cell.closest("tbody tr:not([data-entity])")) {
            setText(cell, k === "size" ? size(ent.counts[k]) : String(ent.counts[k]));
          }
        });
        Object.keys(ent.rates || {}).forEach(function (k) {
          setText(row.querySelector('[data-rate="' + k + '"]'), String(ent.rates[k]));
        });
      });
    });
    document.body.setAttribute("data-updated", String(data.time));
  }

  function poll(url, every) {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) { if (data) update(data); })
      .catch(function () { /* the next poll retries */ })
      .then(function () { setTimeout(function () { poll(url, every); }, every); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var url = document.body.getAttribute("data-poll");
    if (url) poll(url, Number(document.body.getAttribute("data-poll-ms") || 2000));
    var all = document.querySelector("[data-select-all]");
    if (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll('input[name="seq"]').forEach(function (box) { box.checked = all.checked; });
      });
    }
  });
})();
