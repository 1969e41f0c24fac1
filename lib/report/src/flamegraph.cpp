// SPDX-License-Identifier: MIT
// Folded stacks in, SVG flame graphs out: flamegraph.pl's picture without Perl,
// so reports and endpoints can draw one wherever heapgate runs.
#include "heapgate/flamegraph.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>

#include "heapgate/frame_text.h"
#include "heapgate/markup.h"

namespace heapgate {
namespace {

// flamegraph.pl's defaults: 10 px side margins, Verdana 12 px whose average
// glyph is ~0.59 em wide. Text is truncated with this estimate, so it need not
// be exact, only never too small.
constexpr double kSidePad = 10;
constexpr double kGlyphWidthEm = 0.59;
constexpr double kFooterHeight = 30;

// A number printed by to_chars: locale-independent, so the bytes of an SVG do
// not depend on the process' setlocale.
std::string fixed(double v, int decimals) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  std::string s(buf, r.ec == std::errc() ? r.ptr : buf);
  if (s.empty()) s = "0";
  return s;
}

// Coordinates: at most two decimals and no trailing zeros, to keep files small.
std::string coord(double v) {
  std::string s = fixed(v, 2);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

// "1,234,567" or "-12.5": grouped like flamegraph.pl's sample counts, one
// decimal for estimates (sampled profiles give fractional counts).
std::string quantity(double v, bool with_sign) {
  const bool whole = v == std::floor(v) && std::fabs(v) < 1e15;
  std::string digits = fixed(std::fabs(v), whole ? 0 : 1);
  std::size_t int_end = digits.find('.');
  if (int_end == std::string::npos) int_end = digits.size();
  std::string grouped;
  for (std::size_t i = 0; i < int_end; ++i) {
    if (i > 0 && (int_end - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  grouped.append(digits, int_end, std::string::npos);
  const bool zero = grouped.find_first_not_of("0.,") == std::string::npos;
  if (zero) return grouped;
  if (v < 0) return "-" + grouped;
  return with_sign ? "+" + grouped : grouped;
}

// FNV-1a: a stable hash, so a frame keeps its colour across runs and builds.
std::uint64_t name_hash(std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string rgb(int r, int g, int b) {
  return "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(b) + ")";
}

// flamegraph.pl --colors=mem: greens and teals, the palette of its memory
// flame graphs, so heapgate's pictures read like the ones people know.
std::string name_colour(std::string_view name) {
  const std::uint64_t h = name_hash(name);
  const double v1 = static_cast<double>(h & 0xFF) / 255.0;
  const double v2 = static_cast<double>((h >> 8) & 0xFF) / 255.0;
  return rgb(0, 190 + static_cast<int>(50 * v2), static_cast<int>(210 * v1));
}

// flamegraph.pl's differential colours: saturation scales with the change
// relative to the largest one drawn.
std::string delta_colour(double delta, double max_delta) {
  if (delta == 0 || max_delta <= 0) return rgb(235, 235, 235);
  const int pale = static_cast<int>(210 * (1 - std::min(1.0, std::fabs(delta) / max_delta)));
  return delta > 0 ? rgb(255, pale, pale) : rgb(pale, pale, 255);
}

// A change relative to the larger of before and now (0..1): a new frame is
// fully red, one that halved is half blue. Small shares still get a visible
// tint, so "changed a little" never reads as "unchanged" grey.
std::string change_colour(double delta, double share) {
  if (delta == 0 || !(share > 0)) return rgb(205, 205, 205);
  // From a light tint to a deep colour that black label text stays readable on.
  const int pale = static_cast<int>(200 - 130 * std::min(1.0, share));
  return delta > 0 ? rgb(255, pale, pale) : rgb(pale, pale + 40, 255);
}

// The label cut to what fits `width` pixels, keeping its end, where sibling
// names differ ("…Parser::grow" and "…Parser::token"); "" when fewer than
// three characters fit. Whole code points; the ellipsis counts as one.
std::string fit_label_tail(std::string_view name, double width, double glyph) {
  const double room = (width - 6) / glyph;
  if (room < 3) return {};
  const auto fits = static_cast<std::size_t>(room);
  std::vector<std::size_t> starts;  // byte offset of each code point
  for (std::size_t i = 0; i < name.size();) {
    starts.push_back(i);
    i += std::max<std::size_t>(1, detail::utf8_sequence_length(name, i));
  }
  if (starts.size() <= fits) return std::string(name);
  return "\xE2\x80\xA6" + std::string(name.substr(starts[starts.size() - (fits - 1)]));
}

// The name cut to what fits `width` pixels, in whole code points, ".." marking
// the cut; "" when fewer than three characters fit (flamegraph.pl's rule).
std::string fit_label(std::string_view name, double width, double glyph) {
  const double room = (width - 6) / glyph;
  if (room < 3) return {};
  const auto fits = static_cast<std::size_t>(room);
  std::size_t points = 0;
  std::size_t cut = std::string_view::npos;  // byte offset after fits-2 code points
  for (std::size_t i = 0; i < name.size();) {
    std::size_t len = std::max<std::size_t>(1, detail::utf8_sequence_length(name, i));
    i += len;
    ++points;
    if (points == fits - 2) cut = i;
    if (points > fits) break;
  }
  if (points <= fits) return std::string(name);
  return std::string(name.substr(0, cut)) + "..";
}

struct Node {
  std::string_view name;
  std::size_t parent = 0;
  // Width: sum of |value| of the stacks through the frame; colour: their sum.
  double magnitude = 0;
  double net = 0;
  // A change graph's sums of now and before.
  double now = 0;
  double before = 0;
  // Ordered by name: siblings are drawn in name order, as flamegraph.pl does.
  std::map<std::string_view, std::size_t> children;
};

struct Drawn {
  std::size_t node;
  std::size_t depth;
  double x;
  double width;
};

constexpr const char* kScript = R"JS(
(function () {
  var s = document.currentScript, svg = s ? s.parentNode : null;
  if (!svg || !svg.querySelectorAll) {
    var all = document.querySelectorAll('svg.heapgate-flame');
    svg = all[all.length - 1];
  }
  var X = +svg.getAttribute('data-x'), W = +svg.getAttribute('data-w'), cw = +svg.getAttribute('data-cw');
  var details = svg.querySelector('.hg-details'), unzoom = svg.querySelector('.hg-unzoom');
  var tail = svg.getAttribute('data-tail') === '1';
  function fit(n, w) {
    var k = Math.floor((w - 6) / cw);
    if (k < 3) return '';
    var p = Array.from(n);
    if (p.length <= k) return n;
    return tail ? '\u2026' + p.slice(p.length - (k - 1)).join('') : p.slice(0, k - 2).join('') + '..';
  }
  function place(f, x, w) {
    f.r.setAttribute('x', x.toFixed(2));
    f.r.setAttribute('width', w.toFixed(2));
    f.t.setAttribute('x', (x + 3).toFixed(2));
    f.t.textContent = fit(f.n, w);
  }
  var frames = Array.prototype.map.call(svg.querySelectorAll('g.hg-f'), function (g) {
    var r = g.querySelector('rect'), tip = g.querySelector('title').textContent;
    var n = g.hasAttribute('data-n') ? g.getAttribute('data-n') : tip.substring(0, tip.lastIndexOf(' ('));
    var f = {g: g, r: r, t: g.querySelector('text'), n: n,
             x: +r.getAttribute('x'), w: +r.getAttribute('width'), y: +r.getAttribute('y')};
    g.addEventListener('click', function () { zoom(f); });
    g.addEventListener('mouseover', function () { details.textContent = tip; });
    g.addEventListener('mouseout', function () { details.textContent = ' '; });
    return f;
  });
  function zoom(z) {
    var e = 0.02, k = W / z.w;
    frames.forEach(function (f) {
      var below = f.y > z.y;
      var keep = below ? f.x <= z.x + e && f.x + f.w >= z.x + z.w - e
                       : f.x >= z.x - e && f.x + f.w <= z.x + z.w + e;
      f.g.style.display = keep ? '' : 'none';
      if (!keep) return;
      f.g.style.opacity = below ? '0.5' : '';
      if (below) place(f, X, W); else place(f, X + (f.x - z.x) * k, f.w * k);
    });
    unzoom.style.display = '';
  }
  unzoom.addEventListener('click', function () {
    frames.forEach(function (f) { f.g.style.display = ''; f.g.style.opacity = ''; place(f, f.x, f.w); });
    unzoom.style.display = 'none';
  });
})();
)JS";

// The three kinds of graph share layout and drawing; they differ in what a
// frame's width and colour mean and in what its tooltip says.
enum class Kind { plain, differential, change };

// One stack to draw, already checked: width >= 0, all finite.
struct Entry {
  const std::vector<std::string>* frames;
  double width;
  double net;
  double now;
  double before;
};

// The notes of stacks the caller left out (nothing to draw, or over the cap).
struct LeftOut {
  std::size_t invalid = 0;
  std::size_t over_cap = 0;
};

std::string render(const std::vector<Entry>& entries, const FlamegraphOptions& options, Kind kind, LeftOut left) {
  const double width = std::max(200, options.width);
  const double frame_height = std::clamp(options.frame_height, 12, 40);
  const double font_size = std::min(12.0, frame_height - 3);
  const double glyph = font_size * kGlyphWidthEm;
  const double draw_width = width - 2 * kSidePad;

  // Merge the stacks into a tree; node 0 is the root, "all".
  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  for (const Entry& s : entries) {
    std::size_t at = 0;
    auto add = [&s](Node& n) {
      n.magnitude += s.width;
      n.net += s.net;
      n.now += s.now;
      n.before += s.before;
    };
    add(nodes[0]);
    for (const std::string& frame : *s.frames) {
      auto found = nodes[at].children.find(frame);
      std::size_t next;
      if (found == nodes[at].children.end()) {
        next = nodes.size();
        nodes[at].children.emplace(frame, next);
        nodes.emplace_back();
        nodes[next].name = frame;
        nodes[next].parent = at;
      } else {
        next = found->second;
      }
      add(nodes[next]);
      at = next;
    }
  }

  // Children are created after their parent, so one backward pass sums the
  // sizes of subtrees (the frames a dropped frame takes with it).
  std::vector<std::size_t> subtree(nodes.size(), 1);
  for (std::size_t i = nodes.size(); i-- > 1;) subtree[nodes[i].parent] += subtree[i];

  // Lay out before writing: the height depends on the deepest frame drawn.
  std::vector<Drawn> drawn;
  std::size_t dropped = 0;
  std::size_t max_depth = 0;
  double max_delta = 0;
  const double total = nodes[0].magnitude;
  if (total > 0) {
    const double scale = draw_width / total;
    std::vector<Drawn> todo{{0, 0, kSidePad, draw_width}};
    while (!todo.empty()) {
      Drawn d = todo.back();
      todo.pop_back();
      if (d.width < options.min_frame_width) {
        dropped += subtree[d.node];
        continue;
      }
      drawn.push_back(d);
      max_depth = std::max(max_depth, d.depth);
      max_delta = std::max(max_delta, std::fabs(nodes[d.node].net));
      // Pushed in reverse, so frames come out in name order, parents first.
      std::vector<Drawn> kids;
      double x = d.x;
      for (const auto& [name, child] : nodes[d.node].children) {
        const double w = nodes[child].magnitude * scale;
        kids.push_back(Drawn{child, d.depth + 1, x, w});
        x += w;
      }
      todo.insert(todo.end(), kids.rbegin(), kids.rend());
    }
  }

  const bool has_subtitle = !options.subtitle.empty();
  const double top = has_subtitle ? 56 : 38;
  const double rows = drawn.empty() ? 3 : static_cast<double>(max_depth + 1);
  const double height = top + rows * frame_height + kFooterHeight;

  std::string out;
  out.reserve(512 + drawn.size() * 200);
  if (options.xml_declaration) out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heapgate-flame\" version=\"1.1\" width=\"" + coord(width) +
         "\" height=\"" + coord(height) + "\" viewBox=\"0 0 " + coord(width) + " " + coord(height) + "\" data-x=\"" +
         coord(kSidePad) + "\" data-w=\"" + coord(draw_width) + "\" data-cw=\"" + coord(glyph) + "\"" +
         (options.short_labels ? " data-tail=\"1\"" : "") +
         " font-family=\"Verdana, 'DejaVu Sans', sans-serif\" font-size=\"" + coord(font_size) + "\">\n";
  // Scoped by class: the same element may sit inline in an HTML page.
  out +=
      "<style>svg.heapgate-flame g.hg-f:hover rect{stroke:#000;stroke-width:0.5}"
      "svg.heapgate-flame g.hg-f{cursor:pointer}svg.heapgate-flame .hg-unzoom{cursor:pointer}</style>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + coord(width) + "\" height=\"" + coord(height) + "\" fill=\"#f8f8f8\"/>\n";
  if (!options.title.empty()) {
    out += "<text x=\"" + coord(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">" +
           detail::escape_markup(options.title) + "</text>\n";
  }
  if (has_subtitle) {
    out += "<text x=\"" + coord(width / 2) + "\" y=\"44\" text-anchor=\"middle\" fill=\"#555\">" +
           detail::escape_markup(options.subtitle) + "</text>\n";
  }
  if (options.interactive) {
    out +=
        "<text class=\"hg-unzoom\" x=\"" + coord(kSidePad) + "\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n";
  }

  if (drawn.empty()) {
    out += "<text x=\"" + coord(width / 2) + "\" y=\"" + coord(top + 1.5 * frame_height) +
           "\" text-anchor=\"middle\" fill=\"#555\">no samples</text>\n";
  }
  const std::string unit = options.unit.empty() ? std::string() : " " + options.unit;
  const double base_y = height - kFooterHeight;
  for (const Drawn& d : drawn) {
    const Node& n = nodes[d.node];
    const double y = base_y - static_cast<double>(d.depth + 1) * frame_height;
    std::string tip;
    std::string fill;
    if (kind == Kind::change) {
      const FrameParts parts = split_frame(n.name);
      tip = parts.function + (parts.location.empty() ? "" : "\nat " + parts.location) + "\n" + quantity(n.now, false) +
            unit + " now";
      if (!options.changes_known) {
        // Nothing to say about before.
      } else if (n.net == 0) {
        tip += ", unchanged against the baseline";
      } else {
        tip += ", " + quantity(n.net, true) + unit +
               (n.before > 0 ? " (" + quantity(std::round(1000.0 * n.net / n.before) / 10.0, true) + "%)" : "") +
               " against the baseline";
      }
      fill = change_colour(options.changes_known ? n.net : 0, n.magnitude > 0 ? std::fabs(n.net) / n.magnitude : 0);
    } else {
      const bool signed_values = kind == Kind::differential;
      tip = std::string(n.name) + " (" + quantity(signed_values ? n.net : n.magnitude, signed_values) + unit + ", " +
            fixed(100.0 * n.magnitude / total, 2) + "%)";
      fill = signed_values ? delta_colour(n.net, max_delta) : name_colour(n.name);
    }
    const std::string label_source =
        options.short_labels ? (d.node == 0 ? std::string(n.name) : short_frame_label(n.name)) : std::string();
    const std::string label =
        options.short_labels ? fit_label_tail(label_source, d.width, glyph) : fit_label(n.name, d.width, glyph);
    out += "<g class=\"hg-f\"" +
           (options.short_labels ? " data-n=\"" + detail::escape_markup(label_source) + "\"" : std::string()) +
           "><title>" + detail::escape_markup(tip) + "</title><rect x=\"" + coord(d.x) + "\" y=\"" + coord(y) +
           "\" width=\"" + coord(d.width) + "\" height=\"" + coord(frame_height - 1) + "\" fill=\"" + fill +
           "\" rx=\"2\" ry=\"2\"/><text x=\"" + coord(d.x + 3) + "\" y=\"" + coord(y + frame_height - 4.5) + "\">" +
           detail::escape_markup(label) + "</text></g>\n";
  }

  std::vector<std::string> notes;
  if (kind == Kind::differential && !drawn.empty()) {
    notes.push_back("width: |change|; red grew, blue shrank");
  }
  if (kind == Kind::change && !drawn.empty()) {
    notes.push_back(options.changes_known ? "width: the larger of before and now; red grew, blue shrank, grey unchanged"
                                          : "width: now; no baseline to compare with");
  }
  if (dropped > 0) {
    notes.push_back(std::to_string(dropped) + (dropped == 1 ? " frame" : " frames") + " narrower than " +
                    coord(options.min_frame_width) + " px not drawn");
  }
  if (left.over_cap > 0) {
    notes.push_back(std::to_string(left.over_cap) + (left.over_cap == 1 ? " more stack" : " more stacks") +
                    " not drawn (the " + std::to_string(options.max_stacks) + " largest are)");
  }
  if (left.invalid > 0) {
    notes.push_back(std::to_string(left.invalid) + (left.invalid == 1 ? " stack" : " stacks") +
                    (kind == Kind::differential ? " with a non-finite value" : " with a negative or non-finite value") +
                    " left out");
  }
  std::string note;
  for (const auto& n : notes) note += (note.empty() ? "" : "; ") + n;
  const std::string footer_y = coord(height - 10);
  out += "<text class=\"hg-details\" x=\"" + coord(kSidePad) + "\" y=\"" + footer_y + "\"> </text>\n";
  if (!note.empty()) {
    out += "<text class=\"hg-note\" x=\"" + coord(width - kSidePad) + "\" y=\"" + footer_y +
           "\" text-anchor=\"end\" fill=\"#555\">" + detail::escape_markup(note) + "</text>\n";
  }
  if (options.interactive && !drawn.empty()) {
    // CDATA keeps the script literal both for XML parsers and for HTML's
    // parser, which honours CDATA inside <svg>.
    out += "<script type=\"text/javascript\"><![CDATA[";
    out += kScript;
    out += "]]></script>\n";
  }
  out += "</svg>\n";
  return out;
}

// The largest `cap` entries by |net|, then width (all when cap is 0 or not
// exceeded), in their original order, so the layout does not depend on the cap.
std::vector<Entry> capped(std::vector<Entry> entries, std::size_t cap, LeftOut& left) {
  if (cap == 0 || entries.size() <= cap) return entries;
  std::vector<std::size_t> order(entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double na = std::fabs(entries[a].net), nb = std::fabs(entries[b].net);
    return na != nb ? na > nb : entries[a].width > entries[b].width;
  });
  order.resize(cap);
  std::sort(order.begin(), order.end());
  std::vector<Entry> kept;
  for (std::size_t i : order) kept.push_back(entries[i]);
  left.over_cap = entries.size() - cap;
  return kept;
}

}  // namespace

std::string_view flame_unit(ProfileMetric metric) noexcept {
  return metric == ProfileMetric::live_bytes || metric == ProfileMetric::accum_bytes ? "bytes" : "objects";
}

std::string render_flamegraph_svg(const std::vector<FoldedStack>& stacks, const FlamegraphOptions& options) {
  std::vector<Entry> entries;
  LeftOut left;
  for (const FoldedStack& s : stacks) {
    if (s.value == 0) continue;
    if (!std::isfinite(s.value) || (!options.differential && s.value < 0)) {
      ++left.invalid;
      continue;
    }
    entries.push_back(Entry{&s.frames, std::fabs(s.value), s.value, 0, 0});
  }
  entries = capped(std::move(entries), options.max_stacks, left);
  return render(entries, options, options.differential ? Kind::differential : Kind::plain, left);
}

std::string render_change_flamegraph_svg(const std::vector<ChangedStack>& stacks, const FlamegraphOptions& options) {
  std::vector<Entry> entries;
  LeftOut left;
  for (const ChangedStack& s : stacks) {
    if (!std::isfinite(s.value) || !std::isfinite(s.delta) || s.value < 0) {
      ++left.invalid;
      continue;
    }
    const double before = std::max(0.0, s.value - s.delta);
    const double width = std::max(s.value, before);
    if (width == 0) continue;
    entries.push_back(Entry{&s.frames, width, s.value - before, s.value, before});
  }
  entries = capped(std::move(entries), options.max_stacks, left);
  return render(entries, options, Kind::change, left);
}

}  // namespace heapgate
