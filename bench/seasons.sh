#!/usr/bin/env bash
# Season data at scale (docs/performance.md, "Season data: a million lines
# in, a million entries out"; R38): one gateway on a Redis of its own
# imports an NDJSON body of SEASON_LINES lines (one member each) into a
# fresh board, re-runs the same import (nothing may change), then exports
# the board as NDJSON and as CSV. For each step it prints the wall time and
# the gateway process's resident memory before and at its peak (VmRSS read
# every 50 ms), the CPU time the gateway and redis-server each spent on it
# (from /proc: unlike the wall time, other work on a busy machine barely
# moves it), and checks the counts.
#
# Knobs (env): SEASON_LINES (1000000), SEASON_BOARD (the board's config,
# '{"idempotency_window":"1h"}'; e.g. add "shards":8), SEASON_BIN (a gateway
# binary to measure instead of this tree's build), BENCH_OUT (bench/out). Needs go,
# redis-server, redis-cli, curl, ss, jq.
set -euo pipefail
cd "$(dirname "$0")/.."

LINES=${SEASON_LINES:-1000000}
BOARD=${SEASON_BOARD:-'{"idempotency_window":"1h"}'}
OUT=${BENCH_OUT:-bench/out}
SECRET=bench-secret-0123456789abcdef0123456789
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir

gateway_bin "${SEASON_BIN:-}"
start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0"
ADMIN=$("$WORK/wsgateway" token --secret "$SECRET" --sub bench --role admin --ttl 2h)
API="http://127.0.0.1:$GP/api/v1/boards/season"
curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $ADMIN" -d "$BOARD" "$API"

# Members m1…mN, scores spread with ties, a name on every tenth line.
awk -v n="$LINES" 'BEGIN {
	for (i = 1; i <= n; i++) {
		if (i % 10 == 0) printf "{\"member\":\"m%d\",\"delta\":%d,\"name\":\"Player %d\"}\n", i, (i * 7919) % 100000, i
		else printf "{\"member\":\"m%d\",\"delta\":%d}\n", i, (i * 7919) % 100000
	}
}' >"$WORK/season.ndjson"
echo "body: $LINES lines, $(stat -c %s "$WORK/season.ndjson") bytes" >&2

rss() { awk '/^VmRSS/ {print $2}' "/proc/$GW_PID/status"; }
TICK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, in ticks

# measure NAME CMD…: runs CMD, printing its time and the gateway's RSS
# before and at its peak (kB), and saves CMD's output in $WORK/NAME.out.
measure() {
	local name=$1
	shift
	local before peak_file="$WORK/$name.peak"
	before=$(rss)
	echo "$before" >"$peak_file"
	(
		peak=$before
		while kill -0 "$GW_PID" 2>/dev/null; do
			r=$(rss)
			if [ "$r" -gt "$peak" ]; then peak=$r; echo "$peak" >"$peak_file"; fi
			sleep 0.05
		done
	) &
	local sampler=$!
	local t0 t1 g0 g1 r0 r1
	g0=$(cpu "$GW_PID")
	r0=$(cpu "$RPID")
	t0=$(date +%s.%N)
	"$@" >"$WORK/$name.out"
	t1=$(date +%s.%N)
	g1=$(cpu "$GW_PID")
	r1=$(cpu "$RPID")
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	local peak
	peak=$(cat "$peak_file")
	printf '%-14s %8.2f s   rss before %7d kB   peak %7d kB   growth %6.1f MB   cpu gateway %6.2f s   redis %6.2f s\n' \
		"$name" "$(echo "$t1 - $t0" | bc)" "$before" "$peak" "$(echo "($peak - $before) / 1024" | bc -l)" \
		"$(echo "($g1 - $g0) / $TICK" | bc -l)" "$(echo "($r1 - $r0) / $TICK" | bc -l)" | tee -a "$OUT/seasons.txt"
}

: >"$OUT/seasons.txt"
IMPORT=(curl -fsS -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/x-ndjson'
	--data-binary "@$WORK/season.ndjson" "$API/import?id=season-1")
redis-cli -p "$RP" config resetstat >/dev/null
measure import "${IMPORT[@]}"
redis-cli -p "$RP" info commandstats | grep -E 'evalsha|hsetnx' | tee -a "$OUT/seasons.txt" >&2
jq -c . "$WORK/import.out" | tee -a "$OUT/seasons.txt"
[ "$(jq .applied "$WORK/import.out")" = "$LINES" ] || { echo "bench: import did not apply every line" >&2; exit 1; }
measure import-again "${IMPORT[@]}"
jq -c . "$WORK/import-again.out" | tee -a "$OUT/seasons.txt"
[ "$(jq .duplicate "$WORK/import-again.out")" = "$LINES" ] || { echo "bench: the re-run was not all duplicates" >&2; exit 1; }

measure export-ndjson curl -fsS -H "Authorization: Bearer $ADMIN" "$API/export?format=ndjson"
measure export-csv curl -fsS -H "Authorization: Bearer $ADMIN" "$API/export?format=csv"
n=$(wc -l <"$WORK/export-ndjson.out")
c=$(($(wc -l <"$WORK/export-csv.out") - 1))
echo "export lines: ndjson $n, csv $c (board holds $LINES)" | tee -a "$OUT/seasons.txt"
[ "$n" = "$LINES" ] && [ "$c" = "$LINES" ] || { echo "bench: the exports do not hold every entry" >&2; exit 1; }
head -n 2 "$WORK/export-ndjson.out" >&2
