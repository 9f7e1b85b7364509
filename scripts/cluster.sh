#!/usr/bin/env bash
# The reference deployment of docker-compose.yml as local processes, from the
# same config files (deploy/), for machines and CI without a Docker engine:
# Redis, a 3-node NATS cluster, 3 gateways, HAProxy and Prometheus, on free
# loopback ports chosen at start.
#
#   scripts/cluster.sh up          start everything, wait until ready, print the addresses
#   scripts/cluster.sh status      what runs, where, and whether it answers
#   scripts/cluster.sh gateway N   (re)start gateway N (1..3) after a kill or a drain
#   scripts/cluster.sh down        stop everything this script started
#
# Environment:
#   CLUSTER_DIR    state: ports.env, pids/, logs/, data (default: .cluster in the repository)
#   WSGATEWAY_BIN  a built gateway (default: go build ./cmd/wsgateway into CLUSTER_DIR)
#   GATEWAY_ENV    the gateways' shared environment (default: deploy/gateway.env if
#                  present, else deploy/gateway.env.example with a random key made
#                  for this run; either way copied to CLUSTER_DIR/gateway.env,
#                  where `wsgateway token --secret` can read the key)
#   NATS_SERVER    nats-server binary (default: from PATH)
#
# Packages: redis-server nats-server haproxy prometheus (scripts/deps.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEPLOY="$ROOT/deploy"
DIR="${CLUSTER_DIR:-$ROOT/.cluster}"
GATEWAY_ENV="${GATEWAY_ENV:-}"
NATS_SERVER="${NATS_SERVER:-nats-server}"

die() { echo "cluster: $*" >&2; exit 1; }

need() {
	local missing=()
	for b in redis-server "$NATS_SERVER" haproxy prometheus; do
		command -v "$b" >/dev/null || missing+=("$b")
	done
	[ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: run scripts/deps.sh (apt-get install redis-server nats-server haproxy prometheus)"
}

# port_free: nothing accepts on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_port sets PORT to a free loopback port not picked before by this run
# (a variable, not output: a $(…) subshell could not remember the picks).
PICKED=" "
pick_port() {
	local p
	for _ in $(seq 1 200); do
		p=$((20000 + RANDOM % 12000)) # below Linux's ephemeral range (32768-60999), where outgoing connections and tests' kernel-picked ports live
		if [[ "$PICKED" != *" $p "* ]] && port_free "$p"; then
			PICKED+="$p "
			PORT=$p
			return
		fi
	done
	die "no free port found"
}

# start NAME CMD...: runs CMD in the background, its output appended to
# logs/NAME.log, its pid in pids/NAME.pid.
start() {
	local name="$1"
	shift
	"$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/pids/$name.pid"
}

running() { [ -f "$DIR/pids/$1.pid" ] && kill -0 "$(cat "$DIR/pids/$1.pid")" 2>/dev/null; }

# wait_for WHAT SECONDS CMD...: polls CMD every 0.1s.
wait_for() {
	local what="$1" secs="$2"
	shift 2
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || die "$what not ready after ${secs}s (logs in $DIR/logs)"
		sleep 0.1
	done
}

http_ok() { "$BIN" healthcheck --addr "$1" --path "$2" --timeout 2s >/dev/null 2>&1; }
tcp_open() { ! port_free "$1"; }

gateway_bin() {
	BIN="${WSGATEWAY_BIN:-}"
	if [ -z "$BIN" ]; then
		BIN="$DIR/wsgateway"
		[ -x "$BIN" ] || (cd "$ROOT" && go build -o "$BIN" ./cmd/wsgateway)
	fi
}

nats_env() { # nats_env I: the variables deploy/nats/nats.conf reads, for node I
	local i="$1" c m r
	c="NATS${i}_CLIENT"; m="NATS${i}_MONITOR"; r="NATS${i}_ROUTE"
	echo NATS_NAME="nats$i" NATS_HOST=127.0.0.1 NATS_CLIENT_PORT="${!c}" NATS_MONITOR_PORT="${!m}" NATS_CLUSTER_PORT="${!r}" \
		NATS_ROUTE_1="nats-route://127.0.0.1:$NATS1_ROUTE" NATS_ROUTE_2="nats-route://127.0.0.1:$NATS2_ROUTE" NATS_ROUTE_3="nats-route://127.0.0.1:$NATS3_ROUTE"
}

start_gateway() {
	local i="$1" port var nats
	var="GW${i}"; port="${!var}"
	running "gateway$i" && die "gateway$i already runs (pid $(cat "$DIR/pids/gateway$i.pid"))"
	# Each gateway lists its own NATS node first, as in docker-compose.yml.
	case "$i" in
	1) nats="nats://127.0.0.1:$NATS1_CLIENT,nats://127.0.0.1:$NATS2_CLIENT,nats://127.0.0.1:$NATS3_CLIENT" ;;
	2) nats="nats://127.0.0.1:$NATS2_CLIENT,nats://127.0.0.1:$NATS3_CLIENT,nats://127.0.0.1:$NATS1_CLIENT" ;;
	*) nats="nats://127.0.0.1:$NATS3_CLIENT,nats://127.0.0.1:$NATS1_CLIENT,nats://127.0.0.1:$NATS2_CLIENT" ;;
	esac
	# The shared env file first, then what compose sets per service (and the
	# proxy's loopback address instead of its compose network address).
	start "gateway$i" env $(grep -E '^[A-Z_]+=' "$DIR/gateway.env" | tr '\n' ' ') \
		LB_ADDR="127.0.0.1:$port" LB_NODE_ID="gateway$i" LB_REDIS_URL="redis://127.0.0.1:$REDIS/0" \
		LB_NATS_URL="$nats" LB_TRUSTED_PROXIES=127.0.0.1/32 "$BIN"
	# A gateway that refuses its configuration exits at once: say why now
	# rather than after the whole wait.
	local deadline=$((SECONDS + 30))
	until http_ok "127.0.0.1:$port" /readyz; do
		running "gateway$i" || die "gateway$i exited at start: $(tail -n 1 "$DIR/logs/gateway$i.log")"
		[ $SECONDS -lt $deadline ] || die "gateway$i not ready after 30s (logs in $DIR/logs)"
		sleep 0.1
	done
}

