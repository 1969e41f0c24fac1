#!/bin/bash
# The "Command-line Usage" script of Apache Mesos' memory-profiling page,
# unchanged except that SECONDS and HOST may come from the environment
# (PROFILE_SECONDS, HOST), so it can run against examples/http_service:
#   HEAPGATE_MEMORY_PROFILING=true HEAPGATE_HTTP=127.0.0.1:5050 ./http_service &
#   PROFILE_SECONDS=5 HOST=127.0.0.1:5050 ./mesos_script.sh   # leaves ./raw
# Note that Mesos itself rejects `duration=600` (no unit); heapgate reads a
# bare number as seconds, so the page's script works as printed.

SECONDS=${PROFILE_SECONDS:-600}
HOST=${HOST:-example.org:5050}

curl ${HOST}/memory-profiler/start?duration=${SECONDS}
sleep $((${SECONDS} + 1))
wget ${HOST}/memory-profiler/download/raw
