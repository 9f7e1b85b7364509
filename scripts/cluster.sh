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
#   CLUSTER_REDIS  single (default): one redis-server; sentinel: the redis-sentinel profile,
#                  a master, two replicas and three Sentinels (deploy/redis/sentinel.conf),
#                  the gateways on redis-sentinel:// with LB_REDIS_REPLICAS=1
#                  (deploy/sentinel.env); `up` only, later commands read ports.env
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
CLUSTER_REDIS="${CLUSTER_REDIS:-single}"
# Every process up may start, in the order down stops them: gateways first
# (they drain), then the proxy, then what they use.
NAMES="gateway1 gateway2 gateway3 haproxy prometheus nats1 nats2 nats3 sentinel1 sentinel2 sentinel3 redis-r1 redis-r2 redis"

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
		LB_ADDR="127.0.0.1:$port" LB_NODE_ID="gateway$i" LB_REDIS_URL="$REDIS_URL" LB_REDIS_REPLICAS="$REDIS_REPLICAS" \
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

# start_sentinel_redis: the redis-sentinel profile of docker-compose.yml on
# loopback: replicas of the master on $REDIS, then Sentinels running on
# copies of deploy/redis/sentinel.conf with loopback addresses for its
# service names; waits until the replicas are in sync and every Sentinel
# knows them and the other Sentinels.
start_sentinel_redis() {
	local i p s
	for i in 1 2; do
		p="REDIS_R$i"
		mkdir -p "$DIR/redis-r$i"
		cp "$DEPLOY/redis/redis.conf" "$DIR/redis-r$i/redis.conf"
		start "redis-r$i" redis-server "$DIR/redis-r$i/redis.conf" --port "${!p}" --bind 127.0.0.1 --protected-mode yes \
			--dir "$DIR/redis-r$i" --replicaof 127.0.0.1 "$REDIS"
	done
	for i in 1 2 3; do
		p="SENTINEL$i"
		mkdir -p "$DIR/sentinel$i"
		sed -e "s/^port .*/port ${!p}/" -e "s/^sentinel monitor lbmaster redis-m 6379 /sentinel monitor lbmaster 127.0.0.1 $REDIS /" \
			"$DEPLOY/redis/sentinel.conf" >"$DIR/sentinel$i/sentinel.conf"
		printf 'bind 127.0.0.1\ndir %s\n' "$DIR/sentinel$i" >>"$DIR/sentinel$i/sentinel.conf"
		start "sentinel$i" redis-server "$DIR/sentinel$i/sentinel.conf" --sentinel
	done
	wait_for "the replicas' sync" 60 replicas_online 2
	for i in 1 2 3; do
		s="SENTINEL$i"
		wait_for "sentinel$i" 60 sentinel_knows "${!s}"
	done
}

# replicas_online N: the master on $REDIS has N replicas in sync.
replicas_online() { [ "$(redis-cli -p "$REDIS" info replication | grep -c 'state=online')" -ge "$1" ]; }

# sentinel_knows PORT: that Sentinel knows both replicas and two other Sentinels.
sentinel_knows() {
	local m
	m=$(redis-cli -p "$1" sentinel master lbmaster | tr -d '\r' | paste - - | awk '$1 == "num-slaves" || $1 == "num-other-sentinels" {print $1 "=" $2}' | tr '\n' ' ')
	[[ $m == *"num-slaves=2"* && $m == *"num-other-sentinels=2"* ]]
}

up() {
	need
	case "$CLUSTER_REDIS" in
	single | sentinel) ;;
	*) die "CLUSTER_REDIS=$CLUSTER_REDIS: want single or sentinel" ;;
	esac
	[ "$CLUSTER_REDIS" = single ] || command -v redis-cli >/dev/null || die "missing redis-cli (apt-get install redis-tools)"
	[ -f "$DIR/ports.env" ] && running haproxy && die "already up ($DIR); run down first"
	mkdir -p "$DIR/pids" "$DIR/logs" "$DIR/redis" "$DIR/prometheus/targets" "$DIR/prometheus/data"
	gateway_bin
	gateway_env
	{
		pick_port; echo "REDIS=$PORT"
		local master=$PORT
		if [ "$CLUSTER_REDIS" = sentinel ]; then
			for i in 1 2; do pick_port; echo "REDIS_R$i=$PORT"; done
			s=()
			for i in 1 2 3; do pick_port; echo "SENTINEL$i=$PORT"; s+=("127.0.0.1:$PORT"); done
			echo "REDIS_URL=redis-sentinel://$(IFS=,; echo "${s[*]}")/lbmaster"
			echo "REDIS_REPLICAS=1"
		else
			echo "REDIS_URL=redis://127.0.0.1:$master/0"
			echo "REDIS_REPLICAS=0"
		fi
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

	# Under Sentinel every node runs on its own copy of redis.conf: Sentinel
	# reconfigures nodes with CONFIG REWRITE, which writes to that file.
	local conf="$DEPLOY/redis/redis.conf"
	if [ "$CLUSTER_REDIS" = sentinel ]; then
		conf="$DIR/redis/redis.conf"
		cp "$DEPLOY/redis/redis.conf" "$conf"
	fi
	start redis redis-server "$conf" --port "$REDIS" --bind 127.0.0.1 --protected-mode yes --dir "$DIR/redis"
	for i in 1 2 3; do
		start "nats$i" env $(nats_env "$i") "$NATS_SERVER" -c "$DEPLOY/nats/nats.conf"
	done
	wait_for redis 15 tcp_open "$REDIS"
	[ "$CLUSTER_REDIS" = single ] || start_sentinel_redis
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
	for name in $NAMES; do
		f="$DIR/pids/$name.pid"
		[ -f "$f" ] || continue
		pid="$(cat "$f")"
		kill -TERM "$pid" 2>/dev/null || true
	done
	for name in $NAMES; do
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
	if [ -n "${SENTINEL1:-}" ]; then
		for i in 1 2; do v="REDIS_R$i"; row "redis-r$i" "127.0.0.1:${!v}" ""; done
		for i in 1 2 3; do v="SENTINEL$i"; row "sentinel$i" "127.0.0.1:${!v}" ""; done
		echo "  redis url   $REDIS_URL (LB_REDIS_REPLICAS=$REDIS_REPLICAS)"
	fi
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
