#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time each (FUZZTIME,
# default 10s). The seed corpora under testdata/ run in every `go test` anyway;
# this explores beyond them.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-10s}
# `go test -list` prints the targets, then "ok <pkg>": pair each target with its package.
go test -list '^Fuzz' ./... 2>/dev/null | awk '
	/^Fuzz/ {targets[n++]=$1; next}
	/^ok/ {for (i=0;i<n;i++) print $2, targets[i]; n=0}
' | while read -r pkg target; do
	echo "fuzz $pkg $target for $t"
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg" | tail -1
done
