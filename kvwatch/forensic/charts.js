/* kvwatch's charts: draws each chart specification of #kvwatch-charts with uPlot (vendored, inline).
   Each chart's element gets data-series (series drawn) and data-points (each series' points) once
   drawn, and the root element data-charts (charts drawn): what a test reads of the rendered page. */
(function () {
  "use strict";
  var source = document.getElementById("kvwatch-charts");
  if (!source || typeof uPlot === "undefined") { return; }
  var specs = JSON.parse(source.textContent).charts;
  var MARK = { firing: "#b3261e", resolved: "#17753a", restart: "#5d6675" };

  function short(v) {
    if (v == null) { return ""; }
    var a = Math.abs(v);
    if (a >= 1e6) { return +(v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M"; }
    if (a >= 1e5) { return +(v / 1e3).toFixed(0) + "k"; }
    if (a >= 1e3) { return +(v / 1e3).toFixed(1) + "k"; }
    return String(+v.toFixed(2));
  }
  function bytes(v) {
    if (v == null) { return ""; }
    var units = [["TB", 1e12], ["GB", 1e9], ["MB", 1e6], ["kB", 1e3]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(v) >= units[i][1]) { return +(v / units[i][1]).toFixed(1) + " " + units[i][0]; }
    }
    return v + " B";
  }
  function pad(n) { return n < 10 ? "0" + n : String(n); }
  /* Time ticks in UTC, 24 h: the date where it changes (and on the first tick), else hours:minutes. */
  function times(u, vals, axis, space, incr) {
    var lastDay = "";
    return vals.map(function (v) {
      var d = new Date(v * 1e3);
      var day = d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate());
      var clock = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + (incr < 60 ? ":" + pad(d.getUTCSeconds()) : "");
      var text = incr >= 86400 ? day : (day !== lastDay ? clock + "\n" + day : clock);
      lastDay = day;
      return text;
    });
  }
  function percent(v) { return v == null ? "" : +(v * 100).toFixed(1) + "%"; }
  function format(unit) {
    if (unit === "ratio") { return percent; }
    if (unit === "bytes") { return bytes; }
    return short;
  }

  /* The healthy band (behind the series) and the alerts' marks (over them). */
  function overlays(spec) {
    return {
      hooks: {
        drawClear: [function (u) {
          if (!spec.band) { return; }
          var ctx = u.ctx, b = u.bbox;
          var top = u.valToPos(spec.band[1], "y", true), low = u.valToPos(spec.band[0], "y", true);
          ctx.save();
          ctx.fillStyle = "rgba(23,117,58,0.12)";
          ctx.fillRect(b.left, top, b.width, low - top);
          ctx.fillStyle = "rgba(23,117,58,0.9)";
          ctx.font = Math.round(11 * devicePixelRatio) + "px system-ui,sans-serif";
          ctx.textAlign = "right";
          ctx.fillText("healthy", b.left + b.width - 4, top + 13 * devicePixelRatio);
          ctx.restore();
        }],
        draw: [function (u) {
          var ctx = u.ctx, b = u.bbox, lastLabel = -1e9;
          ctx.save();
          ctx.font = Math.round(11 * devicePixelRatio) + "px system-ui,sans-serif";
          (spec.lines || []).forEach(function (line) {
            var y = u.valToPos(line.v, "y", true);
            ctx.strokeStyle = "#7b2d8e";
            ctx.fillStyle = "#7b2d8e";
            ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.setLineDash([8 * devicePixelRatio, 4 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(b.left, y);
            ctx.lineTo(b.left + b.width, y);
            ctx.stroke();
            ctx.font = "bold " + Math.round(12 * devicePixelRatio) + "px system-ui,sans-serif";
            ctx.textAlign = "right";
            var right = b.left + b.width - 4 * devicePixelRatio, px = devicePixelRatio;
            var wide = ctx.measureText(line.text).width;
            ctx.fillStyle = "rgba(255,255,255,0.9)";  /* (legible over the points) */
            ctx.fillRect(right - wide - 4 * px, y - 20 * px, wide + 8 * px, 16 * px);
            ctx.fillStyle = "#7b2d8e";
            ctx.fillText(line.text, right, y - 7 * px);
            ctx.font = Math.round(11 * devicePixelRatio) + "px system-ui,sans-serif";
          });
          (spec.markers || []).forEach(function (m) {
            var x = u.valToPos(m.t, "x", true);
            if (x < b.left - 1 || x > b.left + b.width + 1) { return; }
            ctx.strokeStyle = MARK[m.kind] || "#5d6675";
            ctx.fillStyle = ctx.strokeStyle;
            ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.setLineDash([5 * devicePixelRatio, 4 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(x, b.top);
            ctx.lineTo(x, b.top + b.height);
            ctx.stroke();
            if (x - lastLabel > 150 * devicePixelRatio) {
              var right = x > b.left + b.width * 0.6;
              ctx.textAlign = right ? "right" : "left";
              ctx.fillText((m.kind === "firing" ? "\u25B2 " : m.kind === "resolved" ? "\u25BC " : "") + m.text,
                x + (right ? -4 : 4) * devicePixelRatio, b.top + 12 * devicePixelRatio);
              lastLabel = x;
            }
          });
          ctx.restore();
        }]
      }
    };
  }

  function seriesOf(spec) {
    var fmt = format(spec.unit);
    return spec.series.map(function (s) {
      var one = { label: s.label, stroke: s.colour, width: 1.5, spanGaps: true,
                  value: function (u, v) { return fmt(v); } };
      if (s.style === "points") {
        one.paths = function () { return null; };
        one.points = { show: true, size: 6, width: 1, fill: s.colour, stroke: s.colour };
      } else if (s.style === "bars") {
        one.paths = uPlot.paths.bars({ size: [0.9, 18], align: 0 });
        one.fill = s.colour;
        one.points = { show: false };
      } else {
        one.width = 2;
        one.spanGaps = false;  /* (an empty bucket is a gap, not a slope) */
        one.points = { size: 5, fill: s.colour };  /* (uPlot shows them where the line is sparse) */
      }
      return one;
    });
  }

  function draw(spec) {
    var el = document.getElementById(spec.id);
    if (!el) { return; }
    var data = spec.tables.length === 1 ? spec.tables[0] : uPlot.join(spec.tables);
    var fmt = format(spec.unit);
    var time = spec.x === "time";
    var yRange = spec.unit === "ratio"
      ? function () { return [0, 1]; }
      : function (u, min, max) { return [0, max > 0 ? max * 1.08 : 1]; };
    var scales = { x: { time: time }, y: { range: yRange } };
    if (!time) {
      scales.x.range = function (u, min, max) {
        var pad = Math.max(1, (max - min) * 0.04, max * 0.02);
        return [Math.max(0, min - pad), max + pad];
      };
    }
    var opts = {
      width: Math.max(320, el.clientWidth),
      height: 250,
      scales: scales,
      series: [{ label: time ? "time (UTC)" : "cached tokens", value: time ? function (u, v) { return v == null ? "" : new Date(v * 1e3).toISOString().slice(0, 19).replace("T", " ") + "Z"; } : function (u, v) { return v == null ? "" : short(v); } }].concat(seriesOf(spec)),
      axes: [
        /* (whole seconds at least: a window of a few seconds must not repeat a second under each tick) */
        time ? { values: times, space: 90, incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800, 2592000] } : { values: function (u, vals) { return vals.map(short); }, space: 60 },
        spec.unit === "requests"
          ? { size: 62, values: function (u, vals) { return vals.map(fmt); }, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6] }
          : { size: 62, values: function (u, vals) { return vals.map(fmt); } }
      ],
      cursor: { points: { show: false } },
      plugins: [overlays(spec)]
    };
    var plot = new uPlot(opts, data, el);
    el.dataset.series = String(plot.series.length - 1);
    el.dataset.points = JSON.stringify(plot.data.slice(1).map(function (ys) {
      return ys.filter(function (v) { return v != null; }).length;
    }));
    el.dataset.markers = String((spec.markers || []).length);
    return plot;
  }

  var drawn = 0;
  specs.forEach(function (spec) { if (draw(spec)) { drawn++; } });
  document.documentElement.dataset.charts = String(drawn);
})();
