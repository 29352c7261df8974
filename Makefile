# poolflow — the two commands a newcomer needs: `make run` and `make test`.
GO ?= go
export CGO_ENABLED := 1

.PHONY: run run-cluster test test-pg lint bench bench-large build fuzz ui-shots chaos chaos-pg

# The daemon with the example DAGs of dags/ (YAML and one Go DAG) on an embedded SQLite store
# under ./state; the API and UI listen on http://127.0.0.1:8080.
run:
	$(GO) run ./dags --config poolflow.yaml --dags dags serve

# Several hosts at work on one machine: a throw-away PostgreSQL and three daemons (d1–d3, UIs on
# http://127.0.0.1:8081–8083) over the example DAGs with poolflow-cluster.yaml; Ctrl-C stops all.
run-cluster:
	scripts/run-cluster

build:
	$(GO) build -o bin/poolflow ./cmd/poolflow

# gofmt check, go vet, then every test with the race detector (vocab's TestNoRawStateLiterals among
# them: no state spelled as a string literal outside package vocab). The PostgreSQL half (the store
# conformance suite on PostgreSQL, the daemon on PostgreSQL end to end) runs when
# POOLFLOW_TEST_POSTGRES names a server (`make test-pg` starts a throw-away one); in CI it is
# required.
test: lint
	@if [ -z "$$POOLFLOW_TEST_POSTGRES" ]; then \
		if [ "$$CI" = "true" ]; then echo "POOLFLOW_TEST_POSTGRES is not set: CI runs the PostgreSQL tests (.ci/run starts a server)"; exit 1; fi; \
		echo "***********************************************************************************"; \
		echo "*** POOLFLOW_TEST_POSTGRES is not set: SKIPPING the PostgreSQL half of the tests  ***"; \
		echo "*** (make test-pg starts a throw-away PostgreSQL server and runs everything)      ***"; \
		echo "***********************************************************************************"; \
	else echo "PostgreSQL tests on $$(echo $$POOLFLOW_TEST_POSTGRES | sed -E 's#//([^:@/]*):[^@]*@#//\1@#')"; fi
	$(GO) test -race -count=1 -timeout 20m ./...

# make test with a throw-away PostgreSQL server (scripts/pg-test-server), stopped at the end.
test-pg:
	@dir=$$(mktemp -d /tmp/poolflow-pg.XXXXXX); \
	dsn=$$(scripts/pg-test-server start $$dir) || exit 1; \
	trap 'scripts/pg-test-server stop '$$dir EXIT; \
	POOLFLOW_TEST_POSTGRES=$$dsn $(MAKE) test

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
	POOLFLOW_UI_BENCH=1 $(GO) test -count=1 -timeout 30m -run '^TestUIBench$$' -v ./ui/ | grep -v -e '^=== ' -e '^--- ' -e '^PASS' -e '^ok '
	$(GO) run ./cmd/poolflow-bench

# bench with the 100,000-task fan-out too.
bench-large:
	$(GO) run ./cmd/poolflow-bench -large

# Short fuzzing of every fuzz target, then the admission properties (the full walk's model and
# the incremental queue against it) at 20,000 runs of 100 steps each instead of 2,000 of 30.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./dag/
	$(GO) test -run '^$$' -fuzz FuzzPieces -fuzztime 30s ./dag/
	$(GO) test -run '^$$' -fuzz FuzzTemplate -fuzztime 30s ./dag/
	$(GO) test -run '^$$' -fuzz FuzzYAMLFile -fuzztime 30s ./internal/yamlfile/
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 30s ./config/
	$(GO) test -run '^$$' -fuzz FuzzRule -fuzztime 30s ./rules/
	$(GO) test -count=1 -run 'Model|QueueMatches' ./pools/ -rapid.checks=20000 -rapid.steps=100

# The chaos harness (issue 9; not part of `make test`, TestChaosShort in e2e/ is its short form):
# daemons and dags test processes killed and restarted at random on one store while DAGs with
# overlapping pool requirements run, then checks from the intervals the tasks really ran.
# CHAOS_TIME=60s (default 5m), CHAOS_SEED=N replays the random choices, CHAOS_DAEMONS=N.
chaos: build
	$(GO) run ./cmd/poolflow-chaos --binary bin/poolflow

# make chaos on PostgreSQL: a throw-away server (scripts/pg-test-server, stopped at the end) and
# the daemons on it (CHAOS_DAEMONS, default 3), each with a state folder of its own.
chaos-pg: build
	@dir=$$(mktemp -d /tmp/poolflow-chaos-pg.XXXXXX); \
	dsn=$$(scripts/pg-test-server start $$dir) || exit 1; \
	trap 'scripts/pg-test-server stop '$$dir EXIT; \
	$(GO) run ./cmd/poolflow-chaos --binary bin/poolflow -store "$$dsn"
