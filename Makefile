# vault — the two set-up commands are `make demo` and `make test`; both install what is missing.
SWIFT ?= swift
BIN   := .build/debug/vault

.PHONY: all deps peers build test demo bench fixtures release stress fuzz man man-check clean

# The manual page's date: the one in docs/vault.1 (change it with the page).
MAN_DATE ?= 2026-11-22
MAN_OUT  := .build/plugins/GenerateManual/outputs/vault/vault.1

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Builds, installs the test peers, then runs every test: unit, vectors, CLI tests on the built
# binary, interoperability with the PyPI rncryptor package, peak-memory tests; and checks that
# docs/vault.1 is what the commands generate.
test: build man-check peers
	$(SWIFT) test

# Test peers this project did not write: php-cli (apt), and rncryptor, jsonschema and resumable-upload from PyPI in .build-peers/
peers:
	@scripts/install-peers.sh

# docs/vault.1 from the command definitions (swift-argument-parser's generate-manual plugin).
man: deps
	$(SWIFT) package generate-manual --configuration debug --date $(MAN_DATE)
	cp $(MAN_OUT) docs/vault.1

# Fails when docs/vault.1 is out of date.
man-check: deps
	@$(SWIFT) package generate-manual --configuration debug --date $(MAN_DATE) > /dev/null
	@diff -u docs/vault.1 $(MAN_OUT) > /dev/null || { diff -u docs/vault.1 $(MAN_OUT) | head -20; \
		echo "vault: docs/vault.1 is out of date" >&2; echo "vault: hint: run 'make man' and commit docs/vault.1" >&2; exit 1; }
	@echo "docs/vault.1 is current"

# The main job on sample documents, in a throwaway vault.
demo: build
	@scripts/demo.sh $(BIN)

# Throughput and peak memory on generated data, next to age where it is installed.
bench:
	@scripts/install-deps.sh age php curl || true
	@scripts/install-peers.sh || true
	@$(MAKE) --no-print-directory release
	@scripts/bench.sh .build/release/vault

# The long crash-safety run: SIGKILL add/remove/export at 60 random moments, checking invariants.
stress: build
	python3 scripts/crash_test.py --vault-bin $(BIN) --runs 60

# libFuzzer over the header parser and the reader, seeded with the fixture vectors (FUZZ_SECONDS=120).
fuzz: deps
	@scripts/fuzz.sh

# Rewrites Fixtures/envelope/*.vector from the committed generator (fixed seed: same bytes).
fixtures: build
	VAULT_REGENERATE_FIXTURES=1 $(SWIFT) test --filter "VectorTests|SealedStateTests"

clean:
	rm -rf .build
