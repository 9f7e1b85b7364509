#!/usr/bin/env bash
# bench/redisprof.sh [wsgateway binary]: where redis-server spends an
# apply.lua event. Starts its own redis-server and gateway on free loopback
# ports, captures one real apply.lua call (as run.sh's ceiling part does),
# fills 100k members with 16 events per call, then records redis-server
# with perf while the same load runs, and prints perf's flat profile by
# symbol and by shared object. Needs perf, redis-server, redis-benchmark,
# redis-cli, curl, go. Debian's redis-server lacks symbols for its Lua VM:
# its share shows as unsymbolized addresses inside the redis binary.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
for bin in perf redis-server redis-benchmark redis-cli curl; do
	command -v "$bin" >/dev/null || { echo "redisprof: $bin not found (apt-get install -y linux-perf redis-server redis-tools curl)" >&2; exit 1; }
done
workdir
gateway_bin "${1:-}"
go build -o "$WORK/ceiling" ./bench/ceiling
SECRET=bench-secret-0123456789abcdef0123456789

start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0"
LOAD=("$WORK/wsgateway" load --secret "$SECRET" --quiet)
capture_call
stop_gateway
"$WORK/ceiling" -events 16 <"$WORK/monitor.txt" >"$WORK/args16.txt"
mapfile -t ARGS16 <"$WORK/args16.txt"

# 100k members first, so the profile is of a board that is already full.
redis-benchmark -p "$RP" -n 12500 -c 50 -P 16 -r 100000 -q "${ARGS16[@]}" >/dev/null 2>&1
perf record -F 2000 -p "$RPID" -o "$WORK/perf.data" -- sleep 8 >/dev/null 2>&1 &
PERF=$!
redis-benchmark -p "$RP" -n 40000 -c 50 -P 16 -r 100000 -q "${ARGS16[@]}" 2>/dev/null | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1
wait "$PERF" || true
perf report -i "$WORK/perf.data" --no-children --sort dso -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -8
perf report -i "$WORK/perf.data" --no-children --sort symbol -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
