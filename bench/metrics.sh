#!/usr/bin/env bash
# The public /metrics check (docs/performance.md, "Public /metrics"): one
# gateway (--dev, memory engine) with 40 boards scored once each, then
# bench/metricsflood's N requests for /metrics from an untrusted client
# address; prints the gateway's CPU time a request. BIN (optional) is a
# gateway binary to measure instead of this tree's (an older commit's, for
# a before/after). Knobs (env): MF_N (3000), MF_C (8). Needs go, curl, ss.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir
gateway_bin "${1:-}"
go build -o "$WORK/metricsflood" ./bench/metricsflood
GP=$(freeport)
"$WORK/wsgateway" --dev --addr "127.0.0.1:$GP" --trusted-proxies 127.0.0.1 --log-level error >"$WORK/gateway.log" 2>&1 &
GW_PID=$!
PIDS+=("$GW_PID")
wait_http "http://127.0.0.1:$GP/readyz"
tok=$(curl -fsS -X POST -d '{"sub":"bench","role":"admin"}' "http://127.0.0.1:$GP/api/v1/dev/token" | sed 's/.*"token":"\([^"]*\)".*/\1/')
for b in $(seq 40); do
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $tok" -d "[{\"id\":\"e$b\",\"member\":\"m$b\",\"delta\":$b}]" \
		"http://127.0.0.1:$GP/api/v1/boards/board-$b/scores"
done
"$WORK/metricsflood" --url "http://127.0.0.1:$GP" --pid "$GW_PID" --n "${MF_N:-3000}" --c "${MF_C:-8}"
