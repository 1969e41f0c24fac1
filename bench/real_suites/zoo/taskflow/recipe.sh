# taskflow/taskflow: C++ task-parallel runtime; unittests/test_asyncs.cpp (doctest 2.4.7, vendored), executors of 1-16 workers.
ZOO_REPO=taskflow/taskflow
ZOO_COMMIT=83f90a279aaab33fd4ce1deed00ca07819cbc8f8
ZOO_KIND="C++ task graphs, work stealing (doctest, threaded)"
ZOO_FRAMEWORK=doctest
ZOO_PATCHES=(heapgate.patch plant.patch)
ZOO_TARGETS=(test_asyncs)
ZOO_BINARIES=(test_asyncs)
ZOO_PLANT_TEST="RecursiveAsyncRuntime.4threads"
ZOO_PLANT_FILE=unittests/test_asyncs.cpp
