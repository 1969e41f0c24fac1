# dispenso: Meta's work-stealing thread pool and parallel algorithms (C++).
# Four of its ~35 test binaries: thread_pool_test, task_set_test, future_test,
# pipeline_test (pools of up to tens of threads).
ZOO_REPO=facebookincubator/dispenso
ZOO_COMMIT=4e8ee9601c0ae251b27f08954ff1302bd0192f23
ZOO_KIND="C++ thread pool"
ZOO_PATCHES=(plant.patch)
ZOO_TARGETS=(thread_pool_test task_set_test future_test pipeline_test)
ZOO_BINARIES=(dispenso/tests/thread_pool_test dispenso/tests/task_set_test dispenso/tests/future_test dispenso/tests/pipeline_test)
# The plant: one more allocation in each of the 1,000 tasks this test's pool
# runs on its workers (a handler that allocates once more per request). A +1
# on the test's own thread sits within the 2 blocks a test with company keeps.
ZOO_PLANT_TEST="ThreadPool.SpinPollWithSleepForceQueue"
ZOO_PLANT_FILE=tests/thread_pool_test.cpp