# gateway_env writes the gateways' environment to $DIR/gateway.env: the
# operator's file, or the example with a random key for this run only (the
# example's own key is public, and the gateway refuses it).
gateway_env() {
	local src="$GATEWAY_ENV"
	[ -n "$src" ] || [ ! -f "$DEPLOY/gateway.env" ] || src="$DEPLOY/gateway.env"
	(
		umask 077
		if [ -n "$src" ]; then
			cp "$src" "$DIR/gateway.env"
		else
			sed "s|^LB_JWT_SECRET=.*|LB_JWT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')|" \
				"$DEPLOY/gateway.env.example" >"$DIR/gateway.env"
			echo "cluster: no deploy/gateway.env; this run's gateways use a random key (in $DIR/gateway.env)" >&2
		fi
	)
}

up() {
	need
	[ -f "$DIR/ports.env" ] && running haproxy && die "already up ($DIR); run down first"
	mkdir -p "$DIR/pids" "$DIR/logs" "$DIR/redis" "$DIR/prometheus/targets" "$DIR/prometheus/data"
	gateway_bin
	gateway_env
	{
		pick_port; echo "REDIS=$PORT"
		for i in 1 2 3; do
			pick_port; echo "NATS${i}_CLIENT=$PORT"
			pick_port; echo "NATS${i}_MONITOR=$PORT"
			pick_port; echo "NATS${i}_ROUTE=$PORT"
			pick_port; echo "GW${i}=$PORT"
		done
		pick_port; echo "LB=$PORT"
		pick_port; echo "LB_STATS=$PORT"
		pick_port; echo "PROMETHEUS=$PORT"
		echo "BIN=$BIN"
	} >"$DIR/ports.env"
	# shellcheck disable=SC1091
	. "$DIR/ports.env"

	start redis redis-server "$DEPLOY/redis/redis.conf" --port "$REDIS" --bind 127.0.0.1 --protected-mode yes --dir "$DIR/redis"
	for i in 1 2 3; do
		start "nats$i" env $(nats_env "$i") "$NATS_SERVER" -c "$DEPLOY/nats/nats.conf"
	done
	wait_for redis 15 tcp_open "$REDIS"
	for i in 1 2 3; do
		m="NATS${i}_MONITOR"
		# Generous: on a loaded 2-core CI box a start can take seconds.
		running "nats$i" || die "nats$i exited at start (logs in $DIR/logs)"
		wait_for "nats$i" 45 http_ok "127.0.0.1:${!m}" /healthz
	done
	for i in 1 2 3; do start_gateway "$i"; done

	start haproxy env LB_BIND="127.0.0.1:$LB" LB_STATS_BIND="127.0.0.1:$LB_STATS" \
		GW1_ADDR="127.0.0.1:$GW1" GW2_ADDR="127.0.0.1:$GW2" GW3_ADDR="127.0.0.1:$GW3" \
		haproxy -db -f "$DEPLOY/haproxy/haproxy.cfg"
	wait_for haproxy 15 http_ok "127.0.0.1:$LB" /readyz

	# The same prometheus.yml and rules (symlinked); only the targets are
	# this run's loopback ports.
	ln -sfn "$DEPLOY/prometheus/prometheus.yml" "$DIR/prometheus/prometheus.yml"
	ln -sfn "$DEPLOY/prometheus/rules" "$DIR/prometheus/rules"
	{
		echo "["
		for i in 1 2 3; do
			v="GW$i"
			sep=","; [ "$i" = 3 ] && sep=""
			echo "  {\"targets\": [\"127.0.0.1:${!v}\"], \"labels\": {\"node\": \"gateway$i\"}}$sep"
		done
		echo "]"
	} >"$DIR/prometheus/targets/gateways.json"
	echo "[{\"targets\": [\"127.0.0.1:$LB_STATS\"], \"labels\": {\"node\": \"haproxy\"}}]" >"$DIR/prometheus/targets/haproxy.json"
	start prometheus prometheus --config.file="$DIR/prometheus/prometheus.yml" \
		--storage.tsdb.path="$DIR/prometheus/data" --web.listen-address="127.0.0.1:$PROMETHEUS"
	wait_for prometheus 30 http_ok "127.0.0.1:$PROMETHEUS" /-/ready
	status
}

