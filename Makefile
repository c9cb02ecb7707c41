# vault — the two set-up commands are `make demo` and `make test`; both install what is missing.
SWIFT ?= swift
BIN   := .build/debug/vault

.PHONY: all deps peers build test demo bench fixtures release stress fuzz fuzz-smoke man man-check example docs clean static install uninstall dist install-check

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
# docs/vault.1 is what the commands generate; then builds and runs the example app package, the
# DocC check, and a few seconds of every fuzz family after its regressions.
test: build man-check peers
	$(SWIFT) test
	@$(MAKE) --no-print-directory example
	@$(MAKE) --no-print-directory docs
	@$(MAKE) --no-print-directory fuzz-smoke

# Examples/CaptureApp: a package that depends on this one by path and does a capture app's job
# through the public async API (add, list, range read, export into a FileHandle with progress,
# a cancelled export); it exits non-zero when anything is not as expected.
example: deps
	cd Examples/CaptureApp && $(SWIFT) build && $(SWIFT) run -q CaptureApp

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

# The DocC documentation of VaultCore and VaultUpload (swift-docc-plugin), into .build/docs/:
# fails on any DocC warning and on any public symbol without documentation.
DOCS_MODULES := VaultCore VaultUpload
docs: deps
	@mkdir -p .build/docs
	@for m in $(DOCS_MODULES); do rm -rf .build/docs/$$m; \
		$(SWIFT) package --disable-sandbox generate-documentation --target $$m --warnings-as-errors \
			--output-path .build/docs/$$m > .build/docs/$$m.log 2>&1 || { grep -B2 -A8 "warning:\|error:" .build/docs/$$m.log | head -40; \
			echo "vault: DocC failed for $$m (.build/docs/$$m.log)" >&2; exit 1; }; done
	@python3 scripts/docs-coverage.py .build/$$(uname -m)-unknown-linux-gnu/extracted-symbols/main $(DOCS_MODULES)
	@echo "docs: .build/docs/VaultCore and .build/docs/VaultUpload (open with 'swift package preview-documentation' or any static server)"

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

# libFuzzer over every parser of bytes vault did not write (Fuzz/README.md): each family for
# FUZZ_SECONDS (120), after replaying Fuzz/regressions/; FAMILIES="s3 upload" picks some.
fuzz: deps
	@scripts/fuzz.sh

# What `make test` runs of it: the regressions, then a fixed number of inputs of every family
# from a fixed seed (about 5 s each).
fuzz-smoke: deps
	@FUZZ_SMOKE=1 scripts/fuzz.sh

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
DOCS := README.md docs/CLI.md docs/EXPORT.md docs/FORMAT.md docs/UPLOAD.md docs/REMOTE.md docs/SECURITY.md docs/PERFORMANCE.md

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
