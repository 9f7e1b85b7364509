#!/usr/bin/env bash
# make bench: the gateway against its ceilings, on this machine, loopback only.
#
#   1. ceilings on a redis-server started here, redis-benchmark -P 16 -c 50:
#      the reference script (the least an idempotent incr+rank does: SET NX,
#      ZINCRBY, ZREVRANK, ZSCORE) at 100k members; apply.lua, the project's
#      own script (EVALSHA captured from a real gateway call, random member
#      and id) with one event per call at 100k and up to 1M members, and with
#      16 events per call (as the lane sends a busy board's events) at 100k;
#   2. ingest through the gateway (Redis engine, then memory engine) with
#      `wsgateway load`: the max rate, then half of it for the ack latency;
#      and the same load against a bare coder/websocket server answering
#      each score with a fixed ack (bench/fanout --echo), the memory
#      engine's floor;
#   3. fan-out: N spectators of one board at a 100ms interval, against a bare
#      coder/websocket broadcast loop (bench/fanout) measured the same way;
#   4. REST on the memory engine (wrk, 64 keep-alive clients): gateway CPU
#      per one-event POST …/scores and per GET …/members/{m}?around=5;
#   5. memory per idle connection, gateway vs bare coder/websocket, with
#      the gateway's breakdown (heap, stacks, goroutines, kernel socket
#      memory) and its CPU per idle connection (pings, timers);
#   6. fan-out against the plain broadcast server (fanout-plain): memory per
#      subscribed spectator, CPU per frame and frame lag p99, each as a
#      ratio gateway/plain, at 4,000 spectators and 10 frames/s of 1.4 KB;
#   7. CPU profiles of the gateway (pprof via --metrics-addr);
#   8. durable acks (part ingest-replicas): the Redis engine's ingest with
#      a replica attached to the run's Redis, `--redis-replicas 1` against
#      0, alternated BENCH_REPLICA_ROUNDS times (2), each at the max rate,
#      then both at half of the first round's rate without WAIT, for the
#      ack latency at one offered load.
#
# Knobs (env): BENCH_DURATION (10s), BENCH_SPECTATORS (10000),
# BENCH_PING_INTERVAL (25s, the default: the idle part's --ping-interval, in s),
# BENCH_IDLE_SECS (the ping interval's seconds: the idle CPU's window),
# BENCH_PLAYERS (32), BENCH_INFLIGHT (16), BENCH_CEIL_N (300000),
# BENCH_FANOUT_SIZES ("1000 $BENCH_SPECTATORS"), BENCH_OUT (bench/out),
# BENCH_PLAIN_SPECTATORS (4000), BENCH_PLAIN_TOP (36: the gateway's top-N) and
# BENCH_PLAIN_BARE_TOP (32: the plain server's), which give both ~1.4 KB frames,
# BENCH_PARTS ("ref ceiling ingest-redis ingest-replicas ingest-memory rest idle fanout fanout-plain gobench": run only
# some; the table leaves out rows whose run is missing), BENCH_GATEWAY (a
# wsgateway binary to measure instead of this tree's, e.g. an older commit's
# for a before/after in one session), BENCH_LOAD (a wsgateway binary whose
# `load` drives the runs; default the measured gateway's own binary, so set
# it to compare gateways under one load generator, or load generators
# against one gateway), BENCH_REDIS_RT (1: redis-server under SCHED_FIFO,
# as if it had a core of its own; bench/lib.sh's redis_rt). Needs go,
# redis-server, redis-benchmark, redis-cli, curl, ss.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${BENCH_DURATION:-10s}
SPECTATORS=${BENCH_SPECTATORS:-10000}
# Fan-out is measured at 1,000 and at SPECTATORS spectators.
FANOUT_SIZES=${BENCH_FANOUT_SIZES:-"1000 $SPECTATORS"}
PLAYERS=${BENCH_PLAYERS:-32}
INFLIGHT=${BENCH_INFLIGHT:-16}
CEIL_N=${BENCH_CEIL_N:-300000}
OUT=${BENCH_OUT:-bench/out}
PARTS=" ${BENCH_PARTS:-ref ceiling ingest-redis ingest-replicas ingest-memory rest idle fanout fanout-plain gobench} "
REPLICA_ROUNDS=${BENCH_REPLICA_ROUNDS:-2}
part() { [[ $PARTS == *" $1 "* ]]; }
SECRET=bench-secret-0123456789abcdef0123456789
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir

for bin in redis-server redis-benchmark redis-cli curl ss; do
	command -v "$bin" >/dev/null || { echo "bench: $bin not found (apt-get install -y redis-server redis-tools curl iproute2)" >&2; exit 1; }
