GO ?= go
BIN := bin/cocrawl

.PHONY: help build test bench fuzz demo lint

help: ## list the targets
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/cocrawl
	$(GO) build -o $(BIN) ./cmd/cocrawl

test: ## run the test suite (race detector on the core packages)
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race -short ./webevents/... ./protocol/...

bench: ## run the benchmarks and print their figures
	$(GO) test -run '^$$' -bench . -benchmem -benchtime=1x ./webevents/... ./protocol/...
	$(GO) test -run '^$$' -bench . -benchmem ./protocol/...

fuzz: ## fuzz each decoder for 30 s
	$(GO) test -run '^$$' -fuzz FuzzDatReader -fuzztime 30s ./protocol/
	$(GO) test -run '^$$' -fuzz FuzzShareControl -fuzztime 30s ./protocol/

demo: ## the community demo (not built yet: see README)
	$(GO) run ./cmd/cocrawl demo

lint: ## gofmt, vet and tidy leave no diff
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GO) mod tidy -diff
