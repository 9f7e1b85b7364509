# The one test command (README): installs what the suite needs when missing,
# then runs the whole suite with the race detector. scripts/testprogress
# prints go test's line per package as it ends, every 30 s the packages
# still running, failed tests' output, and the run's duration (kept in
# testout/ and quoted at the start of the next run).
GO ?= go
GOTEST = $(GO) run ./scripts/testprogress -go=$(GO)

.PHONY: test test-short lint bench bench-fanout bench-engines deps run fuzz screenshots

test: deps
	@$(GOTEST) -last=testout/make-test.last -- -race -count=1 -timeout=25m ./...

# test-short is the edit-test loop: -short skips the end-to-end, browser,
# cluster, fault and multi-node tests (each calls testenv.Long). CI runs
# `make test`, which never passes -short.
test-short:
	@$(GOTEST) -last=testout/make-test-short.last -- -short ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

deps:
	@bash scripts/deps.sh

# bench: every part of bench/run.sh (BENCH_PARTS picks some, e.g.
# BENCH_PARTS=fanout-plain make bench); docs/performance.md explains each number.
bench:
	@bash bench/run.sh

# bench-fanout: the gateway against the plain broadcast server (4,000
# spectators, 10 frames/s of 1.4 KB) and idle connection memory, the three
# ratios gateway/plain printed last (docs/performance.md, "Fan-out against the plain server").
bench-fanout:
	@BENCH_PARTS="idle fanout-plain" bash bench/run.sh

# bench-engines: apply and rank of both engines (and the memory engine's page) at 10k and 1M members
# (docs/performance.md, "Engines"). The Redis benchmarks start their own
# redis-server on a free port.
bench-engines:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 -timeout 30m ./rank/memstore/ ./rank/redisstore/

run:
	$(GO) run ./cmd/wsgateway --dev

# fuzz runs every fuzz target briefly (FUZZTIME each, default 10s).
fuzz: deps
	@bash scripts/fuzz.sh

# screenshots regenerates docs/img/ from the Chromium page tests (the real
# gateway, and the scripted lb.v1 server for the v1.1 lifecycle features).
SHOTS = overlay-1-live overlay-2-final spectator-lifecycle-1-live spectator-3-follow player-1-overtaken game
screenshots: deps
	rm -rf testout/shots
	LB_TESTOUT=$(CURDIR)/testout/shots $(GO) test -count=1 -run 'TestBrowser|TestPages' ./web/
	mkdir -p docs/img
	for f in $(SHOTS); do cp testout/shots/web/$$f.png docs/img/$$f.png; done
