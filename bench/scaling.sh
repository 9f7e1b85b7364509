#!/usr/bin/env bash
# The capacity model's measurements (docs/scaling.md), on this machine,
# loopback only: one hot board written through G gateways into a Redis
# Cluster of M masters, with a NATS server between the gateways.
#
#   SCALE_SHARDS=1 bash bench/scaling.sh     # one board, one slot: one master does all the work
#   SCALE_SHARDS=3 bash bench/scaling.sh     # the same board with "shards": 3 (sharded boards)
#
# It prints, and writes to $SCALE_OUT/scaling-shards<S>.env:
#   - acked events/s (sum over the load generators, one per gateway), and
#     the ack latency's p50 and p99 (the larger of the generators');
#   - per master: EVALSHA calls, redis-server CPU seconds, its share of
#     the masters' CPU, and µs of Redis CPU per acked event (the master's
#     events/s ceiling is 1e6 / that, on one core), and µs spent in
#     scripts per acked event (INFO commandstats usec of EVALSHA and EVAL);
#     and the kernel's share of the masters' CPU (redis_sys_share);
#   - Redis memory the run's events left, bytes per acked event, summed and
#     on the master that grew most (the idempotency records, a sharded
#     board's seq map);
#   - gateway CPU µs per acked event;
#   - NATS messages in and out, and bytes in, per acked event (nats-server
#     /varz; out counts one delivery per subscribed gateway).
#
# Knobs (env): SCALE_SHARDS (1; > 1 needs sharded boards, contract §9
# `shards`), SCALE_TIEBREAK (the board's tiebreak; unset: the default,
# first), SCALE_ACK_RANK (a sharded board's ack_rank, none or global;
# unset: the default, none), SCALE_MASTERS (3), SCALE_GATEWAYS (2), SCALE_DURATION (10s),
# SCALE_PLAYERS (16 per gateway), SCALE_INFLIGHT (16), SCALE_MEMBERS
# (100000), SCALE_RATE (0 = as fast as acks come back; else events/s per
# gateway), SCALE_OUT (bench/out), SCALE_GATEWAY (a wsgateway binary to
# measure instead of this tree's). Needs go, redis-server, redis-cli,
# nats-server (or Go to build it), curl, ss.
set -euo pipefail
cd "$(dirname "$0")/.."

SHARDS=${SCALE_SHARDS:-1}
TIEBREAK=${SCALE_TIEBREAK:-}
ACK_RANK=${SCALE_ACK_RANK:-}
MASTERS=${SCALE_MASTERS:-3}
GATEWAYS=${SCALE_GATEWAYS:-2}
DUR=${SCALE_DURATION:-10s}
PLAYERS=${SCALE_PLAYERS:-16}
INFLIGHT=${SCALE_INFLIGHT:-16}
MEMBERS=${SCALE_MEMBERS:-100000}
RATE=${SCALE_RATE:-0}
OUT=${SCALE_OUT:-bench/out}
SECRET=bench-secret-0123456789abcdef0123456789
BOARD=hot
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=bench/lib.sh
source bench/lib.sh
workdir

for bin in redis-server redis-cli curl ss; do
	command -v "$bin" >/dev/null || { echo "scaling: $bin not found (apt-get install -y redis-server redis-tools curl iproute2)" >&2; exit 1; }
done

say() { printf '\n== %s\n' "$*" >&2; }

# freeport (lib.sh's, redefined) prints a loopback port no socket uses, whose +10000 (the Redis
# Cluster bus port) is unused too; both below the ephemeral range (32768),
# so no outgoing connection takes them meanwhile; never 6379 or 4222.
freeport() {
	local p
	while :; do
		p=$((12000 + RANDOM % 10000))
		ss -Htan "sport = :$p" | grep -q . && continue
		ss -Htan "sport = :$((p + 10000))" | grep -q . && continue
		echo "$p"
		return
	done
}

TCK=$(getconf CLK_TCK)
cpu_seconds() { awk -v a="$1" -v b="$2" -v t="$TCK" 'BEGIN {printf "%.3f", (b - a) / t}'; }

MEASURES="$OUT/scaling-shards$SHARDS.env"
: >"$MEASURES"
measure() { echo "$1=$2" >>"$MEASURES"; echo "   $1=$2" >&2; }

say "building"
gateway_bin "${SCALE_GATEWAY:-}"
NATS_BIN=$(command -v nats-server || true)
if [ -z "$NATS_BIN" ]; then
	go build -o "$WORK/nats-server" github.com/nats-io/nats-server/v2
	NATS_BIN=$WORK/nats-server
