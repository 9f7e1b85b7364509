# Shell helpers the bench scripts share (sourced).

# freeport prints a loopback port nobody listens on (never 6379 or 4222),
# below Linux's ephemeral range (32768-60999): a port up there can be taken
# by an outgoing connection (the load generator's, Redis clients') between
# this check and the listen, which failed a gateway's --metrics-addr.
freeport() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# wait_http URL: until it answers 200 (15s).
wait_http() {
	for _ in $(seq 150); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "bench: $1 did not answer" >&2
	return 1
}

# workdir makes WORK, a scratch directory, and PIDS, the processes to stop:
# on exit each of PIDS is killed and WORK removed.
workdir() {
	WORK=$(mktemp -d)
	PIDS=()
	trap bench_cleanup EXIT
}
bench_cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}

# gateway_bin [BINARY]: $WORK/wsgateway, a copy of BINARY (e.g. an older
# commit's build, for a before/after), else built from this tree.
gateway_bin() {
	if [ -n "${1:-}" ]; then
		cp "$1" "$WORK/wsgateway"
	else
		go build -o "$WORK/wsgateway" ./cmd/wsgateway
	fi
}

# start_redis: a redis-server of the run's own, without persistence, on a
# free port RP (pid RPID), once it answers. Needs WORK and PIDS (workdir).
start_redis() {
	RP=$(freeport)
	redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" --daemonize no --protected-mode no >"$WORK/redis.log" 2>&1 &
	RPID=$!
	PIDS+=("$RPID")
	for _ in $(seq 100); do redis-cli -p "$RP" ping >/dev/null 2>&1 && break; sleep 0.1; done
	redis_rt
}

# redis_rt: with BENCH_REDIS_RT=1, redis-server (RPID) runs under
# SCHED_FIFO, so it runs whenever it has work. On a machine where the
# gateway and the load generator share Redis's cores, they otherwise
# preempt it and Redis waits in the run queue (docs/performance.md, "Who
# waits for whom"). Ceilings and
# ingest run on that one Redis alike. Needs root or CAP_SYS_NICE.
redis_rt() {
	[ "${BENCH_REDIS_RT:-0}" = 1 ] || return 0
	chrt -f -p 1 "$RPID" || { echo "bench: BENCH_REDIS_RT=1 needs chrt with root or CAP_SYS_NICE" >&2; return 1; }
}

# start_gateway [flags…]: $WORK/wsgateway on free ports GP (metrics MP),
# pid GW_PID, URL its WebSocket, once it is ready. Needs SECRET.
start_gateway() {
	GP=$(freeport)
	MP=$(freeport)
	"$WORK/wsgateway" --addr "127.0.0.1:$GP" --metrics-addr "127.0.0.1:$MP" --jwt-secret "$SECRET" --log-level error "$@" >>"$WORK/gateway.log" 2>&1 &
	GW_PID=$!
	PIDS+=("$GW_PID")
	wait_http "http://127.0.0.1:$GP/readyz" || { tail -n 20 "$WORK/gateway.log" >&2; return 1; }
	URL="ws://127.0.0.1:$GP/ws"
}
stop_gateway() { kill "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; }
# put_board NAME [CONFIG]: creates board NAME with CONFIG (JSON, default
# {}: the default config) on the gateway started last (`wsgateway load`
# refuses a board that does not exist).
put_board() {
	local admin
	admin=$("$WORK/wsgateway" token --secret "$SECRET" --sub bench --role admin --ttl 1h)
	curl -fsS -o /dev/null -X PUT -H "Authorization: Bearer $admin" -d "${2:-{\}}" "http://127.0.0.1:$GP/api/v1/boards/$1"
}

# capture_call [existing]: one real apply.lua call of board "ceil" (created
# here, unless existing: put_board made it), as the gateway at URL sends it
# to the redis-server on RP, captured with MONITOR into $WORK/monitor.txt;
# bench/ceiling turns it into redis-benchmark arguments. LOAD is the load
# generator's command.
capture_call() {
	local create=--create
	[ "${1:-}" = existing ] && create=--create=false
	redis-cli -p "$RP" monitor >"$WORK/monitor.txt" &
	local mon=$!
	PIDS+=("$mon")
	sleep 0.3
	"${LOAD[@]}" --url "$URL" --board ceil "$create" --players 1 --inflight 1 --spectators 0 --watchers 0 --rate 20 --duration 500ms --members 10 >/dev/null
	sleep 0.3
	kill "$mon"
}
