# {fmt}: formatting library (format-string parser, chrono, wide chars, files).
# Four of its ~20 test binaries: format-test, chrono-test, xchar-test, os-test.
# GoogleTest is fmt's vendored test/gtest; own main() in test/test-main.cc.
ZOO_REPO=fmtlib/fmt
ZOO_COMMIT=60ccad511fd680cb91d8b60a315759f71c67bef9
ZOO_KIND="C++ formatting / format-string parser"
ZOO_PATCHES=(heapgate.patch plant.patch)
ZOO_TARGETS=(format-test chrono-test xchar-test os-test)
ZOO_BINARIES=(fmt/bin/format-test fmt/bin/chrono-test fmt/bin/xchar-test fmt/bin/os-test)
ZOO_PLANT_TEST="format_test.args_in_different_positions"
ZOO_PLANT_FILE=test/format-test.cc
