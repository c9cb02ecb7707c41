# vault — the two set-up commands are `make demo` and `make test`; both install what is missing.
SWIFT ?= swift
BIN   := .build/debug/vault

.PHONY: all deps peers build test long demo bench fixtures release stress cluster fuzz fuzz-smoke fuzz-replay man man-check example docs clean static install uninstall dist install-check

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

# The tests' scratch folders: on tmpfs (/dev/shm) when it has 8 GiB free, else $TMPDIR or /tmp.
# Nothing a test checks depends on the disk (crash tests kill processes, they do not cut power),
# and on a loaded two-core machine waiting for fsync was a tenth of the suite's time.
TEST_TMPDIR := $(or $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 > 8388608 { print "/dev/shm" }'),$(TMPDIR),/tmp)

# Builds, installs the test peers, then runs every test: unit, vectors, CLI tests on the built
# binary, interoperability with real peers, peak-memory and scale tests at sizes where growth
# already shows (`make long` runs them at full size); checks that docs/vault.1 is what the
# commands generate; runs the example app, the DocC check, and replays every fuzz family's
# regressions and seeds. Everything is built once, in .build/debug (`make fuzz` builds the
# sanitized driver, `make install-check` the static release binary).
test: build man-check peers
	TMPDIR=$(TEST_TMPDIR) $(SWIFT) test
	@$(MAKE) --no-print-directory example
	@$(MAKE) --no-print-directory docs
	@$(MAKE) --no-print-directory fuzz-replay

# The whole suite with the sizes `make test` cuts at full size (VAULT_LONG_TESTS=1): peak memory
# with 1 GiB and 20 x 50 MiB through every protocol, scale at 20,000 documents, a 1 GiB RNCryptor
# import and ranged reads of a 1 GiB remote document, 200 mixed operations and 20 killed
# password changes before an audit, two stations of 200 documents each, and the tamper matrix
# exported at every header byte (docs/SECURITY.md lists what runs where).
long: build peers
	TMPDIR=$(TEST_TMPDIR) VAULT_LONG_TESTS=1 $(SWIFT) test

# Examples/CaptureApp: a capture app's job through the public async API only (add, list, range
# read, export into a FileHandle with progress, a cancelled export, a delivery to a back office
# on 127.0.0.1 as `vault upload --remove-delivered` makes it); it exits non-zero when
# anything is not as expected. A target of this package compiled without package access, so it
# sees what an app sees and shares the one build (Examples/CaptureApp/Package.swift builds the
# same sources as a package of its own, as an app would).
example: deps
	@$(SWIFT) build --product CaptureApp > /dev/null
	@scripts/example.sh .build/debug/CaptureApp

# Test peers this project did not write: php-cli (apt), and rncryptor, jsonschema and resumable-upload from PyPI in .build-peers/
peers:
	@scripts/install-peers.sh

# docs/vault.1 from the command definitions (swift-argument-parser's generate-manual plugin).
man: deps
	$(SWIFT) package generate-manual --configuration debug --date $(MAN_DATE)
	python3 scripts/man-finish.py README.md < $(MAN_OUT) > docs/vault.1

# Fails when docs/vault.1 is out of date.
man-check: deps
	@$(SWIFT) package generate-manual --configuration debug --date $(MAN_DATE) > /dev/null
	@python3 scripts/man-finish.py README.md < $(MAN_OUT) > $(MAN_OUT).finished
	@diff -u docs/vault.1 $(MAN_OUT).finished > /dev/null || { diff -u docs/vault.1 $(MAN_OUT).finished | head -20; \
		echo "vault: docs/vault.1 is out of date" >&2; echo "vault: hint: run 'make man' and commit docs/vault.1" >&2; exit 1; }
	@if command -v man >/dev/null && man --warnings -l docs/vault.1 2>&1 >/dev/null | grep -q .; then \
		man --warnings -l docs/vault.1 2>&1 >/dev/null | head -5; echo "vault: docs/vault.1 has mandoc warnings" >&2; exit 1; fi
	@echo "docs/vault.1 is current"

# The DocC documentation of VaultCore and VaultUpload (swift-docc-plugin, one run for both), into
# .build/docs/: fails on any DocC warning and on any public symbol without documentation (the
# symbol graphs are found wherever the plugin put them; none found, or none counted, fails too),
# and on a `public` member of a type an app cannot see or a public tuple (scripts/access-check.py).
DOCS_MODULES := VaultCore VaultFoundation VaultUpload VaultReceive
# Every library module: `public` means an app sees it, and no public API hands out tuples.
LIBRARY_MODULES := VaultCore VaultFoundation VaultUpload VaultS3 VaultRemote VaultReceive
docs: build
	@# The symbol graphs cover every module the package builds, the test modules too.
	@$(SWIFT) build --build-tests > .build/docs-build.log 2>&1 || { tail -40 .build/docs-build.log; exit 1; }
	@mkdir -p .build/docs
	@rm -rf $(addprefix .build/docs/,$(addsuffix .doccarchive,$(DOCS_MODULES)))
	@$(SWIFT) package --disable-sandbox generate-documentation $(addprefix --target ,$(DOCS_MODULES)) --warnings-as-errors \
		--output-path .build/docs > .build/docs/docc.log 2>&1 || { grep -B2 -A8 "warning:\|error:" .build/docs/docc.log | head -40; \
		echo "vault: DocC failed (.build/docs/docc.log)" >&2; exit 1; }
	@python3 scripts/docs-coverage.py .build $(DOCS_MODULES)
	@$(SWIFT) package dump-symbol-graph --minimum-access-level package > .build/docs/symbols.log 2>&1 || { tail -20 .build/docs/symbols.log; exit 1; }
	@python3 scripts/access-check.py $$(sed -n 's/^Files written to //p' .build/docs/symbols.log) $(LIBRARY_MODULES)
	@echo "docs: $(addprefix .build/docs/,$(addsuffix .doccarchive,$(DOCS_MODULES))) (open with 'swift package preview-documentation' or any static server)"

# The main job on sample documents, in a throwaway vault.
demo: build
	@scripts/demo.sh $(BIN)

# Throughput and peak memory on generated data, next to age where it is installed.
bench:
	@scripts/install-deps.sh age php curl || true
	@scripts/install-peers.sh || true
	@$(MAKE) --no-print-directory release
	@scripts/bench.sh .build/release/vault

# The long crash-safety run: SIGKILL add/remove/export at 60 random moments, checking invariants;
# then remote vaults on a real SeaweedFS cluster with failures (`make cluster`).
stress: build
	python3 scripts/crash_test.py --vault-bin $(BIN) --runs 60
	@$(MAKE) --no-print-directory cluster

# Remote vaults on a SeaweedFS cluster of its own processes (a master, three volume servers with
# replication 001, a filer, the S3 gateway; docs/REMOTE.md): push, clone, pull and an export read
# in place while a volume server is SIGKILLed, a push while the filer is, each run again until
# it completes; then a fresh clone must audit clean and hold every document byte for byte.
cluster: build peers
	python3 scripts/cluster_test.py --vault-bin $(BIN)

# libFuzzer over every parser of bytes vault did not write (Fuzz/README.md), built with
# AddressSanitizer: the smoke run (the regressions, then a fixed number of inputs of every family
# from a fixed seed), then each family for FUZZ_SECONDS (120); FAMILIES="s3 upload" picks some.
fuzz: fuzz-smoke
	@FUZZ_BUILT=1 scripts/fuzz.sh

fuzz-smoke: deps
	@FUZZ_SMOKE=1 scripts/fuzz.sh

# What `make test` runs of it: the debug build's fuzzvault replays every family's regressions
# and seed corpus through the same properties (no sanitizer, no second build).
fuzz-replay: build
	@FUZZ_REPLAY=1 scripts/fuzz.sh

# Rewrites Fixtures/envelope/*.vector from the committed generator (fixed seed: same bytes).
fixtures: build
	VAULT_REGENERATE_FIXTURES=1 $(SWIFT) test --filter "VectorTests|SealedStateTests"

# Installation: one binary with the Swift runtime, Foundation, libsodium and SQLite linked in
# (scripts/static-build.sh), its manual, bash/zsh/fish completions written by the binary itself,
# and the docs. PREFIX and DESTDIR as usual.
PREFIX  ?= /usr/local
DESTDIR ?=
STATIC  := .build-static/release/vault
VERSION := $(shell sed -n 's/^    static let version = "\(.*\)"/\1/p' Sources/vault/Commands/Version.swift)
ARCH    := $(shell uname -m)
INSTALLED := $(PREFIX)/bin/vault $(PREFIX)/share/man/man1/vault.1 \
	$(PREFIX)/share/bash-completion/completions/vault $(PREFIX)/share/zsh/site-functions/_vault \
	$(PREFIX)/share/fish/vendor_completions.d/vault.fish
DOCS := README.md CHANGELOG.md docs/GUIDE.md docs/ARCHITECTURE.md docs/CLI.md docs/EXPORT.md docs/FORMAT.md docs/UPLOAD.md docs/RECEIVE.md \
	docs/REMOTE.md docs/SECURITY.md docs/PERFORMANCE.md

static: deps
	@scripts/static-build.sh .build-static

install: static
	install -d -m 0755 $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d $(DESTDIR)$(PREFIX)/share/doc/vault/schemas
	install -s -m 0755 $(STATIC) $(DESTDIR)$(PREFIX)/bin/vault
	install -m 0644 docs/vault.1 $(DESTDIR)$(PREFIX)/share/man/man1/vault.1
	$(STATIC) --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/vault
	$(STATIC) --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_vault
	$(STATIC) --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/vault.fish
	install -m 0644 $(DOCS) $(DESTDIR)$(PREFIX)/share/doc/vault/
	install -m 0644 docs/schemas/*.json $(DESTDIR)$(PREFIX)/share/doc/vault/schemas/
	@echo "vault: installed $(DESTDIR)$(PREFIX)/bin/vault ($$($(DESTDIR)$(PREFIX)/bin/vault --version))"

# Removes exactly what install put there.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/vault

# vault-VERSION-linux-ARCH.tar.gz: the installed tree (bin, share) with SHA256SUMS; it installs by copying.
dist: static
	rm -rf .build-dist && $(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/.build-dist/stage PREFIX=/vault-$(VERSION)-linux-$(ARCH)
	cd .build-dist/stage/vault-$(VERSION)-linux-$(ARCH) && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum > SHA256SUMS
	tar -C .build-dist/stage -czf vault-$(VERSION)-linux-$(ARCH).tar.gz vault-$(VERSION)-linux-$(ARCH)
	@echo "vault: wrote vault-$(VERSION)-linux-$(ARCH).tar.gz"

# Installs into a staging DESTDIR, runs the installed binary with the Swift toolchain out of reach
# (root: a mount namespace), checks the manual and completions, then that uninstall leaves nothing.
install-check: static
	rm -rf .build-dist/check
	@$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/.build-dist/check PREFIX=/usr/local
	@scripts/install-check.sh $(CURDIR)/.build-dist/check/usr/local
	@$(MAKE) --no-print-directory uninstall DESTDIR=$(CURDIR)/.build-dist/check PREFIX=/usr/local
	@left=$$(find .build-dist/check -type f | wc -l); [ "$$left" = 0 ] || { echo "vault: uninstall left $$left files" >&2; exit 1; }
	@echo "ok: uninstall removed every installed file"

clean:
	rm -rf .build .build-static .build-dist
