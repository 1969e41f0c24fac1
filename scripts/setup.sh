#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs heapgate's Debian dependencies (idempotent; fast when all are there),
# configures build/, builds what the examples need and, unless --no-example,
# runs the example gate. The README's test command builds the rest (the
# heapgate command line, the tests) and runs the tests.
# --deps-only stops after the packages; --print-packages only lists what a project
# building heapgate needs.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libjemalloc-dev libjemalloc2   # the allocator; Debian's build has profiling compiled in and ships jeprof
  libgtest-dev libgmock-dev      # gtest plugin and tests
  catch2                         # heapgate::catch2, the Catch2 v2 face (optional; off without it)
  doctest-dev                    # heapgate::doctest, the doctest face (optional; off without it)
  libbenchmark-dev               # heapgate::benchmark and bench/
  nlohmann-json3-dev             # JSON reports and baselines
  libpugixml-dev                 # JUnit reports
  libcpp-httplib-dev             # heapgate fetch, the /memory-profiler client
  libmicrohttpd-dev              # the embedded /memory-profiler server (GNU libmicrohttpd)
  libdw-dev libelf-dev           # symbolization (elfutils)
  libunwind8                     # exact mode records stacks with it (dlopened at run time; optional)
  libcli11-dev                   # runner command line
  libexpected-dev                # heapgate::Result (tl::expected)
  graphviz                       # dot, for jeprof --svg
  perl binutils                  # jeprof is a perl script that calls nm/addr2line/objdump
  libxml2-utils                  # xmllint: JUnit XSD validation in tests
  python3-yaml                   # tests: the CI-templates test reads ci/templates
  curl wget                      # the Mesos page's script, run against the example service
  chromium                       # headless browser: the HTML report test loads the page
  clang libclang-rt-14-dev       # the libFuzzer targets (tests/fuzz, ctest -L fuzz); the runtime holds libFuzzer
  libprotobuf-dev protobuf-compiler  # pprof export: protoc compiles pprof's profile.proto (optional, HEAPGATE_PPROF)
  zlib1g-dev                     # gzip for the pprof files
  ccache                         # tests: the CI templates' compiler cache (consumer-ci-templates runs their steps)
  clang-format                   # tests: format_check holds the tree to .clang-format
  libsqlite3-dev                 # heapgate history: the default store, a SQLite file
  libpq-dev                      # heapgate history: the PostgreSQL store (optional; off without it)
  postgresql                     # tests: the history tests start a real PostgreSQL server
  ninja-build                    # tests: the embedding consumer tests build heapgate in parallel with it
)

# Needed by heapgate's own tests only, not by a project that builds heapgate
# from source (FetchContent, add_subdirectory).
own_tests_only=(libxml2-utils python3-yaml curl wget chromium clang libclang-rt-14-dev ccache clang-format postgresql
  ninja-build)

# --print-packages: the packages a project that builds heapgate needs, one a
# line, for a CI image to install before heapgate's sources exist (the
# templates in ci/templates carry this list; a test checks they still do).
if [ "${1:-}" = "--print-packages" ]; then
  for p in "${packages[@]}"; do
    case " ${own_tests_only[*]} " in *" $p "*) ;; *) echo "$p" ;; esac
  done
  exit 0
fi

need_install=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need_install+=("$p")
done

if [ ${#need_install[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "+ apt-get install ${need_install[*]}"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${need_install[@]}"
fi

[ "${1:-}" = "--deps-only" ] && exit 0

here=$(cd "$(dirname "$0")/.." && pwd)
build="${HEAPGATE_BUILD_DIR:-$here/build}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${HEAPGATE_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)" --target heapgate_examples

if [ "${1:-}" != "--no-example" ]; then
  "$here/examples/run_example.sh" "$build"
  echo "scripts/setup.sh: built the examples; the tests: cmake --build build -j2 &&" \
    "ctest --test-dir build --output-on-failure -j2 -LE long"
fi
