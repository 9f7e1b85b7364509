#!/usr/bin/env bash
# The members-subscription amplification probe (docs/performance.md,
# "Member lists under abuse"): one gateway on a Redis of its own;
# bench/listprobe makes LP_BOARDS boards of LP_MEMBERS members, keeps them
# changing (LP_RATE events/s), and measures another client's ack latency
# and Redis's CPU alone, then while one player holds LP_CONNS connections,
# each subscribed on every board to LP_IDS distinct ids (LP_OWNERS: the
# connections are of that many members instead).
#
# Knobs (env): LP_BOARDS (8), LP_MEMBERS (10000), LP_RATE (400), LP_CONNS
# (16), LP_IDS (100), LP_OWNERS (1), LP_DURATION (10s), BENCH_GATEWAY (a wsgateway binary
# to measure instead of this tree's), BENCH_OUT (bench/out). Needs go,
# redis-server, redis-cli, curl, ss.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${BENCH_OUT:-bench/out}
SECRET=bench-secret-0123456789abcdef0123456789
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir

gateway_bin "${BENCH_GATEWAY:-}"
go build -o "$WORK/listprobe" ./bench/listprobe
start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0"
"$WORK/listprobe" --url "$URL" --secret "$SECRET" --redis "127.0.0.1:$RP" --gateway-pid "$GW_PID" \
	--boards "${LP_BOARDS:-8}" --members "${LP_MEMBERS:-10000}" --rate "${LP_RATE:-400}" \
	--conns "${LP_CONNS:-16}" --owners "${LP_OWNERS:-1}" --ids "${LP_IDS:-100}" --duration "${LP_DURATION:-10s}" \
	--json "$OUT/lists.json"