down() {
	[ -d "$DIR/pids" ] || return 0
	local f pid
	# Gateways first (they drain), then the proxy, then what they use.
	for name in gateway1 gateway2 gateway3 haproxy prometheus nats1 nats2 nats3 redis; do
		f="$DIR/pids/$name.pid"
		[ -f "$f" ] || continue
		pid="$(cat "$f")"
		kill -TERM "$pid" 2>/dev/null || true
	done
	for name in gateway1 gateway2 gateway3 haproxy prometheus nats1 nats2 nats3 redis; do
		f="$DIR/pids/$name.pid"
		[ -f "$f" ] || continue
		pid="$(cat "$f")"
		for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		rm -f "$f"
	done
}

status() {
	[ -f "$DIR/ports.env" ] || die "not up ($DIR/ports.env missing)"
	# shellcheck disable=SC1091
	. "$DIR/ports.env"
	[ -n "${BIN:-}" ] || gateway_bin
	row() { # row NAME ADDR PATH
		local state="down"
		if running "$1"; then
			state="running"
			if [ -n "$3" ] && http_ok "$2" "$3"; then state="ready"; fi
		fi
		printf "  %-11s %-22s %s\n" "$1" "$2" "$state"
	}
	echo "cluster in $DIR"
	row redis "127.0.0.1:$REDIS" ""
	for i in 1 2 3; do m="NATS${i}_MONITOR"; c="NATS${i}_CLIENT"; row "nats$i" "127.0.0.1:${!c}" ""; done
	for i in 1 2 3; do v="GW$i"; row "gateway$i" "127.0.0.1:${!v}" /readyz; done
	row haproxy "127.0.0.1:$LB" /healthz
	row prometheus "127.0.0.1:$PROMETHEUS" /-/ready
	echo "  front door  http://127.0.0.1:$LB/  ws://127.0.0.1:$LB/ws"
	echo "  haproxy     http://127.0.0.1:$LB_STATS/"
	echo "  prometheus  http://127.0.0.1:$PROMETHEUS/alerts"
	echo "  key         LB_JWT_SECRET in $DIR/gateway.env"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
gateway)
	[[ "${2:-}" =~ ^[123]$ ]] || die "usage: $0 gateway 1|2|3"
	# shellcheck disable=SC1091
	. "$DIR/ports.env"
	start_gateway "$2"
	;;
*) die "usage: $0 up|down|status|gateway N" ;;
esac