fi

say "Redis Cluster: $MASTERS masters"
RPORTS=()
RPIDS=()
for i in $(seq "$MASTERS"); do
	p=$(freeport)
	mkdir -p "$WORK/redis$i"
	redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK/redis$i" \
		--daemonize no --protected-mode no --cluster-enabled yes --cluster-config-file nodes.conf \
		--cluster-node-timeout 5000 >"$WORK/redis$i.log" 2>&1 &
	RPIDS+=($!)
	PIDS+=($!)
	RPORTS+=("$p")
	up=0
	for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && { up=1; break; }; sleep 0.1; done
	[ "$up" = 1 ] || { echo "scaling: redis-server on :$p did not start:" >&2; cat "$WORK/redis$i.log" >&2; exit 1; }
done
for i in $(seq 0 $((MASTERS - 1))); do
	redis-cli -p "${RPORTS[$i]}" cluster addslotsrange $((i * 16384 / MASTERS)) $(((i + 1) * 16384 / MASTERS - 1)) >/dev/null
	[ "$i" -gt 0 ] && redis-cli -p "${RPORTS[0]}" cluster meet 127.0.0.1 "${RPORTS[$i]}" >/dev/null
done
for _ in $(seq 300); do
	ok=0
	for p in "${RPORTS[@]}"; do
		redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' && ok=$((ok + 1))
	done
	[ "$ok" -eq "$MASTERS" ] && break
	sleep 0.1
done
[ "$ok" -eq "$MASTERS" ] || { echo "scaling: the cluster did not reach cluster_state:ok" >&2; exit 1; }
SEEDS=$(printf '127.0.0.1:%s,' "${RPORTS[@]}")
REDIS_URL="redis-cluster://${SEEDS%,}"

say "NATS"
NP=$(freeport)
NMP=$(freeport)
"$NATS_BIN" -a 127.0.0.1 -p "$NP" -m "$NMP" >"$WORK/nats.log" 2>&1 &
NPID=$!
PIDS+=("$NPID")
wait_http "http://127.0.0.1:$NMP/varz"

say "$GATEWAYS gateways on $REDIS_URL"
GPORTS=()
GPIDS=()
for i in $(seq "$GATEWAYS"); do
	p=$(freeport)
	"$WORK/wsgateway" --addr "127.0.0.1:$p" --node-id "g$i" --jwt-secret "$SECRET" --log-level error \
		--redis-url "$REDIS_URL" --nats-url "nats://127.0.0.1:$NP" >>"$WORK/gateway$i.log" 2>&1 &
	GPIDS+=($!)
	PIDS+=($!)
	GPORTS+=("$p")
	wait_http "http://127.0.0.1:$p/readyz"
done

ADMIN=$("$WORK/wsgateway" token --secret "$SECRET" --sub admin --role admin)
BODY="{\"id\":\"$BOARD\""
[ "$SHARDS" -gt 1 ] && BODY="$BODY,\"shards\":$SHARDS"
[ -n "$TIEBREAK" ] && BODY="$BODY,\"tiebreak\":\"$TIEBREAK\""
[ -n "$ACK_RANK" ] && BODY="$BODY,\"ack_rank\":\"$ACK_RANK\""
BODY="$BODY}"
code=$(curl -sS -o "$WORK/put.txt" -w '%{http_code}' -X PUT -H "Authorization: Bearer $ADMIN" \
	-H 'Content-Type: application/json' -d "$BODY" "http://127.0.0.1:${GPORTS[0]}/api/v1/boards/$BOARD")
if [ "${code:0:1}" != 2 ]; then
	echo "scaling: PUT board $BODY answered $code: $(cat "$WORK/put.txt")" >&2
	[ "$SHARDS" -gt 1 ] && echo "scaling: shards > 1 needs sharded boards (contract §9 shards) in this build" >&2
	exit 1
fi
curl -fsS -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:${GPORTS[0]}/api/v1/boards/$BOARD" >"$WORK/board.json"
if [ "$SHARDS" -gt 1 ] && ! grep -q "\"shards\": *$SHARDS" "$WORK/board.json"; then
	echo "scaling: the board was created without shards ($(cat "$WORK/board.json")); this build has no sharded boards" >&2
	exit 1
fi