done

say() { printf '\n== %s\n' "$*" >&2; }

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
TCK=$(getconf CLK_TCK)
cpu_seconds() { awk -v a="$1" -v b="$2" -v t="$TCK" 'BEGIN {printf "%.3f", (b - a) / t}'; }

# wait_conns PORT N: until N connections to PORT are established (60 s, and
# 1 s more per 100 connections: a busy box dials slowly).
wait_conns() {
	for _ in $(seq $((600 + $2 / 10))); do
		[ "$(ss -Htn state established "sport = :$1" | wc -l)" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "bench: fewer than $2 connections on :$1" >&2
	return 1
}

MEASURES="$OUT/measures.env"
: >"$MEASURES"
measure() { echo "$1=$2" >>"$MEASURES"; echo "   $1=$2" >&2; }

say "building"
gateway_bin "${BENCH_GATEWAY:-}"
go build -o "$WORK/fanout" ./bench/fanout
go build -o "$WORK/ceiling" ./bench/ceiling
go build -o "$WORK/table" ./bench/table
if [ -n "${BENCH_LOAD:-}" ]; then
	cp "$BENCH_LOAD" "$WORK/wsgateway-load"
else
	cp "$WORK/wsgateway" "$WORK/wsgateway-load"
fi
LOAD=("$WORK/wsgateway-load" load --secret "$SECRET" --quiet)

# ---- Redis and the gateway on it (start_redis, start_gateway: lib.sh)
start_redis

# start_bare INTERVAL [flags…]: the bare broadcast loop (or with --echo the
# bare echo) on a free port FP (pid FPID), once it listens.
start_bare() {
	FP=$(freeport)
	local interval=$1
	shift
	"$WORK/fanout" --addr "127.0.0.1:$FP" --interval "$interval" "$@" >/dev/null &
	FPID=$!
	PIDS+=("$FPID")
	for _ in $(seq 100); do
		ss -Htln "sport = :$FP" | grep -q . && return 0
		sleep 0.1
	done
	echo "bench: the bare loop does not listen on :$FP" >&2
	return 1
}

# lane_scrape: the gateway's Redis lane totals, "pipelines events busy_s"
# (zeros on the memory engine, which has no lane, and for the bare echo,
# which has no metrics: MP=none must not fail the run under pipefail).
lane_scrape() {
	{ curl -fsS "http://127.0.0.1:$MP/metrics" 2>/dev/null || true; } | awk '
		$1 == "wsgateway_redis_pipelines_total" {p = $2}
		$1 == "wsgateway_redis_pipeline_events_total" {e = $2}
		$1 == "wsgateway_redis_lane_busy_seconds_total" {b = $2}
		END {printf "%d %d %.6f\n", p, e, b}'
}

# ingest NAME [load flags…]: one load run, timing the gateway's CPU, with a
# CPU profile over its middle.
ingest() {
	local name=$1
	shift
	local before after rbefore secs lticks
	secs=$(($(echo "$DUR" | tr -dc 0-9) / 2))
	redis-cli -p "$RP" config resetstat >/dev/null
	local lane0
	lane0=$(lane_scrape)
	before=$(cpu_ticks "$GW_PID")
	rbefore=$(cpu_ticks "$RPID")
	(sleep 2 && curl -fsS -o "$OUT/$name.pprof" "http://127.0.0.1:$MP/debug/pprof/profile?seconds=$((secs > 0 ? secs : 1))" 2>/dev/null || true) &
	local prof=$!
	# The load generator runs in a subshell whose children's CPU ticks
	# (cutime + cstime) are then its own: what the generator took of the
	# two cores the gateway and Redis share with it.
	lticks=$( {
		"${LOAD[@]}" --url "$URL" --spectators 0 --watchers 0 --duration "$DUR" --json "$OUT/$name.json" --html "$OUT/$name.html" "$@" >"$OUT/$name.txt"
		awk '{print $16 + $17}' "/proc/$BASHPID/stat"
	})
	after=$(cpu_ticks "$GW_PID")
	wait "$prof" || true
	cat "$OUT/$name.txt" >&2
	measure "cpu_${name//-/_}_s" "$(cpu_seconds "$before" "$after")"
	measure "redis_cpu_${name//-/_}_s" "$(cpu_seconds "$rbefore" "$(cpu_ticks "$RPID")")"
	measure "load_cpu_${name//-/_}_s" "$(cpu_seconds 0 "$lticks")"
	# Redis commands per acked event on the Redis engine (the scripts' own
	# calls, EVALSHA itself not counted) and events per script call: what
	# one event costs Redis, counted rather than timed.
	redis-cli -p "$RP" info commandstats | tr -d '\r' >"$OUT/$name.commandstats.txt"
	local acked
	acked=$(awk '/^events/ {for (i = 1; i < NF; i++) if ($i == "acked") print $(i + 1)}' "$OUT/$name.txt")
	if [[ $name == ingest-redis* ]] && [ "${acked:-0}" -gt 0 ]; then
		measure "redis_calls_per_event_${name//-/_}" "$(awk -F'[:=,]' -v n="$acked" '/^cmdstat_/ && $1 !~ /info|config/ && $1 != "cmdstat_evalsha" {c += $3} END {printf "%.2f", c / n}' "$OUT/$name.commandstats.txt")"
		measure "events_per_script_${name//-/_}" "$(awk -F'[:=,]' -v n="$acked" '$1 == "cmdstat_evalsha" {printf "%.1f", n / $3}' "$OUT/$name.commandstats.txt")"
		# A lane's round trip per event it sent (the lanes' busy time,
		# wsgateway_redis_lane_busy_seconds_total, summed) against Redis's
		# time in the scripts per event: with one lane, the difference is
		# what Redis waits for the lane and the machine.
		measure "redis_script_us_per_event_${name//-/_}" "$(awk -F'[:=,]' -v n="$acked" '$1 == "cmdstat_evalsha" {printf "%.1f", $5 / n}' "$OUT/$name.commandstats.txt")"
		local p0 e0 b0 p1 e1 b1
		read -r p0 e0 b0 <<<"$lane0"
		read -r p1 e1 b1 <<<"$(lane_scrape)"
		if [ "$e1" -gt "$e0" ]; then # a gateway before the series has none
			measure "lane_us_per_event_${name//-/_}" "$(awk -v b="$b0" -v B="$b1" -v e="$e0" -v E="$e1" 'BEGIN {printf "%.1f", (B - b) / (E - e) * 1e6}')"
			measure "events_per_pipeline_${name//-/_}" "$(awk -v p="$p0" -v P="$p1" -v e="$e0" -v E="$e1" 'BEGIN {printf "%.1f", (E - e) / (P - p)}')"
		fi
	fi
	[ -s "$OUT/$name.pprof" ] && go tool pprof -top -nodecount=30 "$WORK/wsgateway" "$OUT/$name.pprof" >"$OUT/$name.profile.txt" 2>/dev/null || true
}

say "gateway, Redis engine"
start_gateway --redis-url "redis://127.0.0.1:$RP/0"

# ceiling_run LABEL MEMBERS EVENTS_PER_CALL ARGS…: one redis-benchmark run
# of CEIL_N events; records calls/s and events/s.
ceiling_run() {
	local label=$1 members=$2 per=$3
	shift 3
	local rbefore
	rbefore=$(cpu_ticks "$RPID")
	redis-benchmark -p "$RP" -n "$((CEIL_N / per))" -c 50 -P 16 -r "$members" -q "$@" 2>/dev/null | tr '\r' '\n' | tail -n 2 >"$OUT/ceiling-$label.txt"
	# Redis CPU per event: what the script costs the server, which a
	# loaded machine's requests per second hide.
	measure "ceiling_${label//-/_}_redis_us" "$(awk -v a="$rbefore" -v b="$(cpu_ticks "$RPID")" -v t="$TCK" -v n="$CEIL_N" 'BEGIN {printf "%.1f", (b - a) / t / n * 1e6}')"
	cat "$OUT/ceiling-$label.txt" >&2
	local rps
	rps=$(grep -o '[0-9.]* requests per second' "$OUT/ceiling-$label.txt" | tail -1 | cut -d' ' -f1)
	measure "ceiling_${label//-/_}_rps" "$rps"
	measure "ceiling_${label//-/_}_events" "$(awk -v r="$rps" -v n="$per" 'BEGIN {printf "%.0f", r * n}')"
}

# ref_run LABEL: the reference script's ceiling, its sorted set emptied
# first, so a run after the ingest starts where the first one did.
ref_run() {
	REF_SHA=$(redis-cli -p "$RP" script load "if redis.call('SET', KEYS[2], '1', 'NX', 'EX', 600) then redis.call('ZINCRBY', KEYS[1], ARGV[2], ARGV[1]) end return {redis.call('ZREVRANK', KEYS[1], ARGV[1]), redis.call('ZSCORE', KEYS[1], ARGV[1])}")
	redis-cli -p "$RP" del '{ref}:z' >/dev/null
	ceiling_run "$1" 100000 1 EVALSHA "$REF_SHA" 2 '{ref}:z' '{ref}:i:__rand_int____rand_int__' 'm__rand_int__' 1
}

measure redis_rt "${BENCH_REDIS_RT:-0}"
if part ref; then
	say "reference script ceiling (SET NX, ZINCRBY, ZREVRANK, ZSCORE)"
	ref_run ref-100k
fi

if part ceiling; then
	say "apply.lua ceiling: capture one real call"
	capture_call
	"$WORK/ceiling" <"$WORK/monitor.txt" >"$WORK/args.txt"
	"$WORK/ceiling" -events 16 <"$WORK/monitor.txt" >"$WORK/args16.txt"
	mapfile -t ARGS <"$WORK/args.txt"
	mapfile -t ARGS16 <"$WORK/args16.txt"
	ceiling_run 100k 100000 1 "${ARGS[@]}"
	ceiling_run x16-100k 100000 16 "${ARGS16[@]}"
	ceiling_run 1m 1000000 1 "${ARGS[@]}"
	measure "ceiling_members_after_1m_run" "$(redis-cli -p "$RP" eval "local n=0 for _,k in ipairs(redis.call('keys','*{ceil}:z:*')) do n=n+redis.call('zcard',k) end return n" 0)"
fi

if part ingest-redis; then
	say "ingest, Redis engine: max"
	ingest ingest-redis --board ingest --create --members 100000 --players "$PLAYERS" --inflight "$INFLIGHT"
	# The reference again right after, so the ratio is judged against both
	# ends of the ingest: a shared machine's speed moves from one minute
	# to the next, and a slow reference would flatter the ratio.
	if part ref; then
		say "reference script ceiling, right after the ingest"
		ref_run ref-after-100k
	fi
	HALF=$(( $("$WORK/table" -rate "$OUT/ingest-redis.json") / 2 ))
	say "ingest, Redis engine: half rate ($HALF/s)"
	ingest ingest-redis-half --board ingest --members 100000 --players "$PLAYERS" --inflight "$INFLIGHT" --rate "$HALF"
fi
stop_gateway

if part ingest-replicas; then
	# One replica of the run's Redis, so both runs pay for replication and
	# only the WAIT differs; alternated, so a shared machine's drift from
	# one minute to the next falls on both.
	say "a replica of the run's Redis"
	REPLICA_PORT=$(freeport)
	redis-server --port "$REPLICA_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" --daemonize no --protected-mode no \
		--replicaof 127.0.0.1 "$RP" >"$WORK/replica.log" 2>&1 &
	REPLICA_PID=$!
	PIDS+=("$REPLICA_PID")
	for _ in $(seq 100); do
		redis-cli -p "$REPLICA_PORT" info replication 2>/dev/null | grep -q '^master_link_status:up' && break
		sleep 0.1
	done
	redis-cli -p "$REPLICA_PORT" info replication | grep -q '^master_link_status:up' || { echo "bench: the replica did not sync" >&2; exit 1; }
	create=--create
	for round in $(seq "$REPLICA_ROUNDS"); do
		for n in 0 1; do
			say "ingest, Redis engine with a replica, --redis-replicas $n: max (round $round)"
			start_gateway --redis-url "redis://127.0.0.1:$RP/0" --redis-replicas "$n"
			ingest "ingest-replicas$n-$round" --board replicas $create --members 100000 --players "$PLAYERS" --inflight "$INFLIGHT"
			create=
			stop_gateway
		done
	done
	HALF=$(( $("$WORK/table" -rate "$OUT/ingest-replicas0-1.json") / 2 ))
	for n in 0 1; do
		say "ingest, Redis engine with a replica, --redis-replicas $n: half rate ($HALF/s)"
		start_gateway --redis-url "redis://127.0.0.1:$RP/0" --redis-replicas "$n"
		ingest "ingest-replicas$n-half" --board replicas --members 100000 --players "$PLAYERS" --inflight "$INFLIGHT" --rate "$HALF"
		stop_gateway
	done
	kill "$REPLICA_PID" # the later parts measure Redis without a replica
	say "durable acks (events/s; ack ms p50 p99), rounds alternated:"
	for f in "$OUT"/ingest-replicas*.txt; do
		[[ $(basename "$f") == *.*.txt ]] && continue # commandstats, profiles
		printf '%-28s %s\n' "$(basename "$f" .txt)" "$(awk '/^events/ {r = $(NF - 2)} /^ack \(ms\)/ {p50 = $4; p99 = $8} END {print r, p50, p99}' "$f")" >&2
	done
fi

if part ingest-memory; then
	say "gateway, memory engine"
	start_gateway --dev
	say "ingest, memory engine: max"
	ingest ingest-memory --board ingest --create --members 100000 --players "$PLAYERS" --inflight "$INFLIGHT"
	HALF=$(( $("$WORK/table" -rate "$OUT/ingest-memory.json") / 2 ))
	say "ingest, memory engine: half rate ($HALF/s)"
	ingest ingest-memory-half --board ingest --members 100000 --players "$PLAYERS" --inflight "$INFLIGHT" --rate "$HALF"
	stop_gateway

	say "ingest, bare coder/websocket echo (a fixed ack per score)"
	start_bare 1h --echo
	GW_PID=$FPID URL="ws://127.0.0.1:$FP/ws" MP=none ingest ingest-echo --board ingest --members 100000 --players "$PLAYERS" --inflight "$INFLIGHT"
	kill "$FPID"
fi

if part rest; then
	command -v wrk >/dev/null || { echo "bench: wrk not found (apt-get install -y wrk)" >&2; exit 1; }
	say "REST, memory engine: 64 keep-alive clients (wrk), one-event POST …/scores, then GET …/members/{m}?around=5"
	start_gateway
	ADMIN=$("$WORK/wsgateway" token --secret "$SECRET" --sub bench --role admin --ttl 1h)
	SERVER=$("$WORK/wsgateway" token --secret "$SECRET" --sub bench --role server --ttl 1h)
	curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $ADMIN" -d '{}' "http://127.0.0.1:$GP/api/v1/boards/rest"
	# Every request a fresh id (a repeat would be a duplicate), 1,000 members.
	cat >"$WORK/post.lua" <<'LUA'
local n, tid = 0, 0
local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
function init() tid = wrk.thread:get("tid") end
function request()
  n = n + 1
  local body = string.format('{"id":"t%d-%d","member":"m%d","delta":1}', tid, n, n % 1000)
  return wrk.format("POST", nil, nil, body)
end
LUA
	rest_run() { # rest_run NAME wrk-args…: gateway CPU per request over one wrk run, with a CPU profile over its middle
		local name=$1 before after reqs secs prof
		shift
		secs=$(($(echo "$DUR" | tr -dc 0-9) / 2))
		before=$(cpu_ticks "$GW_PID")
		(sleep 1 && curl -fsS -o "$OUT/$name.pprof" "http://127.0.0.1:$MP/debug/pprof/profile?seconds=$((secs > 0 ? secs : 1))" 2>/dev/null || true) &
		prof=$!
		wrk -t2 -c64 -d"$DUR" --latency -H "Authorization: Bearer $SERVER" -H "Content-Type: application/json" "$@" >"$OUT/$name.txt"
		after=$(cpu_ticks "$GW_PID")
		wait "$prof" || true
		[ -s "$OUT/$name.pprof" ] && go tool pprof -top -nodecount=40 "$WORK/wsgateway" "$OUT/$name.pprof" >"$OUT/$name.profile.txt" 2>/dev/null || true
		cat "$OUT/$name.txt" >&2
		reqs=$(awk '/requests in/ {print $1}' "$OUT/$name.txt")
		measure "${name//-/_}_rps" "$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$OUT/$name.txt")"
		measure "${name//-/_}_cpu_us" "$(awk -v a="$before" -v b="$after" -v t="$TCK" -v n="$reqs" 'BEGIN {printf "%.1f", (b - a) / t / n * 1e6}')"
	}
	rest_run rest-post -s "$WORK/post.lua" "http://127.0.0.1:$GP/api/v1/boards/rest/scores"
	rest_run rest-get "http://127.0.0.1:$GP/api/v1/boards/rest/members/m7?around=5"
	stop_gateway
