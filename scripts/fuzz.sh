#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time each (FUZZTIME,
# default 10s). The seed corpora under testdata/ run in every `go test` anyway;
# this explores beyond them.
#
# A target fails the run when it finds an input (the fuzzer writes it under
# testdata/fuzz/<target>/ and the whole output is printed here). Go 1.26's
# fuzz coordinator can also fail a clean run with a bare "context deadline
# exceeded" at the -fuzztime boundary when a worker is starved of CPU
# (go.dev/issue/75804, fixed in Go 1.27): that case, and only that one, is
# run once more before it counts.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-10s}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() { # pkg target
	go test -run '^$' -fuzz "^$2\$" -fuzztime "$t" "$1" >"$out" 2>&1
}

# `go test -list` prints the targets, then "ok <pkg>": pair each target with its package.
go test -list '^Fuzz' ./... 2>/dev/null | awk '
	/^Fuzz/ {targets[n++]=$1; next}
	/^ok/ {for (i=0;i<n;i++) print $2, targets[i]; n=0}
' | while read -r pkg target; do
	echo "fuzz $pkg $target for $t"
	if run "$pkg" "$target"; then
		tail -1 "$out"
		continue
	fi
	if ! grep -q 'Failing input written' "$out" && grep -q '^    context deadline exceeded$' "$out"; then
		echo "  $target: bare 'context deadline exceeded' (go.dev/issue/75804), no input found; running it again"
		if run "$pkg" "$target"; then
			tail -1 "$out"
			continue
		fi
	fi
	grep -v '^fuzz: elapsed' "$out"
	exit 1
done