say "load: $GATEWAYS × $PLAYERS players × $INFLIGHT in flight, $MEMBERS members, $DUR, shards $SHARDS"
declare -A RB RK
sys_ticks() { awk '{print $15}' "/proc/$1/stat"; }
declare -A UM
used_memory() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}'; }
for i in "${!RPIDS[@]}"; do RB[$i]=$(cpu_ticks "${RPIDS[$i]}"); RK[$i]=$(sys_ticks "${RPIDS[$i]}"); UM[$i]=$(used_memory "${RPORTS[$i]}"); redis-cli -p "${RPORTS[$i]}" config resetstat >/dev/null; done
declare -A GB
for i in "${!GPIDS[@]}"; do GB[$i]=$(cpu_ticks "${GPIDS[$i]}"); done
varz() { curl -fsS "http://127.0.0.1:$NMP/varz" | grep -o "\"$1\": *[0-9]*" | grep -o '[0-9]*$'; }
NIN=$(varz in_msgs)
NOUT=$(varz out_msgs)
NINB=$(varz in_bytes)
LOADS=()
for i in "${!GPORTS[@]}"; do
	"$WORK/wsgateway" load --secret "$SECRET" --quiet --url "ws://127.0.0.1:${GPORTS[$i]}/ws" --board "$BOARD" \
		--players "$PLAYERS" --inflight "$INFLIGHT" --members "$MEMBERS" --rate "$RATE" \
		--spectators 0 --watchers 0 --duration "$DUR" --json "$WORK/load$i.json" >"$WORK/load$i.txt" &
	LOADS+=($!)
done
for p in "${LOADS[@]}"; do wait "$p"; done
ACKED=0
SECS=0
P50=0
P99=0
for i in "${!GPORTS[@]}"; do
	cat "$WORK/load$i.txt" >&2
	a=$(grep -o '"acked": *[0-9]*' "$WORK/load$i.json" | head -1 | grep -o '[0-9]*$')
	s=$(grep -o '"send_seconds": *[0-9.]*' "$WORK/load$i.json" | head -1 | grep -o '[0-9.]*$')
	ACKED=$((ACKED + a))
	SECS=$(awk -v a="$SECS" -v b="$s" 'BEGIN {print (b > a) ? b : a}')
	p=$(grep -m1 '^ack (ms)' "$WORK/load$i.txt" | grep -o 'p50 [0-9.]*' | grep -o '[0-9.]*$')
	P50=$(awk -v a="$P50" -v b="${p:-0}" 'BEGIN {print (b > a) ? b : a}')
	p=$(grep -m1 '^ack (ms)' "$WORK/load$i.txt" | grep -o 'p99 [0-9.]*' | grep -o '[0-9.]*$')
	P99=$(awk -v a="$P99" -v b="${p:-0}" 'BEGIN {print (b > a) ? b : a}')
done
measure shards "$SHARDS"
measure tiebreak "${TIEBREAK:-first}"
measure ack_rank "${ACK_RANK:-default}"
measure masters "$MASTERS"
measure gateways "$GATEWAYS"
measure acked "$ACKED"
measure acked_per_second "$(awk -v a="$ACKED" -v s="$SECS" 'BEGIN {printf "%.0f", a / s}')"
measure ack_p50_ms "$P50"
measure ack_p99_ms "$P99"
TOTAL=0
UTOTAL=0
KTOTAL=0
declare -A RS RU
for i in "${!RPIDS[@]}"; do
	RS[$i]=$(cpu_seconds "${RB[$i]}" "$(cpu_ticks "${RPIDS[$i]}")")
	TOTAL=$(awk -v a="$TOTAL" -v b="${RS[$i]}" 'BEGIN {print a + b}')
	KTOTAL=$(awk -v a="$KTOTAL" -v b="$(cpu_seconds "${RK[$i]}" "$(sys_ticks "${RPIDS[$i]}")")" 'BEGIN {print a + b}')
