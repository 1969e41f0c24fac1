// SPDX-License-Identifier: MIT
// What every heapgate HTML page shares (the report's, report_html.cpp, and a
// recording's, recording_html.cpp): the head with its policy and style, the
// flame graphs' search box and the script at the end.
#pragma once

#include <string>
#include <string_view>

#include "heapgate/markup.h"

namespace heapgate::detail {

// CI artifact viewers serve pages from their own origin; the policy keeps the
// page from fetching anything even if a name in it looked like a URL.
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

inline constexpr const char* kStyle = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:16px;margin:0 0 6px}h4{font-size:14px;margin:14px 0 6px}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
pre{background:#f6f8fa;padding:8px 10px;border-radius:6px;overflow-x:auto;white-space:pre-wrap;margin:4px 0}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top}
th{background:#f6f8fa;text-align:left}td.num{text-align:right;white-space:nowrap}
table.run th{font-weight:600;width:1%;white-space:nowrap}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;background:#6e7781;white-space:nowrap}
.v-regressed,.v-leaked,.v-over_budget{background:#cf222e}.v-unavailable{background:#bc4c00}.v-missing{background:#6e7781}
.v-improved{background:#1a7f37}.v-new{background:#0969da}.v-pass{background:#2da44e}
.fail-strict{outline:2px solid #cf222e}
.counts span{margin-right:10px}.muted{color:#57606a}.small{font-size:12px}
.delta{color:#57606a}.beyond.up .delta{color:#cf222e;font-weight:600}.beyond.down .delta{color:#1a7f37;font-weight:600}
.limit{color:#8c959f;font-size:12px}
.note{border-left:4px solid #bc4c00;background:#fff8c5;padding:6px 10px;margin:8px 0}
section.test{border:1px solid #d0d7de;border-radius:6px;padding:12px 14px;margin:14px 0}
ol.stacks li{margin-bottom:8px}figure{margin:10px 0}figcaption{color:#57606a;font-size:12px}
figure svg{max-width:100%;height:auto;border:1px solid #d0d7de}
td.up strong{color:#cf222e}td.down strong{color:#1a7f37}
table.changes th{font-weight:600}table.changes tr.beyond.up td.delta{color:#cf222e;font-weight:600}
table.changes tr.beyond.down td.delta{color:#1a7f37;font-weight:600}
.flame-tools{margin:4px 0}.flame-tools input{font:inherit;padding:3px 6px;width:22em;border:1px solid #d0d7de;border-radius:6px}
svg.heapgate-flame g.hg-match rect{fill:rgb(214,0,214)}
details.stacks summary{cursor:pointer;color:#57606a}
)CSS";

// A flame graph's figure opens with its search box (kPageScript wires it).
inline constexpr const char* kFlameFigureStart =
    "<figure class=\"flame\"><div class=\"flame-tools\"><input type=\"search\" class=\"hg-search\" "
    "placeholder=\"Search frames: name or file\" aria-label=\"Search frames\"> <span class=\"hg-found muted "
    "small\"></span></div>";

// The search boxes of the flame graphs, and a marker that the page's scripts
// ran to the end (the browser test reads it).
inline constexpr const char* kPageScript = R"JS(
(function () {
  Array.prototype.forEach.call(document.querySelectorAll('figure.flame'), function (fig) {
    var box = fig.querySelector('input.hg-search'), found = fig.querySelector('.hg-found');
    var frames = fig.querySelectorAll('g.hg-f');
    function search() {
      var term = box.value.trim().toLowerCase(), n = 0;
      Array.prototype.forEach.call(frames, function (g) {
        var text = ((g.getAttribute('data-n') || '') + '\n' + g.querySelector('title').textContent).toLowerCase();
        var hit = term !== '' && text.indexOf(term) >= 0;
        g.classList.toggle('hg-match', hit);
        if (hit) n++;
      });
      found.textContent = term === '' ? '' : n + (n === 1 ? ' frame matches' : ' frames match');
    }
    box.addEventListener('input', search);
  });
  document.body.setAttribute('data-heapgate-ready', '1');
})();
)JS";

/// The page up to and including <body>, titled `title`.
inline std::string page_head(std::string_view title) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"" + escape_markup(kContentSecurityPolicy) + "\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"heapgate\">\n";
  out += "<title>" + escape_markup(title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  return out;
}

/// The script and the end of the page.
inline std::string page_end() { return "<script>" + std::string(kPageScript) + "</script>\n</body>\n</html>\n"; }

}  // namespace heapgate::detail
