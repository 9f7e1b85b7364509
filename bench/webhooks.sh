#!/usr/bin/env bash
# The webhook load check (docs/performance.md, "Webhooks: 1,000 boards final
# in one second"): one gateway on a Redis of its own; `wsgateway load`
# writes to board "load" at a fixed rate for WH_DURATION: alone (the
# baseline), then while bench/webhookload's WH_BOARDS boards, one score
# each and a board.final webhook to a local receiver, end in the same
# second halfway through, then alone again (a second baseline: on a shared
# machine the neighbours' load moves between runs). Compared: the ack p99
# of the runs, and of the seconds around the end against the baselines'
# worst second; every board's delivery must arrive.
#
# Knobs (env): WH_BOARDS (1000), WH_RATE (4000 events/s), WH_PLAYERS (16),
# WH_DURATION (20s), WH_LEAD (60s: the boards' setup must fit in it), BENCH_OUT (bench/out). Needs go, redis-server,
# redis-cli, curl, ss, jq.
set -euo pipefail
cd "$(dirname "$0")/.."

BOARDS=${WH_BOARDS:-1000}
RATE=${WH_RATE:-4000}
PLAYERS=${WH_PLAYERS:-16}
DUR=${WH_DURATION:-20s}
OUT=${BENCH_OUT:-bench/out}
SECRET=bench-secret-0123456789abcdef0123456789
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir

gateway_bin ""
go build -o "$WORK/webhookload" ./bench/webhookload
start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0" --webhook-allow-private
LOAD=("$WORK/wsgateway" load --secret "$SECRET" --quiet --url "$URL" --board load --create
	--spectators 0 --watchers 0 --players "$PLAYERS" --inflight 8 --rate "$RATE" --duration "$DUR")

echo "== baseline: $RATE events/s for $DUR, nothing else" >&2
"${LOAD[@]}" --json "$OUT/webhooks-base.json" >"$OUT/webhooks-base.txt"

echo "== the same while $BOARDS boards end in one second halfway" >&2
secs=$(echo "$DUR" | tr -dc 0-9)
"$WORK/webhookload" --url "http://127.0.0.1:$GP" --secret "$SECRET" --boards "$BOARDS" --lead "${WH_LEAD:-60s}" \
	--json "$OUT/webhooks-deliveries.json" >"$WORK/wh.out" 2>&1 &
WHPID=$!
PIDS+=("$WHPID")
for _ in $(seq 900); do grep -q '^ends ' "$WORK/wh.out" && break; sleep 0.1; done
ends=$(awk '/^ends / {print $2}' "$WORK/wh.out")
[ -n "$ends" ] || { cat "$WORK/wh.out" >&2; exit 1; }
# Start the load so that the end falls in its middle.
start=$((ends - secs / 2))
while [ "$(date +%s)" -lt "$start" ]; do sleep 0.05; done
"${LOAD[@]}" --json "$OUT/webhooks-finals.json" >"$OUT/webhooks-finals.txt"
wait "$WHPID"
cat "$OUT/webhooks-deliveries.json" >&2
echo "== baseline again" >&2
"${LOAD[@]}" --json "$OUT/webhooks-base2.json" >"$OUT/webhooks-base2.txt"

# Per-second p99s: the baseline's worst second, and the worst of the
# seconds from the end to 5 s after it.
worst() { jq -r "$1" "$2"; }
base_p99=$(worst '.ack_latency.p99_ms' "$OUT/webhooks-base.json")
base2_p99=$(worst '.ack_latency.p99_ms' "$OUT/webhooks-base2.json")
fin_p99=$(worst '.ack_latency.p99_ms' "$OUT/webhooks-finals.json")
base_sec=$(worst '[.series[].ack_p99_ms] | max' "$OUT/webhooks-base.json")
base2_sec=$(worst '[.series[].ack_p99_ms] | max' "$OUT/webhooks-base2.json")
started=$(jq -r '.started' "$OUT/webhooks-finals.json")
t0=$(( ends - $(date -d "$started" +%s) ))
fin_sec=$(jq -r --argjson a "$t0" '[.series[] | select(.t >= $a and .t < $a + 6) | .ack_p99_ms] | max' "$OUT/webhooks-finals.json")
printf 'ack p99 whole run: baseline %s ms, with finals %s ms, baseline again %s ms\n' "$base_p99" "$fin_p99" "$base2_p99"
printf 'worst second p99: baselines %s and %s ms, end..end+5s %s ms\n' "$base_sec" "$base2_sec" "$fin_sec"
printf 'uptime load average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
