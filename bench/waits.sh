#!/usr/bin/env bash
# bench/waits.sh [wsgateway binary]: who waits for whom in a Redis ingest
# run. One redis-server, one gateway on it, the load of bench/run.sh (32
# players × 16 in flight over 100k members) for 12 s; over the middle 8 s
# it prints, for Redis, the gateway and the load generator, the CPU time
# their threads ran, the time they were runnable but waited for a core
# (the run queue, from /proc/<pid>/task/*/schedstat) and their voluntary
# and involuntary context switches. Redis's run + run-queue time short of
# 8 s is time it had nothing to do: waiting for the gateway's next
# pipeline. BENCH_REDIS_RT=1 runs Redis under SCHED_FIFO (bench/lib.sh).
# docs/performance.md, "Who waits for whom".
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir
gateway_bin "${1:-}"
SECRET=bench-secret-0123456789abcdef0123456789
start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0"
"$WORK/wsgateway" load --secret "$SECRET" --quiet --url "$URL" --board ingest --create --members 100000 \
	--players 32 --inflight 16 --spectators 0 --watchers 0 --duration 12s >"$WORK/load.txt" 2>&1 &
LP=$!
PIDS+=("$LP")

# snap PID: "run_ns queue_ns voluntary involuntary", summed over its threads.
snap() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{r += $1; w += $2} END {printf "%.0f %.0f ", r, w}'
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v + 0, n + 0}'
}
sleep 2
NAMES=(redis gateway load)
PROCS=("$RPID" "$GW_PID" "$LP")
S0=()
for p in "${PROCS[@]}"; do S0+=("$(snap "$p")"); done
sleep 8
for i in 0 1 2; do
	read -r r1 w1 v1 n1 <<<"$(snap "${PROCS[$i]}")"
	read -r r0 w0 v0 n0 <<<"${S0[$i]}"
	awk -v n="${NAMES[$i]}" -v r=$((r1 - r0)) -v w=$((w1 - w0)) -v v=$((v1 - v0)) -v i=$((n1 - n0)) \
		'BEGIN {printf "%-8s ran %.2f s, waited in the run queue %.2f s; %d voluntary, %d involuntary switches (8 s)\n", n, r / 1e9, w / 1e9, v, i}'
done
wait "$LP"
grep '^events' "$WORK/load.txt"
