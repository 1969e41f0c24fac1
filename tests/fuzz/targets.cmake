# SPDX-License-Identifier: MIT
# The fuzz targets, one list for the fuzz project (tests/fuzz/CMakeLists.txt)
# and for the ctest label `fuzz` (tests/fuzz_tests.cmake): target <name> is
# <name>_fuzz.cpp, its seeds are corpus/<name>/ plus the directories of
# HEAPGATE_FUZZ_SEEDS_<name> (relative to the repository root).
set(HEAPGATE_FUZZ_TARGETS
  profile         # heap_v2 profiles, with the round trip
  baseline        # baseline JSON and suppressions files
  report          # report JSON and journals through every renderer
  folded          # folded stacks and the flame graph drawn from them
  jeprof_text     # jeprof --text output
  benchmark_json  # Google Benchmark JSON, judged
  mesos_duration  # Mesos durations, with the round trip
  flags           # --heapgate_* flags
  http_request    # raw HTTP requests through the server's front end
)
set(HEAPGATE_FUZZ_SEEDS_profile tests/data/profiles)