done
# The kernel's part of the masters' CPU (system time: the sockets' reads
# and writes), which a count of Redis's own instructions leaves out.
measure redis_sys_share "$(awk -v k="$KTOTAL" -v t="$TOTAL" 'BEGIN {printf "%.2f", (t > 0) ? k / t : 0}')"
for i in "${!RPIDS[@]}"; do
	stats=$(redis-cli -p "${RPORTS[$i]}" info commandstats | tr -d '\r')
	calls=$(awk -F'[=,:]' '/^cmdstat_evalsha:/ {print $3}' <<<"$stats")
	# The µs Redis spent running scripts, which the box's other load moves
	# less than the process's CPU time. Every write is a script; a script's
	# own redis.call commands are counted again under their names, so only
	# the scripts are summed (top-level commands, such as a read's or the
	# global follow-up's INCRBY, count in the CPU time only).
	RU[$i]=$(awk -F'[=,:]' '/^cmdstat_(evalsha|eval):/ {u += $5} END {print u + 0}' <<<"$stats")
	UTOTAL=$((UTOTAL + RU[$i]))
	measure "master${i}_evalsha_calls" "${calls:-0}"
	measure "master${i}_script_us_per_event" "$(awk -v a="${RU[$i]}" -v n="$ACKED" 'BEGIN {printf "%.1f", (n > 0) ? a / n : 0}')"
	measure "master${i}_cpu_s" "${RS[$i]}"
	measure "master${i}_cpu_share" "$(awk -v a="${RS[$i]}" -v t="$TOTAL" 'BEGIN {printf "%.2f", (t > 0) ? a / t : 0}')"
	measure "master${i}_cpu_us_per_event" "$(awk -v a="${RS[$i]}" -v n="$ACKED" 'BEGIN {printf "%.1f", (n > 0) ? a * 1e6 / n : 0}')"
done
# What the run's events left in Redis memory (the idempotency records for
# their window, a sharded board's seq map, new members), per acked event:
# all masters, and the master that grew most.
MTOTAL=0
MMAX=0
for i in "${!RPIDS[@]}"; do
	d=$(($(used_memory "${RPORTS[$i]}") - UM[$i]))
	MTOTAL=$((MTOTAL + d))
	[ "$d" -gt "$MMAX" ] && MMAX=$d
done
measure redis_bytes_per_event "$(awk -v a="$MTOTAL" -v n="$ACKED" 'BEGIN {printf "%.0f", (n > 0) ? a / n : 0}')"
measure busiest_master_bytes_per_event "$(awk -v a="$MMAX" -v n="$ACKED" 'BEGIN {printf "%.0f", (n > 0) ? a / n : 0}')"
BUSIEST=0
for i in "${!RPIDS[@]}"; do BUSIEST=$(awk -v a="$BUSIEST" -v b="${RS[$i]}" 'BEGIN {print (b > a) ? b : a}'); done
measure busiest_master_share "$(awk -v a="$BUSIEST" -v t="$TOTAL" 'BEGIN {printf "%.2f", (t > 0) ? a / t : 0}')"
UBUSIEST=0
for i in "${!RPIDS[@]}"; do [ "${RU[$i]}" -gt "$UBUSIEST" ] && UBUSIEST=${RU[$i]}; done
measure busiest_master_script_share "$(awk -v a="$UBUSIEST" -v t="$UTOTAL" 'BEGIN {printf "%.2f", (t > 0) ? a / t : 0}')"
measure redis_script_us_per_event "$(awk -v a="$UTOTAL" -v n="$ACKED" 'BEGIN {printf "%.1f", (n > 0) ? a / n : 0}')"
measure redis_cpu_us_per_event "$(awk -v a="$TOTAL" -v n="$ACKED" 'BEGIN {printf "%.1f", (n > 0) ? a * 1e6 / n : 0}')"
GT=0
for i in "${!GPIDS[@]}"; do
	GT=$(awk -v a="$GT" -v b="$(cpu_seconds "${GB[$i]}" "$(cpu_ticks "${GPIDS[$i]}")")" 'BEGIN {print a + b}')
done
measure gateway_cpu_us_per_event "$(awk -v a="$GT" -v n="$ACKED" 'BEGIN {printf "%.1f", (n > 0) ? a * 1e6 / n : 0}')"
measure nats_in_msgs_per_event "$(awk -v a="$(varz in_msgs)" -v b="$NIN" -v n="$ACKED" 'BEGIN {printf "%.4f", (n > 0) ? (a - b) / n : 0}')"
measure nats_out_msgs_per_event "$(awk -v a="$(varz out_msgs)" -v b="$NOUT" -v n="$ACKED" 'BEGIN {printf "%.4f", (n > 0) ? (a - b) / n : 0}')"
measure nats_in_bytes_per_event "$(awk -v a="$(varz in_bytes)" -v b="$NINB" -v n="$ACKED" 'BEGIN {printf "%.1f", (n > 0) ? (a - b) / n : 0}')"
say "written to $MEASURES"
