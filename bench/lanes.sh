#!/usr/bin/env bash
# bench/lanes.sh [wsgateway binary]: Redis ingest through one gateway (one
# lane, one pipeline in flight) against two gateways on the same
# redis-server (two lanes, two pipelines in flight), the same load: 32
# players × 16 in flight over 100k members, 10 s each. Prints each run's
# events/s and the CPU ticks (1/100 s) Redis and the gateways used.
# docs/performance.md, "Two apply lanes".
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir
gateway_bin "${1:-}"
BIN=$WORK/wsgateway
S=bench-secret-0123456789abcdef0123456789
start_redis
GW=()
GP=()
for i in 0 1; do
	p=$(freeport)
	"$BIN" --addr "127.0.0.1:$p" --jwt-secret "$S" --log-level error --redis-url "redis://127.0.0.1:$RP/0" >>"$WORK/gateway.log" 2>&1 &
	GW+=($!)
	PIDS+=($!)
	GP+=("$p")
	wait_http "http://127.0.0.1:$p/readyz"
done
L=("$BIN" load --secret "$S" --quiet --spectators 0 --watchers 0 --members 100000 --inflight 16)
for b in one two; do
	"${L[@]}" --url "ws://127.0.0.1:${GP[0]}/ws" --board "$b" --create --players 1 --duration 1s >/dev/null
done

r0=$(cpu_ticks "$RPID")
a0=$(cpu_ticks "${GW[0]}")
echo "one gateway, 32 players:"
"${L[@]}" --url "ws://127.0.0.1:${GP[0]}/ws" --board one --players 32 --duration 10s | grep '^events'
echo "  redis ticks $(($(cpu_ticks "$RPID") - r0)), gateway ticks $(($(cpu_ticks "${GW[0]}") - a0))"

r0=$(cpu_ticks "$RPID")
a0=$(cpu_ticks "${GW[0]}")
b0=$(cpu_ticks "${GW[1]}")
echo "two gateways, 16 players each, one board:"
"${L[@]}" --url "ws://127.0.0.1:${GP[0]}/ws" --board two --players 16 --duration 10s | grep '^events' &
"${L[@]}" --url "ws://127.0.0.1:${GP[1]}/ws" --board two --players 16 --duration 10s | grep '^events'
wait "$!" 2>/dev/null || true
echo "  redis ticks $(($(cpu_ticks "$RPID") - r0)), gateway ticks $(($(cpu_ticks "${GW[0]}") - a0)) + $(($(cpu_ticks "${GW[1]}") - b0))"
