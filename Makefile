# tenure — see README.md. `make run` starts a dev agent; `make test` is what CI runs.
GO          ?= go
PKGS        := ./...

.PHONY: test lint vet staticcheck unit run build bench

## test: vet + staticcheck + every test (what CI runs)
test: lint unit

## lint: gofmt check, go vet, staticcheck
lint: vet staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# staticcheck is pinned by go.mod's tool directive: Go is the only prerequisite.
staticcheck:
	$(GO) tool staticcheck $(PKGS)

## unit: every package's tests, including the multi-process cluster test (~10 s)
unit:
	TENURE_CLUSTER_TEST=1 $(GO) test -timeout 15m $(PKGS)

## build: the tenure binary, stamped with its git revision and commit time where there is one
build:
	$(GO) build -buildvcs=auto -o bin/tenure ./cmd/tenure

## run: a single-node dev agent on 127.0.0.1:8500 (in-memory, like `consul agent -dev`)
run: build
	./bin/tenure agent -dev

## bench: model, linearizability and server benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./model/... ./linearizability/... ./impl/...

## bench-reap: 1M acquire+delete cycles through a durable server; heap, RSS, snapshot and
## data-dir size before and after the reap window passes (S52)
.PHONY: bench-reap
bench-reap:
	$(GO) test ./impl/internal/server -run '^$$' -bench ReapBound -benchtime 1000000x -timeout 30m

## tlc: model-check tla/ with TLC (needs TLA2TOOLS_JAR; prints SKIP without it) and compare with tla/expected.json
.PHONY: tlc
tlc:
	bash tla/run_tlc.sh

## conformance: the conformance suite against ADDR (any Consul-API server), e.g.
##   make conformance ADDR=http://127.0.0.1:8500 PROFILE=contract
## AGENT=<binary of the server's kind> lets the cases that need gossip members of their own start
## client agents and join them to the server's pool (they SKIP without it)
ADDR    ?=
PROFILE ?= contract
.PHONY: conformance mutants test-cluster sim-long
conformance: build
	@if [ -z "$(ADDR)" ]; then echo "usage: make conformance ADDR=http://host:port [PROFILE=contract|consul|tenure|acl|acl-consul|acl-tenure] [TOKEN=management token]"; exit 2; fi
	./bin/tenure conform -addr $(ADDR) -profile $(PROFILE) $(if $(AGENT),-agent $(AGENT)) $(if $(TOKEN),-token $(TOKEN))

## mutants: the suite against deliberately broken servers (a rewriting proxy in front of ADDR,
## or of an in-process tenure without ADDR); prints the cases that killed each mutant
mutants:
	@mkdir -p bin; $(GO) test -count=1 -v -run 'TestMutantsAreCaught|CaseCatches|CasesCatch' ./spec/conformance $(if $(ADDR),-args -addr $(ADDR)) > bin/mutants.log 2>&1; \
		rc=$$?; grep -E 'caught by|^(--- |ok|FAIL)|^ +--- ' bin/mutants.log; exit $$rc

## test-cluster: three tenure processes with durable stores; kill -9 the leader, restart it
test-cluster:
	TENURE_CLUSTER_TEST=1 $(GO) test -count=1 -v -run MultiProcess ./cmd/tenure

## bench-detect: 3 servers and 2 client agents as processes; how long after the lock holder's client
## is killed, stopped (SIGSTOP) or leaves its session is invalidated. AGENT is any binary with
## Consul's agent flags (default: tenure built fresh), e.g. make bench-detect AGENT=/path/to/consul
AGENT  ?=
ROUNDS ?= 3
.PHONY: bench-detect
bench-detect:
	TENURE_DETECT=1 TENURE_DETECT_AGENT=$(AGENT) TENURE_DETECT_ROUNDS=$(ROUNDS) $(GO) test -count=1 -v -timeout 0 -run '^TestDetection$$' ./bench

