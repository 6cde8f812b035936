# tenure — see README.md. `make run` starts a dev agent; `make test` is what CI runs.
GO          ?= go
STATICCHECK_VERSION ?= 2026.2.2
GOBIN       ?= $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
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

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

unit:
	$(GO) test -timeout 15m $(PKGS)

## build: the tenure binary
build:
	$(GO) build -o bin/tenure ./cmd/tenure

## run: a single-node dev agent on 127.0.0.1:8500 (in-memory, like `consul agent -dev`)
run: build
	./bin/tenure agent -dev

## bench: model, linearizability and server benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./model/... ./linearizability/... ./impl/...

## tlc: model-check tla/ with TLC (needs TLA2TOOLS_JAR; prints SKIP without it) and compare with tla/expected.json
.PHONY: tlc
tlc:
	bash tla/run_tlc.sh
