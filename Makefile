# poolflow — the two commands a newcomer needs: `make run` and `make test`.
GO ?= go
export CGO_ENABLED := 1

.PHONY: run test lint bench build fuzz chaos

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

# Go benchmarks (admission passes, rules, the SQLite-backed admission path), then the
# end-to-end benchmark against `seq 1000 | xargs -P 8 -I{} true`.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pools/ ./rules/ ./executor/
	$(GO) run ./cmd/poolflow-bench

# Short fuzzing of every fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./dag/
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 30s ./config/
	$(GO) test -run '^$$' -fuzz FuzzRule -fuzztime 30s ./rules/

# The chaos harness (issue 9; not part of `make test`, TestChaosShort in e2e/ is its short form):
# daemons and dags test processes killed and restarted at random on one store while DAGs with
# overlapping pool requirements run, then checks from the intervals the tasks really ran.
# CHAOS_TIME=60s (default 5m), CHAOS_SEED=N replays the random choices, CHAOS_DAEMONS=N.
chaos: build
	$(GO) run ./cmd/poolflow-chaos --binary bin/poolflow
