GO ?= go
BIN := bin/cocrawl

.PHONY: help build test e2e e2e-nat bench fuzz soak demo lint sim

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/cocrawl
	$(GO) build -o $(BIN) ./cmd/cocrawl

test: ## vet, every test, and the race detector on the libraries
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	@# Badger's own table tests write their .sst files to TMPDIR and leave them there.
	cd third_party/badger && tmp=$$(mktemp -d) && { TMPDIR=$$tmp $(GO) test -count=1 . ./table/; rc=$$?; rm -rf "$$tmp"; exit $$rc; }
	$(GO) test -count=1 -race -short ./webevents/... ./protocol/... ./crawl/... ./peer/... ./publish/... ./internal/...

e2e: ## the dashboard in headless Chromium (apt-get install chromium); screenshot in build/
	$(GO) test -tags e2e -count=1 -run 'TestDashboardInChromium' -v ./cmd/cocrawl/

e2e-nat: ## as root: two home peers behind nftables NATs in network namespaces merge each other, set up by hand and on the defaults (COCRAWL_NAT_TRIALS=20 for the figure)
	$(GO) test -tags e2enat -count=1 -run 'TestNATHomePeersMergeEachOther|TestNATHomePeersOnDefaults' -v -timeout 30m ./cmd/cocrawl/

bench: ## run the benchmarks and print their figures (docs/performance.md)
	$(GO) test -run '^$$' -bench . -benchtime=1x -count=3 ./protocol/
	$(GO) test -run '^$$' -bench 'BenchmarkCrawl$$' -benchtime=1x -count=2 ./crawl/
	$(GO) test -run '^$$' -bench 'CrawlAgainstColly' -benchtime=1x -count=3 ./crawl/
	$(GO) test -run '^$$' -bench 'CrawlWARC' -benchtime=2x ./crawl/
	$(GO) test -run '^$$' -bench 'ExtractLinks|FrontierMemory|Normalize|Refit' -benchmem ./crawl/
	$(GO) test -run '^$$' -bench . -benchmem ./internal/fpmap/
	$(GO) test -run '^$$' -bench Observe -benchmem ./peer/rho/
	$(GO) test -run '^$$' -bench 'JoinCommunity' -benchtime=1x -count=3 ./peer/
	$(GO) test -run '^$$' -bench 'DHTTraffic' -benchtime=1x ./peer/
	$(GO) test -run '^$$' -bench . -benchtime=3x ./sim/

sim: ## table 6.1 at thesis scale, bang-bang runs only (28 min on 2 cores, 13 GB; sim/README.md)
	$(GO) run ./cmd/cocrawl sim bangbang --scale thesis --no-compare --out sim-results/table-6.1

fuzz: ## fuzz each decoder for 30 s
	$(GO) test -run '^$$' -fuzz FuzzDatReader -fuzztime 30s ./protocol/
	$(GO) test -run '^$$' -fuzz FuzzShareControl -fuzztime 30s ./protocol/
	$(GO) test -run '^$$' -fuzz FuzzDayFilter -fuzztime 30s ./protocol/
	$(GO) test -run '^$$' -fuzz FuzzStreamCursor -fuzztime 30s ./protocol/
	$(GO) test -run '^$$' -fuzz FuzzNormalize -fuzztime 30s ./crawl/
	$(GO) test -run '^$$' -fuzz FuzzExtractLinks -fuzztime 30s ./crawl/
	$(GO) test -run '^$$' -fuzz FuzzTagAtom -fuzztime 30s ./crawl/
	$(GO) test -run '^$$' -fuzz FuzzHeadersToEvent -fuzztime 30s ./crawl/
	$(GO) test -run '^$$' -fuzz FuzzRead -fuzztime 30s ./crawl/sitemap/
	$(GO) test -run '^$$' -fuzz FuzzOf -fuzztime 30s ./crawl/fingerprint/
	$(GO) test -run '^$$' -fuzz FuzzReadFeed -fuzztime 30s ./crawl/
	$(GO) test -run '^$$' -fuzz FuzzParseReport -fuzztime 30s ./peer/rho/
	$(GO) test -run '^$$' -fuzz FuzzDecodeBinary -fuzztime 30s ./webevents/
	$(GO) test -run '^$$' -fuzz FuzzDecodeLog -fuzztime 30s ./webevents/

soak: ## a month and a half of events into a store with retention: disk bytes per live URL each day (minutes)
	COCRAWL_SOAK=1 $(GO) test -count=1 -run TestSoak -v -timeout 60m ./webevents/

demo: ## cooperating peers against polling-only peers on a synthetic web (about 2.5 min)
	$(GO) run ./cmd/cocrawl demo

GOIMPORTS := golang.org/x/tools/cmd/goimports@v0.51.0

# cocrawl's own sources: third_party holds Badger's, kept as upstream wrote them.
OWN_GO = $$(find . -name '*.go' -not -path './third_party/*')

lint: ## gofmt, goimports (three import groups: standard, others, cocrawl's), vet and tidy leave no diff
	@out="$$(gofmt -l $(OWN_GO))" && test -z "$$out" || (echo "not gofmt'd: $$out"; exit 1)
	@out="$$($(GO) run $(GOIMPORTS) -l -local github.com/cocrawl/cocrawl $(OWN_GO))" && test -z "$$out" || (echo "imports not grouped: $$out"; exit 1)
	@test -z "$$(gofmt -l third_party)" || (gofmt -l third_party; exit 1)
	$(GO) vet ./...
	cd third_party/badger && $(GO) vet ./table/
	$(GO) mod tidy -diff
