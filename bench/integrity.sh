#!/usr/bin/env bash
# The validation hook's cost (docs/performance.md, "Validation hook"): one
# gateway on a Redis of its own and a local hook (bench/hookd).
#
#   1. ingest, A/B alternated (ABBA) in one sitting: board "plain" (the
#      defaults) against board "topk" (the same with validate top 100 and
#      the hook), both seeded with 100 members far ahead, so almost no
#      event of the load reaches the top 100 (the hook's calls are counted
#      and reported). Each run: `wsgateway load` as fast as acks return,
#      and Redis's own time per apply.lua call (INFO commandstats, reset
#      before the run), which the other processes on the machine cannot
#      move;
#   2. the hook's added latency: board "every" (validate top 0: the hook
#      sees each event) against "plain" at a fixed rate, alternated, ack
#      p50/p99 and the gateway's own histogram of the call;
#   3. a slow hook slows only the events it judges: board "slowk" (top 100,
#      a hook answering after INT_HOOK_DELAY_MS) under the load at a fixed
#      rate, alone ("quiet"), with contenders arriving meanwhile ("busy":
#      INT_CONTENDERS REST callers, each sending one new top-100 event at a
#      time, every one waiting for the slow hook) and with the same callers
#      sending to board "plain" and pausing as long as the hook would
#      ("control": the callers' own CPU without a hook), rotated; the
#      load's ack p50/p99 are those of the events not judged.
#
# Each line: events/s, ack p50, p99 (ms), Redis's time in EVALSHA per
# event (µs), EVALSHA calls, hook calls, Redis and gateway CPU per event
# (µs, /proc) and the Redis commands the scripts ran per event (a count
# the machine's other work cannot move).
#
# INT_IR=1 counts instructions instead (below). Knobs (env): INT_PAIRS (3 AB pairs), INT_DURATION (10s), INT_PLAYERS (16),
# INT_INFLIGHT (8), INT_RATE (2000 events/s, parts 2 and 3),
# INT_HOOK_DELAY_MS (200), INT_CONTENDERS (8), BENCH_OUT (bench/out). Needs
# go, redis-server, redis-cli, curl, ss, jq.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${INT_PAIRS:-3}
DUR=${INT_DURATION:-10s}
PLAYERS=${INT_PLAYERS:-16}
INFLIGHT=${INT_INFLIGHT:-8}
RATE=${INT_RATE:-2000}
HOOK_MS=${INT_HOOK_DELAY_MS:-200}
CONTENDERS=${INT_CONTENDERS:-8}
OUT=${BENCH_OUT:-bench/out}
SECRET=bench-secret-0123456789abcdef0123456789
HOOK_SECRET=bench-hook-secret-0123456789
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir

gateway_bin ""
go build -o "$WORK/hookd" ./bench/hookd
start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0" --webhook-allow-private
HP=$(freeport)
"$WORK/hookd" --addr "127.0.0.1:$HP" --secret "$HOOK_SECRET" >"$WORK/hookd.log" 2>&1 &
PIDS+=("$!")
SP=$(freeport)
"$WORK/hookd" --addr "127.0.0.1:$SP" --secret "$HOOK_SECRET" --delay "${HOOK_MS}ms" >"$WORK/hookd-slow.log" 2>&1 &
PIDS+=("$!")
wait_http "http://127.0.0.1:$HP/count"
wait_http "http://127.0.0.1:$SP/count"

ADMIN=$("$WORK/wsgateway" token --secret "$SECRET" --sub bench --role admin --ttl 1h)
API="http://127.0.0.1:$GP/api/v1/boards"
# hook TOP [PORT]: a board config with a validation hook.
hook() { printf '{"validate":{"url":"http://127.0.0.1:%s/","secret":"%s","top":%s,"timeout":"5s"}}' "${2:-$HP}" "$HOOK_SECRET" "$1"; }
curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $ADMIN" -d '{}' "$API/plain"
curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $ADMIN" -d "$(hook 100)" "$API/topk"
curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $ADMIN" -d "$(hook 0)" "$API/every"
curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $ADMIN" -d "$(hook 100 "$SP")" "$API/slowk"
# 100 members far ahead of anything the load reaches.
seed=$(jq -cn '[range(100) | {id: "seed-\(.)", member: "top-\(.)", delta: (1000000000000 - .)}]')
for b in plain topk slowk; do
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $ADMIN" -d "$seed" "$API/$b/scores"
done
calls() { curl -fsS "http://127.0.0.1:$HP/count" "http://127.0.0.1:$SP/count" | awk '{n += $1} END {print n}'; }

