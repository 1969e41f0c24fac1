// SPDX-License-Identifier: MIT
// Self-contained SVG flame graphs: FlamegraphOptions, render_flamegraph_svg() of folded stacks,
// and render_change_flamegraph_svg() of ChangedStack deltas; flame_unit().
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "heapgate/diff.h"
#include "heapgate/folded.h"
#include "heapgate/error.h"
#include "heapgate/normalize.h"

namespace heapgate {

/// "bytes" for the byte metrics, "objects" for the object counts.
std::string_view flame_unit(ProfileMetric metric) noexcept;

/// How render_flamegraph_svg draws.
struct FlamegraphOptions {
  /// The heading, centred at the top; none when empty.
  std::string title = "Flame Graph";
  /// A second, smaller heading line (e.g. which profiles), none when empty.
  std::string subtitle;
  /// What values count, for tooltips: "bytes", "objects".
  std::string unit = "bytes";
  /// Image width in pixels; values below 200 are taken as 200.
  int width = 1200;
  /// Height of one frame row in pixels; clamped to 12..40.
  int frame_height = 16;
  /// Frames narrower than this are not drawn (with everything above them)
  /// and counted in a note at the bottom.
  double min_frame_width = 0.1;
  /// A diff: frame width is |value| (the sum of |value| of the stacks
  /// through a frame, so children never outgrow their parent); colour is the
  /// frame's net change, red for growth and blue for shrinkage, deeper for
  /// larger changes (flamegraph.pl's difffolded colours). Otherwise stacks
  /// with a value <= 0 are left out (counted in the note) and colours come
  /// from a hash of the frame name (flamegraph.pl's `mem` palette).
  bool differential = false;
  /// Adds a small script: click a frame to zoom into it, click "Reset Zoom"
  /// or the root to go back; hovering shows the tooltip text at the bottom.
  /// The picture never depends on it (text is truncated when rendered).
  bool interactive = true;
  /// Starts with an XML declaration, as an .svg file should; false for an
  /// `<svg>` element to put inline into HTML. The element uses no ids, so
  /// several can share one page.
  bool xml_declaration = true;
  /// Labels show each frame's function shortened for reading (template
  /// arguments, return type and parameters left out; see
  /// render_change_flamegraph_svg); a label too long for its frame keeps its
  /// end ("…Parser::grow"), where sibling names differ. Every frame's `<g>`
  /// carries the shortened name in `data-n`, for the page's search box; its
  /// `<title>` keeps the full name. Off: the name itself, cut with "..".
  bool short_labels = false;
  /// At most this many stacks are drawn, the largest (by |change|, then by
  /// value) first; the others are counted in the note. 0: all of them.
  std::size_t max_stacks = 0;
  /// For render_change_flamegraph_svg: false when nothing is known about
  /// before (no baseline to compare with): every frame is grey and its
  /// tooltip gives only what it holds now.
  bool changes_known = true;
};

/// A self-contained SVG flame graph (flamegraph.pl's layout: the root, "all",
/// at the bottom, callees stacked above their callers, siblings in name
/// order). Stacks are merged into a tree by equal frame prefixes; widths are
/// proportional to the values; every frame is a `<g>` with a `<title>` tooltip
/// "name (VALUE UNIT, PCT%)" (VALUE signed in differential mode; PCT of the
/// total drawn width) and its name truncated with ".." to fit. Names are
/// escaped for XML (and HTML); invalid UTF-8 and control characters become
/// U+FFFD. Deterministic: the same stacks and options give the same bytes
/// (colours come from the names, numbers are printed in the C locale). No
/// stacks with a drawable value: a valid SVG saying "no samples". Pure.
std::string render_flamegraph_svg(const std::vector<FoldedStack>& stacks, const FlamegraphOptions& options);

/// One stack of a change flame graph: what it holds now and how that changed.
struct ChangedStack {
  /// Frames, outermost (root) first; "function at file:line" where known.
  std::vector<std::string> frames;
  /// Now; >= 0.
  double value = 0;
  /// Now minus before (before = value - delta, taken as >= 0).
  double delta = 0;
};

/// A differential flame graph of how stacks changed: a frame is as wide as
/// the larger of its now and before sums (so a stack that shrank to nothing
/// still shows), and coloured by its change relative to that: growth red,
/// shrinkage blue, deeper for a larger share (a wholly new frame is fully
/// red), unchanged grey. The tooltip of a frame reads
/// "FUNCTION\nat FILE:LINE\nNOW UNIT now, CHANGE (PCT%) against the baseline"
/// with the full function name (the location line only when known; PCT only
/// when before is not 0; "unchanged" for no change). Non-finite or negative values are left out and
/// counted in the note. Otherwise as render_flamegraph_svg (whose
/// `differential` option is ignored here). Deterministic; pure.
std::string render_change_flamegraph_svg(const std::vector<ChangedStack>& stacks, const FlamegraphOptions& options);

}  // namespace heapgate
