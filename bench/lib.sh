# Shell helpers the bench scripts share (sourced).

# freeport prints a loopback port nobody listens on (never 6379 or 4222).
freeport() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
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