LOAD=("$WORK/wsgateway" load --secret "$SECRET" --quiet --url "$URL" --spectators 0 --watchers 0
	--players "$PLAYERS" --inflight "$INFLIGHT" --members 100000)

# INT_IR=1: instead of the parts below, count what redis-server runs per
# event for boards plain and topk under callgrind (as bench/luaab.sh does):
# one real one-event call of each, captured with MONITOR and turned by
# bench/ceiling into INT_IR_EVENTS (64) events per call of random members
# and ids; both boards filled with 100k members; then INT_PAIRS rounds,
# each a fresh redis-server per board from the filled data set, 20k
# events measured. Needs valgrind.
if [ "${INT_IR:-}" = 1 ]; then
	EV=${INT_IR_EVENTS:-64}
	go build -o "$WORK/ceiling" ./bench/ceiling
	for b in plain topk; do
		redis-cli -p "$RP" monitor >"$WORK/mon-$b.txt" &
		mon=$!
		sleep 0.3
		"${LOAD[@]}" --board "$b" --players 1 --inflight 1 --rate 20 --duration 500ms --members 10 >/dev/null
		sleep 0.3
		kill "$mon"
		wait "$mon" 2>/dev/null || true
		"$WORK/ceiling" -events "$EV" <"$WORK/mon-$b.txt" >"$WORK/args-$b.txt"
		mapfile -t args <"$WORK/args-$b.txt"
		redis-benchmark -p "$RP" -n $((200000 / EV)) -c 50 -P 16 -r 100000 -q "${args[@]}" >/dev/null 2>&1
	done
	stop_gateway
	redis-cli -p "$RP" save >/dev/null
	# ir BOARD: instructions per event of BOARD's calls on a copy of the
	# filled data set, in a redis-server under callgrind.
	ir() {
		local port dir pid n=$((20000 / EV)) tot args
		mapfile -t args <"$WORK/args-$1.txt"
		port=$(freeport)
		dir=$(mktemp -d -p "$WORK")
		cp "$WORK/dump.rdb" "$dir/dump.rdb"
		valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/callgrind.out" \
			redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
			--daemonize no --protected-mode no >"$dir/redis.log" 2>&1 &
		pid=$!
		for _ in $(seq 600); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.2; done
		args[1]=$(redis-cli -p "$port" -x script load <"$WORK/apply.lua")
		callgrind_control -i on "$pid" >/dev/null 2>&1
		redis-benchmark -p "$port" -n "$n" -c 50 -P 16 -r 100000 -q "${args[@]}" >/dev/null 2>&1
		callgrind_control -i off "$pid" >/dev/null 2>&1
		local bad
		bad=$(redis-cli -p "$port" info commandstats | tr -d '\r' | grep -o 'cmdstat_evalsha:.*failed_calls=[0-9]*' | grep -o '[0-9]*$')
		redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
		wait "$pid" 2>/dev/null || true
		tot=$(awk '/^totals:/ {print $2}' "$dir/callgrind.out")
		awk -v t="$tot" -v n="$((n * EV))" -v f="${bad:-0}" 'BEGIN {printf "%.0f%s", t / n, (f > 0 ? " (" f " calls failed)" : "")}'
		rm -rf "$dir"
	}
	go run ./bench/luasrc apply.lua >"$WORK/apply.lua"
	echo "redis-server instructions per event, $EV events per call (callgrind, 20k events)"
	for r in $(seq "$PAIRS"); do
		if [ $((r % 2)) = 1 ]; then order="plain topk"; else order="topk plain"; fi
		line="round $r:"
		for b in $order; do line+="  $b $(ir "$b")"; done
		echo "$line"
	done
	exit 0
