// sbredis dashboard: live counts and rate charts (polls the JSON endpoint named by <body data-poll>),
// and "select all" for message lists. Plain JavaScript, no library, nothing loaded from elsewhere.
"use strict";
(function () {
  var HISTORY = 60; // points per chart: two minutes at the default two-second poll
  var series = { sent: [], completed: [], dead_lettered: [] };
  var rowsByName = {}; // entity name -> the elements showing its counts, found once (a poll updates a thousand rows)

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
      (rowsByName[ent.name] || []).forEach(function (row) {
        Object.keys(ent.counts).forEach(function (k) {
          var cell = row.querySelector('[data-count="' + k + '"]');
          if (cell && !cell.closest("tbody tr:not([data-entity])")) {
            setText(cell, k === "size" ? size(ent.counts[k]) : String(ent.counts[k]));
          }
        });
        var meter = row.querySelector(".quota meter");
        if (meter && ent.fill !== undefined) {
          var pct = (100 * ent.fill).toFixed(1);
          if (meter.getAttribute("value") !== pct) {
            meter.setAttribute("value", pct);
            meter.setAttribute("aria-label", pct + "% of the quota");
          }
        }
        Object.keys(ent.rates || {}).forEach(function (k) {
          setText(row.querySelector('[data-rate="' + k + '"]'), String(ent.rates[k]));
        });
      });
    });
    document.body.setAttribute("data-updated", String(data.time));
  }

  var COLUMNS = ["active", "locked", "deferred", "scheduled", "dead_letter", "transfer", "transfer_dead_letter"];

  function togglePartitions(button) {
    var row = button.closest("tr");
    var open = row.nextElementSibling && row.nextElementSibling.classList.contains("partitions");
    if (open) {
      row.parentNode.removeChild(row.nextElementSibling);
      button.setAttribute("aria-expanded", "false");
      return;
    }
    var name = button.getAttribute("data-partitions");
    fetch("/api/overview?entity=" + encodeURIComponent(name), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        var ent = data.entities[0];
        if (!ent) return;
        var detail = document.createElement("tr");
        detail.className = "partitions";
        var cell = document.createElement("td");
        cell.colSpan = row.children.length;
        var table = document.createElement("table");
        table.className = "grid inner";
        var head = table.createTHead().insertRow();
        ["Partition", "Node"].concat(COLUMNS).concat(["Size"]).forEach(function (h) {
          var th = document.createElement("th");
          th.textContent = h.replace(/_/g, " ");
          head.appendChild(th);
        });
        var body = table.createTBody();
        ent.partitions.forEach(function (p) {
          var tr = body.insertRow();
          [p.id + (p.reachable ? "" : " (unreachable)"), p.node].concat(COLUMNS.map(function (k) { return p[k]; }))
            .concat([size(p.size)]).forEach(function (v) { tr.insertCell().textContent = String(v); });
        });
        cell.appendChild(table);
        detail.appendChild(cell);
        row.parentNode.insertBefore(detail, row.nextSibling);
        button.setAttribute("aria-expanded", "true");
      });
  }

  function poll(url, every) {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) { if (data) update(data); })
      .catch(function () { /* the next poll retries */ })
      .then(function () { setTimeout(function () { poll(url, every); }, every); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-entity]").forEach(function (el) {
      var name = el.getAttribute("data-entity");
      (rowsByName[name] = rowsByName[name] || []).push(el);
    });
    var url = document.body.getAttribute("data-poll");
    if (url) poll(url, Number(document.body.getAttribute("data-poll-ms") || 2000));
    // a row's partitions (with the node holding each), fetched when asked for: the overview itself
    // carries only the sums, so a thousand 16-partition entities stay a light page
    document.querySelectorAll("button[data-partitions]").forEach(function (button) {
      button.addEventListener("click", function () { togglePartitions(button); });
    });
    var all = document.querySelector("[data-select-all]");
    if (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll('input[name="seq"]').forEach(function (box) { box.checked = all.checked; });
      });
    }
  });
})();
