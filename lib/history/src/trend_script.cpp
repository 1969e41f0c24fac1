// SPDX-License-Identifier: MIT
// The script of a test's trend page: one SVG chart per metric, drawn from
// the page's JSON (#trend-data) and the runs of commits.js (HG_RUNS). Plain
// DOM calls, no library: the page works offline, from file://.
#include "trend_script.h"

namespace heapgate::detail {

const char* const kTrendScript = R"JS(
(function () {
  var NS = 'http://www.w3.org/2000/svg';
  var data = JSON.parse(document.getElementById('trend-data').textContent);
  var runs = window.HG_RUNS || [];
  var W = 900, H = 200, L = 70, R = 20, T = 14, B = 30;
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function chart(metric) {
    var values = metric.values, n = values.length;
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < n; ++i) {
      lo = Math.min(lo, values[i]); hi = Math.max(hi, values[i]);
      if (metric.low && metric.low[i] !== null) { lo = Math.min(lo, metric.low[i]); hi = Math.max(hi, metric.high[i]); }
    }
    if (hi === lo) { hi += 1; lo = Math.max(0, lo - 1); }
    var pad = (hi - lo) * 0.08; hi += pad; lo = Math.max(0, lo - pad);
    var x = function (i) { return L + (n === 1 ? (W - L - R) / 2 : i * (W - L - R) / (n - 1)); };
    var y = function (v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); };
    var section = document.createElement('section');
    section.className = 'metric';
    section.setAttribute('data-metric', metric.name);
    var title = document.createElement('h2');
    title.textContent = metric.name.replace(/_/g, ' ');
    section.appendChild(title);
    var svg = el('svg', {'class': 'chart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H,
                         'data-metric': metric.name}, section);
    if (metric.low) {
      // The band, one polygon per run of points that have one.
      var start = -1;
      for (var i = 0; i <= n; ++i) {
        var has = i < n && metric.low[i] !== null;
        if (has && start < 0) start = i;
        if (!has && start >= 0) {
          var pts = [];
          for (var k = start; k < i; ++k) pts.push(x(k) + ',' + y(metric.high[k]));
          for (var k = i - 1; k >= start; --k) pts.push(x(k) + ',' + y(metric.low[k]));
          if (i - start === 1) { pts.splice(1, 0, (x(start) + 3) + ',' + y(metric.high[start])); pts.push((x(start) - 3) + ',' + y(metric.low[start])); }
          el('polygon', {'class': 'band', points: pts.join(' ')}, svg);
          start = -1;
        }
      }
    }
    el('text', {'class': 'axis', x: L - 6, y: y(hi - pad) + 4, 'text-anchor': 'end'}, svg).textContent = Math.round(hi - pad);
    el('text', {'class': 'axis', x: L - 6, y: y(lo + pad) + 4, 'text-anchor': 'end'}, svg).textContent = Math.round(lo + pad);
    var line = [];
    for (var i = 0; i < n; ++i) line.push(x(i) + ',' + y(values[i]));
    el('polyline', {'class': 'line', points: line.join(' ')}, svg);
    metric.changes.forEach(function (c) {
      var cx = x(c.index);
      el('line', {'class': 'change-point', x1: cx, x2: cx, y1: T, y2: H - B, 'data-index': c.index}, svg);
      var label = el('text', {'class': 'change-label', x: cx + 4, y: T + 10}, svg);
      label.textContent = c.before + ' \u2192 ' + c.after;
      el('title', {}, label).textContent = c.text;
    });
    for (var i = 0; i < n; ++i) {
      var run = runs[data.runs[i]] || [0, '', '', '', '', ''];
      var a = el('a', {href: '../runs.html#run-' + run[0]}, svg);
      var failed = data.verdicts[i] !== 'pass' && data.verdicts[i] !== 'baseline' && data.verdicts[i] !== 'improved';
      var dot = el('circle', {'class': failed ? 'point failed' : 'point', cx: x(i), cy: y(values[i]), r: 3,
                              'data-value': values[i], 'data-commit': run[1], 'data-run': run[0]}, a);
      el('title', {}, dot).textContent = String(run[1]).substring(0, 10) + ' ' + run[2] + ': ' + values[i] +
          ' (' + data.verdicts[i] + ')';
    }
    if (n > 0) {
      var first = runs[data.runs[0]] || [], last = runs[data.runs[n - 1]] || [];
      el('text', {'class': 'axis', x: L, y: H - 8}, svg).textContent = String(first[1] || '').substring(0, 7);
      el('text', {'class': 'axis', x: W - R, y: H - 8, 'text-anchor': 'end'}, svg).textContent = String(last[1] || '').substring(0, 7);
    }
    return section;
  }
  var charts = document.getElementById('charts');
  data.metrics.forEach(function (m) { charts.appendChild(chart(m)); });
  document.body.setAttribute('data-drawn', String(data.metrics.length));
})();
)JS";

}  // namespace heapgate::detail