## bench-cluster: lock cycles/s with p50/p99 per cycle and p99 per request (an acquire attempt or a release),
## the wait for a held lock (p99, longest) and the fewest and most acquires per client, for 1, 16 and 64
## clients on keys of their own and 8 and 64 on one key, each run by a spinning plain-HTTP client (spin:
## acquire, on false again at once) and by consul/api's Lock (lock; kv, the rows of earlier sittings, on
## request); the servers' CPU per cycle and lock hand-offs of a durable 3-server tenure cluster, beside a
## 3-server Consul when CONSUL names a consul binary (with the ratio round by round, as rounds alternate, and
## the CPU the hypervisor stole in each measured window), the slow requests of each round and the share of them
## that started in one 20 ms of the wall clock's 100 ms (a periodic dip of the machine's disk, not the system's),
## with the fsync floor of the machine (its median before each round, and its pace at its slowest phase). ROWS (1,16,64,8one,64one), CLIENTS (spin,lock,kv) and HANDOFFS=0 make a short run, e.g.
##   make bench-cluster CONSUL=/path/to/consul ROUNDS=3 BENCH_SECONDS=5
##   make bench-cluster CONSUL=/path/to/consul ROUNDS=1 ROWS=8one CLIENTS=spin HANDOFFS=0
CONSUL        ?=
BENCH_SECONDS ?= 5
ROWS          ?=
CLIENTS       ?=
HANDOFFS      ?=
## bench-trace: one client's acquire and release through a follower of a durable 3-server tenure
## cluster, followed leg by leg across the three servers' runtime traces (a measurement, not a test)
.PHONY: bench-trace
bench-trace:
	TENURE_BENCH_TRACE=1 $(GO) test -count=1 -v -timeout 0 -run '^TestBenchTrace$$' ./bench

.PHONY: bench-cluster
bench-cluster:
	TENURE_BENCH_CLUSTER=1 TENURE_BENCH_CLUSTER_CONSUL=$(CONSUL) TENURE_BENCH_CLUSTER_ROUNDS=$(ROUNDS) \
		TENURE_BENCH_CLUSTER_SECONDS=$(BENCH_SECONDS) TENURE_BENCH_CLUSTER_ROWS=$(ROWS) \
		TENURE_BENCH_CLUSTER_CLIENTS=$(CLIENTS) TENURE_BENCH_CLUSTER_HANDOFFS=$(HANDOFFS) $(GO) test -count=1 -v -timeout 0 -run '^TestBenchCluster$$' ./bench

## bench-scale: a durable 3-server cluster as processes: RSS per 10k sessions and per 100k keys,
## then 10k blocking reads parked on one key and on 10k keys (memory per watcher, wake-up p50/p99/max);
## CONSUL, a consul binary, runs the same on Consul side by side, e.g. make bench-scale CONSUL=/path/to/consul
.PHONY: bench-scale
bench-scale:
	TENURE_BENCH_SCALE=1 TENURE_BENCH_SCALE_CONSUL=$(CONSUL) $(GO) test -count=1 -v -timeout 0 -run '^TestBenchScale$$' ./bench

## chaos: kill -9 and restart leaders and followers of a durable 3-process cluster under
## writes and lock traffic, then check every acknowledged write on every node, e.g.
##   make chaos KILLS=200 SEED=7
KILLS ?= 100
SEED  ?= 1
.PHONY: chaos
chaos:
	TENURE_CHAOS_KILLS=$(KILLS) TENURE_CHAOS_SEED=$(SEED) $(GO) test -count=1 -v -timeout 0 -run 'TestCrashLoop$$' ./bench

## api-suite: consul/api's own tests, unmodified (the go.mod version, from the module cache or proxy), for the
## Lock, Semaphore, Session, KV, Txn, Agent, Catalog, Health, PreparedQuery, Status, ACL and Coordinate groups, through a `consul`
## shim that starts tenure built fresh; passed/failed/skipped per group, the failures and the tests excluded with
## their reasons; CONSUL, a consul binary, gets the same run side by side (minutes; not in make test), e.g.
##   make api-suite CONSUL=/path/to/consul API_GROUPS=Lock,Session WORKAROUNDS=none
API_GROUPS  ?=
WORKAROUNDS ?=
.PHONY: api-suite
api-suite:
	$(GO) run ./compat/apisuite $(if $(CONSUL),-consul $(CONSUL)) $(if $(API_GROUPS),-groups $(API_GROUPS)) \
		$(if $(WORKAROUNDS),-workarounds $(WORKAROUNDS))

## sim-long: many sim seeds in parallel processes with a progress line and a summary, e.g. make sim-long SEEDS=10000;
## SHARD=K/N runs one machine's share (K from 0), and go run ./sim/cmd/simlong -merge FILES… combines the shards' results.jsonl
SEEDS ?= 1000
NODES ?= 3
SHARD ?=
sim-long:
	$(GO) run ./sim/cmd/simlong -seeds $(SEEDS) -nodes $(NODES) $(if $(SHARD),-shard $(SHARD))

