// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
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
std::string_view flame_unit(Metric metric) noexcept;

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

}  // namespace heapgate
