// The report's script: sorting and filtering tables, a function's charts,
// the anomaly list and one anomaly's detail (call stack, timeline, messages,
// counters), reachable by a link with its event id in the URL fragment
// (#anomaly=PID:RANK:STEP:IDX). It reads the JSON document embedded in the
// page (#report-data) and never makes a request.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function svgEl(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  function fmt(v) {
    if (typeof v !== "number" || !isFinite(v)) { return "–"; }
    if (Number.isInteger(v)) { return v.toLocaleString("en-US"); }
    return Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(3);
  }

  // Sortable tables: the first click sorts descending, the next ascending.
  function sortBy(table, th) {
    var key = th.getAttribute("data-key");
    var numeric = th.getAttribute("data-type") === "number";
    var dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
    table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var value = function (r) {
      var c = r.querySelector('td[data-key="' + key + '"]');
      return c ? c.getAttribute("data-value") : "";
    };
    rows.sort(function (a, b) {
      var x = value(a), y = value(b);
      var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      if (isNaN(c)) { c = 0; }
      return dir === "ascending" ? c : -c;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    body.appendChild(frag);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th[data-key]").forEach(function (th) {
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(table, th); } });
    });
  });

  // Over time: the chart of the chosen rank.
  var rankSelect = document.getElementById("rank-select");
  if (rankSelect) {
    rankSelect.addEventListener("change", function () {
      document.querySelectorAll("[data-rank-chart]").forEach(function (d) {
        d.hidden = d.getAttribute("data-rank-chart") !== rankSelect.value;
      });
    });
  }

  if (data.kind !== "tau") { return; }

  var names = new Map(data.functions.map(function (f) { return [f[0], f[1]]; }));
  var fname = function (fid) { return names.has(fid) ? names.get(fid) : "<function " + fid + ">"; };

  // Functions: filter by name; a row shows the function's charts.
  var ftable = document.getElementById("function-table");
  var ffilter = document.getElementById("function-filter");
  if (ffilter) {
    ffilter.addEventListener("input", function () {
      var q = ffilter.value.toLowerCase();
      Array.prototype.forEach.call(ftable.tBodies[0].rows, function (r) {
        var n = r.querySelector('td[data-key="name"]').getAttribute("data-value").toLowerCase();
        r.hidden = q !== "" && n.indexOf(q) < 0;
      });
    });
  }
  if (ftable) {
    ftable.tBodies[0].addEventListener("click", function (e) {
      var row = e.target.closest("tr[data-fid]");
      if (!row) { return; }
      var fid = row.getAttribute("data-fid");
      var panel = document.getElementById("function-detail");
      panel.querySelector('[data-role="function-name"]').textContent = fname(Number(fid));
      var charts = panel.querySelector(".charts");
      var svgs = data.func_charts[fid];
      charts.innerHTML = svgs ? svgs.join("") :
        "<p class=\"note\">No charts for this function: they are drawn for the functions with anomalies and the most called ones.</p>";
      panel.hidden = false;
      Array.prototype.forEach.call(ftable.querySelectorAll("tr.selected"), function (r) { r.classList.remove("selected"); });
      row.classList.add("selected");
    });
  }

  // Anomalies: worst first, a page at a time, filterable.
  var A = data.anomalies.columns;
  var n = A.event_id ? A.event_id.length : 0;
  var byId = new Map();
  for (var i = 0; i < n; i++) { byId.set(A.event_id[i], i); }
  var runtimeKey = data.runtime === "inclusive" ? "inclusive_us" : "exclusive_us";
  var atable = document.getElementById("anomaly-table");
  var more = document.getElementById("anomaly-more");
  var afilter = document.getElementById("anomaly-filter");
  var PAGE = 500;
  var matching = [], shown = 0;

  function anomalyRow(i) {
    var tr = el("tr", { "data-event-id": A.event_id[i] });
    [A.event_id[i], fname(A.fid[i]), data.ranks[A.rank[i]], A.thread[i], A.step[i], fmt(A[runtimeKey][i]), fmt(A.score[i])]
      .forEach(function (v) { tr.appendChild(el("td", {}, String(v))); });
    return tr;
  }
  function renderMore() {
    var body = atable.tBodies[0];
    var frag = document.createDocumentFragment();
    var end = Math.min(matching.length, shown + PAGE);
    for (var k = shown; k < end; k++) { frag.appendChild(anomalyRow(matching[k])); }
    body.appendChild(frag);
    shown = end;
    more.hidden = shown >= matching.length;
    more.textContent = "show more (" + (matching.length - shown) + " left)";
  }
  function applyFilter() {
    var q = afilter ? afilter.value.toLowerCase() : "";
    matching = [];
    for (var k = 0; k < n; k++) {
      if (q === "" || fname(A.fid[k]).toLowerCase().indexOf(q) >= 0 ||
          String(data.ranks[A.rank[k]]).toLowerCase().indexOf(q) >= 0 ||
          A.event_id[k].indexOf(q) >= 0) {
        matching.push(k);
      }
    }
    atable.tBodies[0].textContent = "";
    shown = 0;
    renderMore();
  }
  if (atable) {
    applyFilter();
    more.addEventListener("click", renderMore);
    if (afilter) { afilter.addEventListener("input", applyFilter); }
    atable.tBodies[0].addEventListener("click", function (e) {
      var row = e.target.closest("tr[data-event-id]");
      if (row) { openAnomaly(row.getAttribute("data-event-id"), true); }
    });
  }

  // One anomaly.
  function factsRow(table, k, v) {
    var tr = el("tr");
    tr.appendChild(el("th", {}, k));
    tr.appendChild(el("td", {}, v));
    table.appendChild(tr);
  }
  function timeline(i, det) {
    var W = 900, left = 150, right = 20, rowH = 18;
    var id = A.event_id[i];
    var entry = A.entry[i], exit = entry + A.inclusive_us[i];
    var bars = [];
    if (det) {
      det.frames.slice().reverse().forEach(function (f, depth) {
        bars.push({ row: depth, fid: f[1], a: f[2], b: f[3] || null, id: f[4], bad: f[4] === id, label: depth === 0 ? "call stack" : "" });
      });
      var wrow = bars.length;
      det.window.forEach(function (w) {
        bars.push({ row: wrow, fid: w[1], a: w[2], b: w[3] || null, id: w[5], bad: w[4] === 1 || w[5] === id, label: "window" });
      });
    } else {
      bars.push({ row: 0, fid: A.fid[i], a: entry, b: exit, id: id, bad: true, label: "" });
    }
    // Zoomed on the anomaly, its window on the thread and its messages: an
    // ancestor that runs longer (main, a time step) is clipped at the edges
    // and marked so, rather than shrinking the anomaly to a sliver.
    var lo = entry, hi = exit;
    bars.forEach(function (b) {
      if (b.label === "window") { lo = Math.min(lo, b.a); hi = Math.max(hi, b.b || exit); }
    });
    if (det) { det.comms.forEach(function (m) { lo = Math.min(lo, m[5]); hi = Math.max(hi, m[5]); }); }
    if (hi <= lo) { hi = lo + 1; }
    var pad = (hi - lo) * 0.04;
    lo -= pad; hi += pad;
    var x = function (t) { return left + (W - left - right) * (t - lo) / (hi - lo); };
    var rows = Math.max.apply(null, bars.map(function (b) { return b.row; })) + 1;
    var H = 40 + rows * (rowH + 4) + 30;
    var svg = svgEl("svg", { id: "anomaly-timeline", width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" });
    var lane = svgEl("text", { x: 4, y: 16, "font-size": 12, "font-weight": "bold" });
    lane.textContent = "thread " + A.thread[i] + " of " + data.ranks[A.rank[i]];
    svg.appendChild(lane);
    var seen = {};
    bars.forEach(function (b) {
      var y = 28 + b.row * (rowH + 4);
      if (b.label && !seen[b.row]) {
        seen[b.row] = true;
        var t = svgEl("text", { x: 4, y: y + 13, "font-size": 11, fill: "#5b6576" });
        t.textContent = b.label;
        svg.appendChild(t);
      }
      var end = b.b || Infinity;
      var cutLeft = b.a < lo, cutRight = end > hi;
      var x0 = x(Math.max(b.a, lo)), x1 = x(Math.min(end, hi));
      var attrs = {
        x: x0, y: y, width: Math.max(1, x1 - x0), height: rowH, rx: 2,
        fill: b.bad ? "#d62728" : "#8da0cb", stroke: b.id === id ? "#000" : "none",
        "stroke-width": b.id === id ? 2 : 0, "data-event-id": b.id
      };
      if (cutLeft || cutRight) {
        attrs["data-clipped"] = cutLeft && cutRight ? "both" : (cutLeft ? "left" : "right");
        attrs["fill-opacity"] = 0.6;
      }
      var r = svgEl("rect", attrs);
      var title = svgEl("title");
      title.textContent = fname(b.fid) + " [" + b.id + "] " + fmt(b.b ? b.b - b.a : NaN) + " µs" + (b.b ? "" : " (still running)") +
        (cutLeft || cutRight ? " (clipped: it runs from " + fmt(b.a - data.t0) + " to " + (b.b ? fmt(b.b - data.t0) : "beyond the step") + " µs)" : "");
      r.appendChild(title);
      svg.appendChild(r);
      // A clipped side is drawn as a zigzag edge.
      [[cutLeft, x0], [cutRight, x1]].forEach(function (c) {
        if (!c[0]) { return; }
        var xe = c[1], d = "M" + xe + " " + y;
        for (var k = 1; k <= 4; k++) { d += " L" + (xe + (k % 2 ? -4 : 0)) + " " + (y + k * rowH / 4); }
        svg.appendChild(svgEl("path", { d: d, stroke: "#fff", "stroke-width": 2, fill: "none", "pointer-events": "none" }));
      });
      if (x1 - x0 > 60) {
        var t2 = svgEl("text", { x: x0 + 3, y: y + 13, "font-size": 11, fill: "#fff" });
        t2.textContent = fname(b.fid).slice(0, Math.floor((x1 - x0) / 7));
        t2.setAttribute("pointer-events", "none");
        svg.appendChild(t2);
      }
    });
    if (det) {
      var yb = 28 + rows * (rowH + 4);
      det.comms.forEach(function (m) {
        var xm = x(m[5]);
        var send = m[0] === 0;
        var line = svgEl("path", {
          d: send ? "M" + xm + " " + (yb + 14) + " L" + xm + " " + yb + " l-4 6 m4 -6 l4 6"
                  : "M" + xm + " " + yb + " L" + xm + " " + (yb + 14) + " l-4 -6 m4 6 l4 -6",
          stroke: send ? "#2ca02c" : "#ff7f0e", "stroke-width": 2, fill: "none", "data-execution": m[6]
        });
        var t = svgEl("title");
        t.textContent = (send ? "SEND to " + m[2] : "RECV from " + m[1]) + ", " + (m[3] === null ? "? bytes" : m[3] + " bytes") + ", tag " + m[4];
        line.appendChild(t);
        svg.appendChild(line);
      });
    }
    var axis = svgEl("text", { x: left, y: H - 6, "font-size": 11, fill: "#5b6576" });
    axis.textContent = "µs from " + fmt(lo - data.t0) + " to " + fmt(hi - data.t0) + " after the run's first event; red: anomalous; outlined: this one; arrows: messages; zigzag: runs on";
    svg.appendChild(axis);
    return svg;
  }
  function openAnomaly(id, setHash) {
    if (!byId.has(id)) { return false; }
    var i = byId.get(id);
    var panel = document.getElementById("anomaly-detail");
    panel.querySelector('[data-role="event-id"]').textContent = id;
    var facts = panel.querySelector('[data-role="facts"]');
    facts.textContent = "";
    var det = A.detail[i] >= 0 ? data.anomalies.details[A.detail[i]] : null;
    factsRow(facts, "function", fname(A.fid[i]));
    factsRow(facts, "rank", data.ranks[A.rank[i]] + ", thread " + A.thread[i] + (det && det.host ? ", host " + det.host : ""));
    factsRow(facts, "step", String(A.step[i]));
    factsRow(facts, "runtime", fmt(A.exclusive_us[i]) + " µs exclusive, " + fmt(A.inclusive_us[i]) + " µs inclusive");
    factsRow(facts, "score", fmt(A.score[i]));
    if (det && det.prediction_us !== undefined) {
      factsRow(facts, "model", "predicted " + fmt(det.prediction_us) + " µs; ratio " + fmt(det.ratio));
    }
    var ol = document.getElementById("anomaly-call-stack");
    ol.textContent = "";
    A.stack[i].forEach(function (fid) { ol.appendChild(el("li", { "data-fid": fid }, fname(fid))); });
    var tl = panel.querySelector('[data-role="timeline"]');
    tl.textContent = "";
    tl.appendChild(timeline(i, det));
    var extras = panel.querySelector('[data-role="extras"]');
    extras.textContent = "";
    if (!det) {
      extras.appendChild(el("p", { "class": "note" }, "The window, messages and counters are kept in the page for the worst anomalies only; the provenance file has them for every anomaly (chimbuko-mpi inspect, export, or the Python package)."));
    } else {
      if (det.gpu) {
        extras.appendChild(el("h4", {}, "GPU"));
        extras.appendChild(el("p", {}, "context " + det.gpu.context + ", device " + det.gpu.device + ", stream " + det.gpu.stream + ", thread " + det.gpu.thread));
      }
      if (det.gpu_parent) {
        extras.appendChild(el("p", {}, det.gpu_parent.error ? "host launch: " + det.gpu_parent.error :
          "launched by " + det.gpu_parent.function + " [" + det.gpu_parent.event_id + "] on thread " + det.gpu_parent.thread));
      }
      var table = function (title, head, rows) {
        if (!rows.length) { return; }
        extras.appendChild(el("h4", {}, title));
        var t = el("table", { "class": "data" });
        var tr = el("tr");
        head.forEach(function (h) { tr.appendChild(el("th", {}, h)); });
        t.appendChild(el("thead")).appendChild(tr);
        var body = el("tbody");
        rows.forEach(function (r) {
          var row = el("tr");
          r.forEach(function (v) { row.appendChild(el("td", {}, String(v))); });
          body.appendChild(row);
        });
        t.appendChild(body);
        extras.appendChild(t);
      };
      table("Messages", ["kind", "from", "to", "bytes", "tag", "µs after the run's first event"],
        det.comms.map(function (m) { return [m[0] === 0 ? "SEND" : "RECV", m[1], m[2], m[3] === null ? "?" : m[3], m[4], fmt(m[5] - data.t0)]; }));
      table("Counters", ["counter", "value", "µs after the run's first event"],
        det.counters.map(function (c) { return [c[0], fmt(c[1]), fmt(c[2] - data.t0)]; }));
    }
    panel.hidden = false;
    Array.prototype.forEach.call(atable.querySelectorAll("tr.selected"), function (r) { r.classList.remove("selected"); });
    var row = atable.querySelector('tr[data-event-id="' + CSS.escape(id) + '"]');
    if (row) { row.classList.add("selected"); }
    if (setHash) { history.replaceState(null, "", "#anomaly=" + id); }
    panel.scrollIntoView({ block: "start" });
    return true;
  }
  function fromHash() {
    var h = decodeURIComponent(location.hash || "");
    if (h.indexOf("#anomaly=") === 0) { openAnomaly(h.slice(9), false); }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
