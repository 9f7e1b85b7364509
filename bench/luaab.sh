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
# layout) and read the data the other writes (one data set serves both),
# as consecutive commits usually do.
#
#   bash bench/luaab.sh HEAD~1 HEAD 1 4
#
# Time on this shared machine moves ±15% from one run to the next, more
# than most script changes. LUAAB_IR=1 counts instead: the filled data set
# is saved, and each round starts one redis-server per script from it under
# valgrind's callgrind (instrumentation on for the measured 20k events
# only) and prints the instructions Redis ran per event. The count repeats
# within about 0.5%, though now and then a round reads up to 10% higher:
# compare two or more; it does not see cache misses, so it ranks changes to
# the script's own work, not to memory layout. Needs valgrind
# (apt-get install -y valgrind). LUAAB_KEEP=DIR keeps each run's
# callgrind.out there, for callgrind_annotate. LUAAB_SHARDS=K makes the
# board sharded (K shards, ack_rank none): the call is one shard's, whose
# apply config adds "shard norank".
#
#   LUAAB_IR=1 bash bench/luaab.sh HEAD~1 HEAD 64 2
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
A=${1:?REV_A}
B=${2:?REV_B}
EV=${3:-16}
ROUNDS=${4:-3}
IR=${LUAAB_IR:-}
tools=(redis-server redis-benchmark redis-cli curl)
[ -n "$IR" ] && tools+=(valgrind callgrind_control)
for bin in "${tools[@]}"; do
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
if [ -n "${LUAAB_SHARDS:-}" ]; then
	put_board ceil "{\"shards\":$LUAAB_SHARDS}"
	capture_call existing
else
	capture_call
fi
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

# ir SHA SCRIPT NAME: instructions per event of SCRIPT's EVALSHA on a copy
# of the filled data set, in a redis-server under callgrind.
ir() {
	local port dir pid n=$((20000 / EV)) tot
	port=$(freeport)
	dir=$(mktemp -d -p "$WORK")
	cp "$WORK/filled.rdb" "$dir/dump.rdb"
	valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/callgrind.out" \
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
		--daemonize no --protected-mode no >"$dir/redis.log" 2>&1 &
	pid=$!
	for _ in $(seq 600); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.2; done
	redis-cli -p "$port" -x script load <"$2" >/dev/null
	local args=("${ARGS[@]}")
	args[1]=$1
	callgrind_control -i on "$pid" >/dev/null 2>&1
	redis-benchmark -p "$port" -n "$n" -c 50 -P 16 -r 100000 -q "${args[@]}" >/dev/null 2>&1
	callgrind_control -i off "$pid" >/dev/null 2>&1
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait "$pid" 2>/dev/null || true
	tot=$(awk '/^totals:/ {print $2}' "$dir/callgrind.out")
	[ -n "${LUAAB_KEEP:-}" ] && cp "$dir/callgrind.out" "$LUAAB_KEEP/callgrind.out.$3.$r"
	awk -v t="$tot" -v n="$((n * EV))" 'BEGIN {printf "%.0f", t / n}'
	rm -rf "$dir"
}
if [ -n "$IR" ]; then
	redis-cli -p "$RP" save >/dev/null
	cp "$WORK/dump.rdb" "$WORK/filled.rdb"
	echo "apply.lua, $EV events per call: redis-server instructions per event (callgrind, 20k events)"
	for r in $(seq "$ROUNDS"); do
		echo "round $r:  A $(ir "$SHA_A" "$WORK/a.lua" A)  B $(ir "$SHA_B" "$WORK/b.lua" B)"
	done
	exit 0
fi
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
