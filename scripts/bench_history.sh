#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# heapgate history at issue 45's scale (bench/history_bench.cpp): a 5,000-test
# report added to SQLite and to PostgreSQL, and the trend pages of 1,000
# commits x 2,000 tests opened in headless Chromium. Starts its own
# PostgreSQL server in a temporary directory (as the postgres user when run
# as root) and stops it at the end.
#   scripts/bench_history.sh [BUILD_DIR]   (default build; builds history_bench there)
set -eu
build=${1:-build}
cmake --build "$build" -j2 --target history_bench
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d /tmp/heapgate-history-bench.XXXXXX)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
echo bench > "$work/pw"
[ "$(id -u)" = 0 ] && chown postgres "$work/pw"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg "$bin/initdb" -D "$work/data" -U bench --pwfile="$work/pw" -A scram-sha-256 -E UTF8 --locale=C >/dev/null
# The server as a CI database would run it: fsync on.
as_pg "$bin/pg_ctl" -D "$work/data" -l "$work/log" -w -o "-p $port -k $work -c listen_addresses=127.0.0.1" start >/dev/null
trap 'as_pg "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null; rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GB", $2/1e6}' /proc/meminfo), $(. /etc/os-release; echo "$PRETTY_NAME"), PostgreSQL $("$bin/postgres" --version | awk '{print $3}'), SQLite $(sqlite3 --version 2>/dev/null | awk '{print $1}')"
shift || true
"$build/bench/history_bench" "$work/bench" --postgresql "postgresql://bench:bench@127.0.0.1:$port/postgres" "$@"
