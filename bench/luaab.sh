#!/usr/bin/env bash
# bench/luaab.sh REV_A REV_B [EVENTS] [ROUNDS]: apply.lua of two commits on
# one redis-server, against the same board, runs alternated (A B A B …), so
# what the box does meanwhile touches both alike: a few percent show, where
# two separate bench/run.sh runs differ by ±15% on a shared machine.
#
# This tree's gateway creates the board and sends one real call, captured
# with MONITOR and turned into redis-benchmark arguments by bench/ceiling
# (EVENTS events per call, default 16; random members of 100k, random ids).
# Both scripts are loaded with SCRIPT LOAD, the board is filled with 100k
# members by B, then each round runs A's and B's EVALSHA, 200k events each
# (redis-benchmark -P 16 -c 50), and prints Redis's own time in the script
# per event (INFO commandstats) and redis-server's CPU per event. The two
# scripts must use the same keys and arguments (the script header's
# layout), as consecutive commits usually do.
#
#   bash bench/luaab.sh HEAD~1 HEAD 1 4
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
A=${1:?REV_A}
B=${2:?REV_B}
EV=${3:-16}
ROUNDS=${4:-3}
for bin in redis-server redis-benchmark redis-cli curl; do
	command -v "$bin" >/dev/null || { echo "luaab: $bin not found (apt-get install -y redis-server redis-tools curl)" >&2; exit 1; }
done
workdir
SECRET=bench-secret-0123456789abcdef0123456789

# script REV FILE: REV's apply.lua as the store sends it (bench/luasrc,
# copied into the archived tree, so REV need not have it).
script() {
	local dir
	dir=$(mktemp -d -p "$WORK")
	git archive "$1" | tar -x -C "$dir"
	mkdir -p "$dir/bench/luasrc"
	cp bench/luasrc/main.go "$dir/bench/luasrc/"
	(cd "$dir" && go run ./bench/luasrc apply.lua) >"$2"
}
script "$A" "$WORK/a.lua"
script "$B" "$WORK/b.lua"
go build -o "$WORK/wsgateway" ./cmd/wsgateway
go build -o "$WORK/ceiling" ./bench/ceiling

start_redis
start_gateway --redis-url "redis://127.0.0.1:$RP/0"
LOAD=("$WORK/wsgateway" load --secret "$SECRET" --quiet)
capture_call
stop_gateway
"$WORK/ceiling" -events "$EV" <"$WORK/monitor.txt" >"$WORK/args.txt"
mapfile -t ARGS <"$WORK/args.txt"
SHA_A=$(redis-cli -p "$RP" -x script load <"$WORK/a.lua")
SHA_B=$(redis-cli -p "$RP" -x script load <"$WORK/b.lua")
N=$((200000 / EV)) # calls per run

bench() { # bench SHA
	local args=("${ARGS[@]}")
	args[1]=$1
	redis-benchmark -p "$RP" -n "$N" -c 50 -P 16 -r 100000 -q "${args[@]}" >/dev/null 2>&1
}
bench "$SHA_B" # 100k members before anything is measured
echo "apply.lua, $EV events per call: Redis µs per event, in the script (INFO commandstats) / redis-server CPU"
for r in $(seq "$ROUNDS"); do
	line="round $r:"
	for s in A B; do
		sha=$SHA_A
		[ "$s" = B ] && sha=$SHA_B
		redis-cli -p "$RP" config resetstat >/dev/null
		t0=$(cpu_ticks "$RPID")
		bench "$sha"
		t1=$(cpu_ticks "$RPID")
		stat=$(redis-cli -p "$RP" info commandstats | tr -d '\r' | grep '^cmdstat_evalsha:')
		us=$(echo "$stat" | grep -o 'usec=[0-9]*' | cut -d= -f2)
		failed=$(echo "$stat" | grep -o 'failed_calls=[0-9]*' | cut -d= -f2)
		line+=$(awk -v s="$s" -v u="$us" -v a="$t0" -v b="$t1" -v n="$((N * EV))" -v t="$(getconf CLK_TCK)" \
			'BEGIN {printf "  %s %.2f / %.2f", s, u / n, (b - a) / t / n * 1e6}')
		[ "${failed:-0}" = 0 ] || line+=" ($failed calls failed)"
	done
	echo "$line"
done
