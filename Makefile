# poolflow — the two commands a newcomer needs: `make run` and `make test`.
GO ?= go
export CGO_ENABLED := 1

.PHONY: run test lint bench bench-large build fuzz ui-shots chaos

# The daemon with the example DAGs of dags/ (YAML and one Go DAG) on an embedded SQLite store
# under ./state; the API and UI listen on http://127.0.0.1:8080.
run:
	$(GO) run ./dags --config poolflow.yaml --dags dags serve

build:
	$(GO) build -o bin/poolflow ./cmd/poolflow

# gofmt check, go vet, then every test with the race detector.
test: lint
	$(GO) test -race -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Full-page screenshots of every UI page, taken by the browser tests (chromedp driving chromium),
# into ui-shots/.
ui-shots:
	rm -rf ui-shots
	POOLFLOW_UI_SHOTS=$(CURDIR)/ui-shots $(GO) test -count=1 -run 'TestBrowser' ./ui/
	@ls ui-shots

# One table: fan-out 1k/10k and chain 1k/10k (synchronous full and normal) run by
# `poolflow dags test` against xargs -P 8 / a bash loop, the machine's fsync and fork floor,
# peak RSS, then the admission-pass benchmarks; the rules benchmark first.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./rules/ ./ui/
	$(GO) run ./cmd/poolflow-bench

# bench with the 100,000-task fan-out too.
bench-large:
	$(GO) run ./cmd/poolflow-bench -large

# Short fuzzing of every fuzz target, then the admission properties (the full walk's model and
# the incremental queue against it) at 20,000 runs of 100 steps each instead of 2,000 of 30.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./dag/
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 30s ./config/
	$(GO) test -run '^$$' -fuzz FuzzRule -fuzztime 30s ./rules/
	$(GO) test -count=1 -run 'Model|QueueMatches' ./pools/ -rapid.checks=20000 -rapid.steps=100

# The chaos harness (issue 9; not part of `make test`, TestChaosShort in e2e/ is its short form):
# daemons and dags test processes killed and restarted at random on one store while DAGs with
# overlapping pool requirements run, then checks from the intervals the tasks really ran.
# CHAOS_TIME=60s (default 5m), CHAOS_SEED=N replays the random choices, CHAOS_DAEMONS=N.
chaos: build
	$(GO) run ./cmd/poolflow-chaos --binary bin/poolflow
