# marl: Google's fiber task scheduler (C++), 322 tests over schedulers of 0-64
# worker threads. Build recipe: bench/real_suites/marl-CMakeLists.txt (copied
# as zoo/marl/CMakeLists.txt) and marl-tests.patch (own main + the plant:
# 20 strings in each of WaitGroup_10Tasks' tasks; with 0 workers the tasks run
# on the test's thread, with 1-64 on the scheduler's workers: every variant
# must catch it, since what other threads allocate is gated).
ZOO_NEW=0
ZOO_REPO=google/marl
ZOO_COMMIT=b8406ab0a82524170ead6dd6c371b579bbc28b3e
ZOO_KIND="C++ fiber scheduler"
ZOO_PATCHES=(../../marl-tests.patch)
ZOO_TARGETS=(marl_tests)
ZOO_BINARIES=(marl_tests)
ZOO_PLANT_TEST="*WaitGroup_10Tasks/*"
ZOO_PLANT_SITE="waitgroup_test.cpp:55"