fi

# Part idle: SPECTATORS idle spectators (each authenticated and subscribed
# to an empty board, so no frame flows), connected in two halves. Per
# connection: RSS over all of them (RSS with them − RSS before, / N) and
# between the halves (the slope, without what any process holds once);
# from the gateway's own /metrics, the live heap (at the last GC, read
# through the GC's goal), the goroutine stacks and the goroutines; the
# kernel's socket memory of the gateway's side (ss skmem: not in RSS). Then
# the gateway's CPU over IDLE_SECS with all of them held (its pings, the
# pongs, the timer wheel): µs of CPU per second per connection. The window
# opens once every connection had its first ping (jittered: some time in
# the first interval) and lasts one interval, so it holds one ping per
# connection, as every interval does from then on.
PING=${BENCH_PING_INTERVAL:-25s}
PING_SECS=${PING%s}
IDLE_SECS=${BENCH_IDLE_SECS:-$PING_SECS}
# metric NAME: a sample of the gateway's /metrics (its --metrics-addr).
metric() { curl -fsS "http://127.0.0.1:$MP/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
# skmem PORT: the kernel memory of the sockets on local port PORT (bytes).
skmem() {
	ss -Htnm state established "sport = :$1" | grep -o 'skmem:([^)]*)' |
		awk -F'[(),]' '{for (i = 2; i <= NF; i++) {k = $i; gsub(/[0-9]+/, "", k); v = $i; gsub(/[^0-9]/, "", v); if (k == "r" || k == "t" || k == "f" || k == "w" || k == "o") s += v}} END {print s + 0}'
}
if part idle; then
	say "memory per idle connection ($SPECTATORS), gateway"
	start_gateway --dev --ping-interval "$PING"
	put_board idle
	base=$(rss_kb "$GW_PID")
	stacks0=$(metric go_memstats_stack_inuse_bytes)
	curl -fsS "http://127.0.0.1:$MP/metrics" | grep '^go_memstats_' >"$OUT/idle-gateway-memstats-0.txt"
	g0=$(metric go_goroutines)
	half=$((SPECTATORS / 2))
	hold="$((PING_SECS + IDLE_SECS + 20))s"
	"${LOAD[@]}" --url "$URL" --board idle --players 0 --watchers 0 --spectators "$half" --duration "$hold" >"$OUT/idle-gateway.txt" &
	La=$!
	wait_conns "$GP" "$half"
	sleep 1
	rss_half=$(rss_kb "$GW_PID")
	"${LOAD[@]}" --url "$URL" --board idle --players 0 --watchers 0 --spectators "$((SPECTATORS - half))" --duration "$hold" >"$OUT/idle-gateway-2.txt" &
	Lb=$!
	wait_conns "$GP" "$SPECTATORS"
	sleep 1
	rss=$(rss_kb "$GW_PID")
	measure mem_gateway_kb_per_conn "$(awk -v a="$base" -v b="$rss" -v n="$SPECTATORS" 'BEGIN {printf "%.1f", (b - a) / n}')"
	measure mem_gateway_kb_per_conn_slope "$(awk -v a="$rss_half" -v b="$rss" -v n="$((SPECTATORS - half))" 'BEGIN {printf "%.1f", (b - a) / n}')"
	# The heap live at the last GC is what its goal was set from: goal =
	# live + GOGC% × (live + stacks + globals), GOGC 100.
	measure mem_gateway_heap_kb_per_conn "$(awk -v goal="$(metric go_memstats_next_gc_bytes)" -v st="$(metric go_memstats_stack_inuse_bytes)" -v n="$SPECTATORS" 'BEGIN {printf "%.1f", (goal - st) / 2 / n / 1024}')"
	measure mem_gateway_stack_kb_per_conn "$(awk -v a="$stacks0" -v b="$(metric go_memstats_stack_inuse_bytes)" -v n="$SPECTATORS" 'BEGIN {printf "%.2f", (b - a) / n / 1024}')"
	measure goroutines_per_conn "$(awk -v a="$g0" -v b="$(metric go_goroutines)" -v n="$SPECTATORS" 'BEGIN {printf "%.2f", (b - a) / n}')"
	measure kernel_kb_per_conn "$(awk -v b="$(skmem "$GP")" -v n="$SPECTATORS" 'BEGIN {printf "%.2f", b / n / 1024}')"
	# The runtime's whole account (heap in use and idle, released, stacks,
	# span and GC metadata) before and with the connections, for the
	# breakdown of what RSS holds.
	curl -fsS "http://127.0.0.1:$MP/metrics" | grep '^go_memstats_' >"$OUT/idle-gateway-memstats.txt"
	say "idle CPU: $SPECTATORS connections held for ${IDLE_SECS}s, after ${PING_SECS}s"
	sleep "$PING_SECS"
	t0=$(cpu_ticks "$GW_PID")
	sleep "$IDLE_SECS"
	t1=$(cpu_ticks "$GW_PID")
	measure idle_cpu_us_per_conn_s "$(awk -v a="$t0" -v b="$t1" -v t="$TCK" -v n="$SPECTATORS" -v s="$IDLE_SECS" 'BEGIN {printf "%.2f", (b - a) / t / s / n * 1e6}')"
	wait "$La" "$Lb"
	stop_gateway

	say "memory per idle connection ($SPECTATORS), bare coder/websocket"
	start_bare 1h
	base=$(rss_kb "$FPID")
	"${LOAD[@]}" --url "ws://127.0.0.1:$FP/ws" --players 0 --watchers 0 --spectators "$SPECTATORS" --duration 4s >"$OUT/idle-bare.txt" &
	L=$!
	wait_conns "$FP" "$SPECTATORS"
	sleep 1
	measure mem_bare_kb_per_conn "$(awk -v a="$base" -v b="$(rss_kb "$FPID")" -v n="$SPECTATORS" 'BEGIN {printf "%.1f", (b - a) / n}')"
	wait "$L"
	kill "$FPID"
fi

# fanout N: N spectators of one board at a 100ms interval, through the
# gateway (memory engine, one player at 100 events/s over 20 members so the
# top-10 changes every interval), then through the bare broadcast loop.
fanout() {
	local n=$1
	say "fan-out: $n spectators, gateway (memory engine, 100 events/s over 20 members)"
	start_gateway --dev
	put_board fan
	local before prof
	before=$(cpu_ticks "$GW_PID")
	# The profile starts once every spectator is connected (the dials of
	# 10,000 connections can take longer than the run on a busy box), so it
	# shows the fan-out rather than the handshakes.
	# The gateway's CPU ticks once every spectator is connected, for the CPU
	# per frame of the fan-out alone (the players start only then).
	(wait_conns "$GP" "$((n + 1))" >/dev/null 2>&1 && cpu_ticks "$GW_PID" >"$WORK/steady-$n" &&
		sleep 1 && curl -fsS -o "$OUT/fanout-gateway-$n.pprof" "http://127.0.0.1:$MP/debug/pprof/profile?seconds=4" 2>/dev/null || true) &
	prof=$!
	"${LOAD[@]}" --url "$URL" --board fan --members 20 --players 1 --inflight 8 --rate 100 --watchers 0 --spectators "$n" \
		--duration "$DUR" --json "$OUT/fanout-gateway-$n.json" --html "$OUT/fanout-gateway-$n.html" >"$OUT/fanout-gateway-$n.txt"
	local end
	end=$(cpu_ticks "$GW_PID")
	measure "cpu_fanout_${n}_s" "$(cpu_seconds "$before" "$end")"
	wait "$prof" || true
	[ -s "$WORK/steady-$n" ] && measure "cpu_fanout_${n}_steady_s" "$(cpu_seconds "$(cat "$WORK/steady-$n")" "$end")"
	[ -s "$OUT/fanout-gateway-$n.pprof" ] && go tool pprof -top -nodecount=30 "$WORK/wsgateway" "$OUT/fanout-gateway-$n.pprof" >"$OUT/fanout-gateway-$n.profile.txt" 2>/dev/null || true
	cat "$OUT/fanout-gateway-$n.txt" >&2
	stop_gateway

	say "fan-out: $n spectators, bare coder/websocket broadcast loop"
	start_bare 100ms
	before=$(cpu_ticks "$FPID")
	# Its CPU once every spectator is connected too, for a ratio of the
	# fan-out alone.
	(wait_conns "$FP" "$n" >/dev/null 2>&1 && cpu_ticks "$FPID" >"$WORK/bare-steady-$n" || true) &
	local steady=$!
	"${LOAD[@]}" --url "ws://127.0.0.1:$FP/ws" --players 0 --watchers 0 --spectators "$n" --duration "$DUR" \
		--json "$OUT/fanout-bare-$n.json" >"$OUT/fanout-bare-$n.txt"
	end=$(cpu_ticks "$FPID")
	measure "cpu_fanout_bare_${n}_s" "$(cpu_seconds "$before" "$end")"
	wait "$steady" || true
	[ -s "$WORK/bare-steady-$n" ] && measure "cpu_fanout_bare_${n}_steady_s" "$(cpu_seconds "$(cat "$WORK/bare-steady-$n")" "$end")"
	cat "$OUT/fanout-bare-$n.txt" >&2
	kill "$FPID"
}
if part fanout; then
	for n in $FANOUT_SIZES; do
		fanout "$n"
	done
fi

# Part fanout-plain: the gateway against the plain way to broadcast with
# coder/websocket (bench/fanout: a reader and a writer goroutine per
# connection, a one-slot latest-wins hand-off), PLAIN_N spectators, 10
# frames/s of about 1.4 KB, one run each. Per process: resident memory per
# subscribed spectator (RSS once all are subscribed and before any frame,
# minus RSS before the first dial, / N), CPU per frame delivered (process
# CPU from the first frame to 300ms after the last, / frames the spectators
# counted), bytes written per frame (/proc/PID/io, so the two frame sizes
# can be checked equal) and the spectators' frame lag p99 (receive − ts).
# Frames flow only once the memory is read: on the gateway the one player
# starts then (100 events/s over PLAIN_MEMBERS members, so the top changes
# every interval), the plain server waits for SIGUSR1 (--hold). The two
# top-N differ because the entries do (member names, score widths): the
# run's bytes per frame show whether the frames still match.
PLAIN_N=${BENCH_PLAIN_SPECTATORS:-4000}
PLAIN_TOP=${BENCH_PLAIN_TOP:-36}
PLAIN_BARE_TOP=${BENCH_PLAIN_BARE_TOP:-32}
PLAIN_MEMBERS=40
wchar() { awk '$1 == "wchar:" {print $2}' "/proc/$1/io"; }
# plain_spectators PORT NAME: PLAIN_N spectators of board "plain" in the
# background (pid SPID), counting frames for DUR + 6s once all are
# connected; returns once all are, and the process's RSS has settled.
plain_spectators() {
	local port=$1 name=$2 secs
	secs=$(($(echo "$DUR" | tr -dc 0-9) + 6))
	"${LOAD[@]}" --url "ws://127.0.0.1:$port/ws" --board plain --top "$PLAIN_TOP" --players 0 --watchers 0 \
		--spectators "$PLAIN_N" --duration "${secs}s" --json "$OUT/$name.json" >"$OUT/$name.txt" &
	SPID=$!
	wait_conns "$port" "$PLAIN_N"
	sleep 1
}
# plain_measure PID NAME RSS0 FRAMES: the memory, then the frames until the
# command FRAMES returns; CPU ticks and bytes written over that window.
plain_measure() {
	local pid=$1 name=$2 rss0=$3 frames=$4 t0 w0 t1 w1 key=${2//-/_}
	measure "mem_${key}_kb_per_sub" "$(awk -v a="$rss0" -v b="$(rss_kb "$pid")" -v n="$PLAIN_N" 'BEGIN {printf "%.1f", (b - a) / n}')"
	t0=$(cpu_ticks "$pid")
	w0=$(wchar "$pid")
	"$frames"
	sleep 0.3
	t1=$(cpu_ticks "$pid")
	w1=$(wchar "$pid")
	wait "$SPID"
	measure "cpu_${key}_s" "$(cpu_seconds "$t0" "$t1")"
	measure "wchar_${key}" "$((w1 - w0))"
	cat "$OUT/$name.txt" >&2
}
# gateway_frames: the one player whose events change the top every interval.
gateway_frames() {
	"${LOAD[@]}" --url "$URL" --board plain --members "$PLAIN_MEMBERS" --players 1 --inflight 8 --rate 100 \
		--spectators 0 --watchers 0 --duration "$DUR" >"$OUT/fanout-plain-players.txt"
}
# bare_frames: the plain server's broadcast, DUR long.
bare_frames() {
	kill -USR1 "$FPID"
	sleep "$DUR"
	kill -USR1 "$FPID"
}
if part fanout-plain; then
	say "fan-out against the plain broadcast server: $PLAIN_N spectators, 10 frames/s, gateway (memory engine, top $PLAIN_TOP)"
	start_gateway --dev
	put_board plain
	rss0=$(rss_kb "$GW_PID")
	plain_spectators "$GP" fanout-plain-gateway
	plain_measure "$GW_PID" fanout-plain-gateway "$rss0" gateway_frames
	stop_gateway

	say "fan-out against the plain broadcast server: $PLAIN_N spectators, 10 frames/s, bench/fanout (top $PLAIN_BARE_TOP)"
	start_bare 100ms --hold --top "$PLAIN_BARE_TOP"
	rss0=$(rss_kb "$FPID")
	plain_spectators "$FP" fanout-plain-bare
	plain_measure "$FPID" fanout-plain-bare "$rss0" bare_frames
	kill "$FPID"
fi

# gobench: the live frame path's Go benchmarks, so a change that makes a
# frame dearer shows here even when the box is too noisy for the runs above:
# read + offer + take per frame, store reads per second of a busy board, a
# frame's socket write, one frame through the hub to 200 spectators.
if part gobench; then
	say "Go benchmarks of the live frame path"
	go test -run '^$' -bench 'FrameFanout|TopFanout|BusyBoardReads' -benchmem -benchtime 2s ./hub/live/ | tee "$OUT/gobench-live.txt" >&2
	go test -run '^$' -bench 'FrameWrite|HubFanout' -benchmem -benchtime 2s ./hub/ | tee "$OUT/gobench-hub.txt" >&2
fi

say "results ($(nproc) cores, $(uname -sr), $(go env GOVERSION))"
"$WORK/table" -dir "$OUT" -fanout "$FANOUT_SIZES"
