// SPDX-License-Identifier: MIT
// heapgate: allocation regression gates for C++ test suites.
// `heapgate diff`: the local leak hunt. heapgate's own symbolic diff works
// across processes; --format jeprof runs `jeprof --base` on the base profile
// rebased onto the current one's address-space layout.
#include "heapgate/diff.h"
#include "heapgate/jeprof.h"
#include "heapgate/normalize.h"
#include "heapgate/profile.h"
#include "heapgate/rebase.h"
#include "heapgate/symbolizer.h"
#include "options.h"
#include "output.h"

namespace heapgate::runner {

int run_diff(const DiffOptions& options) {
  if (options.format == "jeprof") {
    if (options.binary.empty()) {
      return bad_input(make_error(ErrorCode::invalid_argument, "--format jeprof", "jeprof needs the profiled program",
                                  "add --binary PATH"));
    }
    JeprofOptions jeprof;
    jeprof.binary = options.binary;
    jeprof.profile = options.current;
    jeprof.base = options.base;
    jeprof.format = JeprofFormat::text;
    auto text = run_jeprof_rebased(jeprof);
    if (!text) return bad_input(text.error());
    auto written = emit(options.output, *text);
    return written ? kExitOk : bad_input(written.error());
  }
  auto base = read_profile(options.base);
  if (!base) return bad_input(base.error());
  auto current = read_profile(options.current);
  if (!current) return bad_input(current.error());
  Symbolizer symbols;
  ProfileDiff diff = diff_profiles(normalize_profile(*base, symbols), normalize_profile(*current, symbols));
  std::string text;
  if (options.format == "text") {
    text = render_diff_text(diff, options.max_stacks);
  } else {
    auto metric = parse_metric(options.metric);
    if (!metric) return bad_input(metric.error());
    text = render_folded(diff, *metric);
  }
  auto written = emit(options.output, text);
  return written ? kExitOk : bad_input(written.error());
}

}  // namespace heapgate::runner