## sim-outside: a module outside tenure imports the public harness (package sim) and runs a check
## with it, offline (GOPROXY=off, the module cache); sim-ledger: the fenced ledger over LEDGER_SEEDS
.PHONY: sim-outside sim-ledger
sim-outside:
	$(GO) test -count=1 -run 'TestOutsideModuleRunsTheHarness$$' -v ./sim -args -outside
LEDGER_SEEDS ?= 20
sim-ledger:
	$(GO) test -count=1 -timeout 0 -run 'TestElectionWithFenceKeepsTheLedgerExclusive$$' -v ./sim -args -ledger-seeds $(LEDGER_SEEDS)

## replay-rate: how often a sim seed's reruns replay its first run (identical trace digest), on
## 3 and 5 servers at GOMAXPROCS=1 and at the default (minutes), e.g. make replay-rate RATE_SEEDS=200
## RATE_REPLAYS=3; TestDiverge shows where two runs of one seed part (sim/replayrate_test.go)
RATE_SEEDS   ?= 20
RATE_REPLAYS ?= 4
.PHONY: replay-rate
replay-rate:
	@mkdir -p bin; for n in 3 5; do for p in 1 0; do \
	$(GO) test -count=1 -timeout 0 -run 'TestReplayRate$$' -v ./sim -args -replay-rate -seeds $(RATE_SEEDS) \
		-replays $(RATE_REPLAYS) -nodes $$n -replay-procs $$p > bin/replay-rate.log 2>&1; rc=$$?; \
		grep 'replay rate' bin/replay-rate.log; [ $$rc -eq 0 ] || exit $$rc; done; done

## torn-power-loss: the raft log's power-loss test with torn partial writes (simdisk.PowerLossRand),
## TORN_SEEDS seeds (make test runs 30)
TORN_SEEDS ?= 3000
.PHONY: torn-power-loss
torn-power-loss:
	$(GO) test -count=1 -timeout 0 -run 'TestDurableStoresOnSimDiskTornPowerLoss$$' ./impl/internal/raftlog -args -torn-seeds $(TORN_SEEDS)

## teeth-replay: for each broken server in TestTeeth, how often its failing seeds fail again with the
## same check at the default GOMAXPROCS (minutes; not in make test), e.g. make teeth-replay TEETH_REPLAYS=20
TEETH_REPLAYS ?= 10
.PHONY: teeth-replay
teeth-replay:
	@mkdir -p bin; $(GO) test -count=1 -timeout 0 -run 'TestTeethReplay$$' -v ./sim -args -teeth-replays $(TEETH_REPLAYS) \
		> bin/teeth-replay.log 2>&1; rc=$$?; grep -E 'caught|teeth replay rate|^(--- |ok|FAIL)' bin/teeth-replay.log; exit $$rc

## shrink-teeth: shrink every TestTeeth broken server's failing seed (its faults, then its clients) and
## print the sizes before and after (minutes); SHRINK_KEEP=sim/testdata/sim also keeps each scenario there
SHRINK_KEEP ?=
.PHONY: shrink-teeth
shrink-teeth:
	@mkdir -p bin; $(GO) test -count=1 -timeout 0 -run 'TestShrinkTeeth$$' -v ./sim -args -shrink-teeth \
		$(if $(SHRINK_KEEP),-shrink-keep $(abspath $(SHRINK_KEEP))) > bin/shrink-teeth.log 2>&1; rc=$$?; \
		grep -E 'shrink teeth|faults .* clients|^(--- |ok|FAIL)|no seed|grew|does not fail' bin/shrink-teeth.log; exit $$rc

## mutate: mutation testing (gremlins, pinned in go.mod) over model/, linearizability/, recipe/,
## the server's decision files, impl/internal/{reconcile,gossip,checks,local}, plus the named
## deletion mutants (mutation/deletionlist.go); summary in bin/mutation/report.txt. Fails on a
## survivor not explained in mutation/equivalents.txt. MUTATE_ONLY=model[,recipe…] runs some targets.
MUTATE_ONLY ?=
.PHONY: mutate
mutate:
	$(GO) run ./mutation $(if $(MUTATE_ONLY),-only $(MUTATE_ONLY))

## fuzz: every Go fuzz target (func Fuzz…) for FUZZTIME each, e.g. make fuzz FUZZTIME=1m;
## plain `go test` (make test) runs their seed corpora only
FUZZTIME ?= 30s
.PHONY: fuzz
fuzz:
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for target in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
			echo "== $$dir $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done