fi

# run BOARD TAG [load flags…]: one load run; prints "events/s p50 p99
# redis-us-per-event apply-calls hook-calls redis-cpu-us-per-event
# gateway-cpu-us-per-event" (Redis's time in EVALSHA, and the processes'
# CPU time, over the events acknowledged).
run() {
	local board=$1 tag=$2
	shift 2
	redis-cli -p "$RP" config resetstat >/dev/null
	local before r0 g0
	before=$(calls)
	r0=$(cpu_ticks "$RPID")
	g0=$(cpu_ticks "$GW_PID")
	"${LOAD[@]}" --board "$board" --duration "$DUR" "$@" --json "$OUT/integrity-$tag.json" >/dev/null
	local stats cmds
	stats=$(redis-cli -p "$RP" info commandstats | tr -d '\r' | awk -F'[:,=]' '/^cmdstat_evalsha:/ {print $5, $3}')
	cmds=$(redis-cli -p "$RP" info commandstats | tr -d '\r' | awk -F'[:,=]' '/^cmdstat_/ && !/^cmdstat_(evalsha|eval|script|info|config|ping|client|hello|select)[:|]/ {n += $3} END {print n + 0}')
	local j="$OUT/integrity-$tag.json"
	local acked
	acked=$(jq -r '.events.acked' "$j")
	local r1 g1
	r1=$(cpu_ticks "$RPID")
	g1=$(cpu_ticks "$GW_PID")
	echo "$(jq -r '[.events.per_second, .ack_latency.p50_ms, .ack_latency.p99_ms] | map(tostring) | join(" ")' "$j") $(echo "$stats" | awk -v n="$acked" '{printf "%.2f %d", $1 / n, $2}') $(($(calls) - before)) $(awk -v a="$r0" -v b="$r1" -v c="$g0" -v d="$g1" -v n="$acked" -v t="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f %.2f", (b - a) / t / n * 1e6, (d - c) / t / n * 1e6}') $(awk -v c="$cmds" -v n="$acked" 'BEGIN {printf "%.2f", c / n}')"
}

echo "== ingest: plain vs topk (validate top 100, a hook), $PAIRS ABBA pairs of $DUR" >&2
: >"$OUT/integrity-ingest.txt"
for i in $(seq "$PAIRS"); do
	if [ $((i % 2)) = 1 ]; then order="plain topk"; else order="topk plain"; fi
	for b in $order; do
		line=$(run "$b" "ingest-$b-$i")
		echo "$b $i $line" | tee -a "$OUT/integrity-ingest.txt" >&2
	done
done

hookstats() { curl -fsS "http://127.0.0.1:$MP/metrics" | awk '/^wsgateway_validate_seconds_sum/ {s = $2} /^wsgateway_validate_seconds_count/ {n = $2} END {print s, n}'; }
H0=$(hookstats)
echo "== latency: plain vs every (validate top 0: every event through the hook) at $RATE events/s" >&2
: >"$OUT/integrity-latency.txt"
for i in $(seq "$PAIRS"); do
	if [ $((i % 2)) = 1 ]; then order="plain every"; else order="every plain"; fi
	for b in $order; do
		line=$(run "$b" "latency-$b-$i" --rate "$RATE")
		echo "$b $i $line" | tee -a "$OUT/integrity-latency.txt" >&2
	done
