#!/usr/bin/env bash
# The black-holed receiver check (docs/performance.md, "Webhooks: a receiver
# that never answers"): one gateway on a Redis of its own; WH_BOARDS (20)
# boards end in the same second, each told (board.final) to two webhooks:
# one on a receiver that accepts and never answers, one on a receiver that
# answers at once. Prints when the answering receiver got its deliveries:
# first, median and last, seconds after the end (R28: within 5 s). BIN
# (optional) is a gateway binary to measure instead of this tree's (an
# older commit's, for a before/after). Needs go, redis-server, redis-cli,
# curl, ss.
set -euo pipefail
cd "$(dirname "$0")/.."
SECRET=bench-secret-0123456789abcdef0123456789
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir
gateway_bin "${1:-}"
go build -o "$WORK/webhookload" ./bench/webhookload
start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0" --webhook-allow-private
"$WORK/webhookload" --url "http://127.0.0.1:$GP" --secret "$SECRET" --boards "${WH_BOARDS:-20}" --lead 10s --wait 3m --blackhole \
	--json "$WORK/blackhole.json" >"$WORK/wh.out" 2>&1 || { cat "$WORK/wh.out" >&2; exit 1; }
jq -r '"\(.delivered) of \(.boards) delivered: first \(.first_after_s * 10 | round / 10) s, median \(.median_after_s * 10 | round / 10) s, last \(.last_after_s * 10 | round / 10) s after the end"' "$WORK/blackhole.json"