done
# contend: until the file $WORK/stop exists, CONTENDERS callers each send
# one event at a time that enters the top 100: a new member above all
# before it (its score grows with the clock, in µs).
T0=${EPOCHREALTIME/./}
# contend C BOARD [PAUSE]: caller C's loop, to BOARD, pausing PAUSE
# seconds after each.
contend() {
	local c=$1 board=$2 pause=${3:-} k=0
	while [ ! -e "$WORK/stop" ]; do
		k=$((k + 1))
		curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $ADMIN" \
			-d "[{\"id\":\"c$c-$k\",\"member\":\"c$c-$k\",\"delta\":$((2000000000000 + ${EPOCHREALTIME/./} - T0))}]" "$API/$board/scores"
		if [ -n "$pause" ]; then sleep "$pause"; fi
	done
	echo "$k" >"$WORK/contended-$c"
}
H1=$(hookstats)
echo "== a slow hook (${HOOK_MS}ms): slowk alone, with $CONTENDERS contenders, with $CONTENDERS callers to plain, at $RATE events/s" >&2
: >"$OUT/integrity-slow.txt"
pause=$(printf '%d.%03d' $((HOOK_MS / 1000)) $((HOOK_MS % 1000)))
for i in $(seq "$PAIRS"); do
	case $((i % 3)) in
	1) order="quiet busy control" ;;
	2) order="busy control quiet" ;;
	0) order="control quiet busy" ;;
	esac
	for arm in $order; do
		rm -f "$WORK/stop" "$WORK"/contended-*
		cpids=()
		for c in $(seq "$CONTENDERS"); do
			case $arm in
			busy) contend "$i$c" slowk & ;;
			control) contend "$i$c" plain "$pause" & ;;
			*) continue ;;
			esac
			cpids+=("$!")
		done
		line=$(run slowk "slow-$arm-$i" --rate "$RATE")
		touch "$WORK/stop"
		for p in "${cpids[@]}"; do wait "$p"; done
		sent=$( (cat "$WORK"/contended-* 2>/dev/null || true) | awk '{n += $1} END {print n + 0}')
		echo "$arm $i $line $sent" | tee -a "$OUT/integrity-slow.txt" >&2
	done
done
H2=$(hookstats)
curl -fsS "http://127.0.0.1:$MP/metrics" | grep -E '^wsgateway_validate_(seconds_(sum|count)|calls_total)' >"$OUT/integrity-metrics.txt" || true

# Medians per board (and the spread: min..max).
col() { awk -v b="$2" -v c="$3" '$1 == b {print $c}' "$1" | sort -g; }
med() { awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
spread() { awk 'NR == 1 {lo = $1} {hi = $1} END {print lo ".." hi}'; }
summary() {
	for b in $(awk '{print $1}' "$1" | sort -u); do
		printf '%-6s events/s %s (%s)  ack p50 %s ms (%s)  p99 %s ms (%s)  redis CPU us/event %s (%s)  gateway CPU us/event %s (%s)  redis us/event in EVALSHA %s (%s)  commands/event %s (%s)  hook calls %s\n' "$b" \
			"$(col "$1" "$b" 3 | med)" "$(col "$1" "$b" 3 | spread)" "$(col "$1" "$b" 4 | med)" "$(col "$1" "$b" 4 | spread)" \
			"$(col "$1" "$b" 5 | med)" "$(col "$1" "$b" 5 | spread)" \
			"$(col "$1" "$b" 9 | med)" "$(col "$1" "$b" 9 | spread)" "$(col "$1" "$b" 10 | med)" "$(col "$1" "$b" 10 | spread)" \
			"$(col "$1" "$b" 6 | med)" "$(col "$1" "$b" 6 | spread)" "$(col "$1" "$b" 11 | med)" "$(col "$1" "$b" 11 | spread)" \
			"$(awk -v b="$b" '$1 == b {n += $8} END {print n}' "$1")"
	done
}
echo "== ingest" && summary "$OUT/integrity-ingest.txt"
echo "== latency at $RATE events/s" && summary "$OUT/integrity-latency.txt"
echo "== a slow hook (${HOOK_MS}ms), the load's events at $RATE events/s (callers sent: busy $(awk '$1 == "busy" {n += $12} END {print n + 0}' "$OUT/integrity-slow.txt"), control $(awk '$1 == "control" {n += $12} END {print n + 0}' "$OUT/integrity-slow.txt"))" && summary "$OUT/integrity-slow.txt"
mean() { echo "$1 $2" | awk '{n = $4 - $2; printf "%d calls, mean %.2f ms\n", n, n ? ($3 - $1) / n * 1000 : 0}'; }
echo "== the gateway's hook calls: part 2 $(mean "$H0" "$H1"); part 3 $(mean "$H1" "$H2")" && cat "$OUT/integrity-metrics.txt"
