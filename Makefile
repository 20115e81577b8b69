# host_bridge build entry points. `make test` and `make run` work from a fresh clone:
# they create .venv and install everything they need (`make run`: the runtime dependencies only, no Node.js).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUNSTAMP := $(VENV)/.installed-runtime
MIN_PYTHON := 3.11
PYTHON_OK := import sys; sys.exit(sys.version_info < (3, 11))
PEERS  := tests/peers/node_modules/.installed
EXT    := vscode-extension
EXTNPM := $(EXT)/node_modules/.installed
E2E    := tests/editor
E2ENPM := $(E2E)/node_modules/.installed
EXTVER := $(shell sed -n 's/^ *"version": "\(.*\)",/\1/p' $(EXT)/package.json | head -n 1)
# The universal package (dependencies from the package index at first start) and this machine's platform package.
VSIX   := $(EXT)/dist/host-bridge-$(EXTVER).vsix
VSIX_LINUX := $(EXT)/dist/host-bridge-linux-x64-$(EXTVER).vsix
# Every platform package: each carries the sidecar and its dependencies laid out ready to import for CPython
# 3.11–3.14 of that platform (nothing to install at first start).
VSIX_TARGETS := linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64
PACKAGE := PYTHON=$(CURDIR)/$(BIN)/python $(EXT)/scripts/package.sh

.PHONY: install tools run test lint typecheck unit bench compat compat-layouts compat-fast clean protocol extension-js extension extensions-all extension-test e2e conformance FORCE

# A .venv whose Python is older than $(MIN_PYTHON) (or gone) is rebuilt, with everything installed in it.
VENV_STALE := $(shell [ -e $(VENV) ] && ! $(BIN)/python -c '$(PYTHON_OK)' >/dev/null 2>&1 && echo yes)
ifeq ($(VENV_STALE),yes)
$(BIN)/python $(STAMP) $(RUNSTAMP): FORCE
endif
FORCE:

$(BIN)/python:
	@if [ -e $(VENV) ]; then \
	  echo "$(VENV) was made by $$($(BIN)/python --version 2>&1 || echo 'a Python that is gone'); host_bridge needs Python $(MIN_PYTHON) or newer: rebuilding it with $(PYTHON)"; \
	  rm -rf $(VENV); fi
	@$(PYTHON) -c '$(PYTHON_OK)' 2>/dev/null || { \
	  echo "host_bridge needs Python $(MIN_PYTHON) or newer, and $(PYTHON) is $$($(PYTHON) --version 2>&1 || echo 'not found'); run make PYTHON=python3.12 (or another Python $(MIN_PYTHON)+)" >&2; exit 1; }
	@echo "creating $(VENV) with $$($(PYTHON) --version 2>&1) (first run only)"
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $@ $(RUNSTAMP)

# What `make run` needs: host_bridge and its runtime dependencies, with pip's progress (a minute the first time).
$(RUNSTAMP): pyproject.toml | $(BIN)/python
	@echo "installing host_bridge and its runtime dependencies into $(VENV) (first run only; about a minute)…"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on -e .
	touch $@

# Pinned reference MCP servers (server-filesystem, server-everything) that the integration tests run.
$(PEERS): tests/peers/package.json tests/peers/package-lock.json
	cd tests/peers && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Neovim, Emacs and eglot (Debian's packages: Neovim 0.7, Emacs 28 with elpa-eglot 1.9) for the headless tests of
# editors/neovim and editors/emacs, and the sandbox's kernel helpers: bubblewrap (the mount layer: a private /dev,
# planted files read-only) and libseccomp2 (the socket filter). Skipped where apt-get cannot run (the editor tests are
# then skipped, and the sandbox says in status what it does not confine).
tools:
	@command -v bwrap >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap libseccomp2 >/dev/null) \
	      || echo "warning: could not install bubblewrap and libseccomp2; status will say what the sandbox leaves open"; \
	  else echo "note: bubblewrap or libseccomp2 missing and apt-get not usable; status will say what is not confined"; fi; }
	@missing=""; command -v nvim >/dev/null 2>&1 || missing="neovim"; \
	  { command -v emacs >/dev/null 2>&1 && emacs --batch --eval "(require 'eglot)" >/dev/null 2>&1; } \
	    || missing="$$missing emacs-nox elpa-eglot"; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null) \
	        || echo "warning: could not install$$missing; their editor tests will be skipped"; \
	    else echo "note:$$missing not installed and apt-get not usable; their editor tests will be skipped"; fi; fi

# The VS Code extension's toolchain (TypeScript, esbuild, vsce, vitest), pinned in its package-lock.json.
$(EXTNPM): $(EXT)/package.json $(EXT)/package-lock.json
	cd $(EXT) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(STAMP) $(PEERS) $(EXTNPM)

# Real MCP servers from npm and PyPI in the layouts users install them with (npm -g --prefix, a venv, pipx, uv tool,
# and the runners pipx and uv themselves), pinned, for the sandbox compatibility tier (tests/compat); a minute or
# two the first time, nothing afterwards. make test needs only the venv (compat-fast, seconds).
COMPAT := tests/compat/.layouts/.uv-tool.done
$(COMPAT): tests/compat/layouts.sh tests/compat/python-constraints.txt | $(STAMP)
	rm -f tests/compat/.layouts/.*.done
	tests/compat/layouts.sh tests/compat/.layouts "$$(readlink -f $(BIN)/python)"
compat-layouts: $(COMPAT) $(PEERS)
COMPAT_FAST := tests/compat/.layouts/.venv.done
$(COMPAT_FAST): tests/compat/layouts.sh tests/compat/python-constraints.txt | $(STAMP)
	rm -f $@
	tests/compat/layouts.sh tests/compat/.layouts "$$(readlink -f $(BIN)/python)" venv
compat-fast: $(COMPAT_FAST) $(PEERS)

# The whole compatibility tier, timed: every layout, and the package runners' downloads into their private folders
# (minutes on a cold machine, so not part of make test, which runs only the layouts of compat-fast).
compat: install compat-layouts
	time $(BIN)/pytest tests/compat -q -p no:randomly -m ""

# Regenerate the TypeScript mirror of the pydantic protocol models.
protocol: $(STAMP)
	$(BIN)/python -m host_bridge.hosts.lsp.typescript --write $(EXT)/src/protocol.ts

# Type-check and bundle the extension's code (dist/extension.js); remove packages of an earlier build.
extension-js: install
	$(BIN)/python -m host_bridge.hosts.lsp.typescript --check $(EXT)/src/protocol.ts
	cd $(EXT) && npx tsc --noEmit -p .
	cd $(EXT) && node scripts/build.mjs --minify
	rm -f $(EXT)/dist/*.vsix $(EXTSTAMP)

# What the packages are made of: the extension's own files and the sidecar they carry. `make test` and `make e2e`
# (both run by CI) then build the packages once, not once each.
EXTSTAMP := $(EXT)/dist/.packaged
EXT_INPUTS := $(shell find $(EXT) host_bridge \( -name node_modules -o -name dist -o -name python -o -name __pycache__ \) -prune \
  -o -type f ! -name '*.pyc' -print 2>/dev/null) pyproject.toml

# The universal .vsix and the linux-x64 one (wheels downloaded once into ~/.cache/host-bridge/wheels, see
# scripts/bundle_python.py); then check what each package holds.
$(EXTSTAMP): $(EXT_INPUTS) $(STAMP) $(EXTNPM)
	$(MAKE) extension-js
	$(PACKAGE) universal
	$(PACKAGE) linux-x64
	$(BIN)/python $(EXT)/scripts/check_vsix.py $(VSIX) $(VSIX_LINUX)
	touch $@
extension: $(EXTSTAMP)

# The universal .vsix and every platform one.
extensions-all: extension-js
	$(PACKAGE) universal
	for target in $(VSIX_TARGETS); do $(PACKAGE) $$target || exit 1; done
	$(BIN)/python $(EXT)/scripts/check_vsix.py $(VSIX) $(VSIX_TARGETS:%=$(EXT)/dist/host-bridge-%-$(EXTVER).vsix)

# Unit tests (no VS Code), then the real sidecar driven from Node through src/protocol.ts.
extension-test: extension
	cd $(EXT) && npx vitest run --project unit
	cd $(EXT) && HOST_BRIDGE_PYTHON=$(CURDIR)/$(BIN)/python npx vitest run --project integration

# Playwright (its runner only: the browser is Debian's chromium), pinned in tests/editor/package-lock.json.
$(E2ENPM): $(E2E)/package.json $(E2E)/package-lock.json
	cd $(E2E) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The packaged extension in a real VS Code (code-server) driven by Chromium: prepare.sh installs Node 24 and
# code-server into ~/.cache/host-bridge-e2e once (and chromium via apt-get); see tests/editor/README.md.
e2e: extension $(E2ENPM)
	$(E2E)/scripts/prepare.sh
	cd $(E2E) && npx tsc --noEmit -p .
	cd $(E2E) && HOST_BRIDGE_VSIX=$(CURDIR)/$(VSIX_LINUX) HOST_BRIDGE_PYTHON=$(CURDIR)/$(BIN)/python npx playwright test

# The MCP conformance suite's client scenarios (initialize, tools_call, the auth and 2025-03-26 suites) with
# `host-bridge connect` as the client: Node 24 into ~/.cache/host-bridge-e2e once, the suite pinned in
# tests/conformance/package-lock.json (tests/conformance/run.sh). Two to five minutes on a two-core machine.
conformance: install
	PYTHON=$(CURDIR)/$(BIN)/python tests/conformance/run.sh

run: $(RUNSTAMP)
	$(BIN)/host-bridge connect --list .

lint: install
	$(BIN)/ruff check host_bridge tests bench $(EXT)/scripts
	$(BIN)/ruff format --check host_bridge tests bench $(EXT)/scripts
	$(BIN)/lint-imports
	cd $(EXT) && npx eslint src test && npx prettier --check src test

typecheck: install
	$(BIN)/pyright
	$(BIN)/pyright -p tests/pyrightconfig.json

unit: install
	$(BIN)/pytest tests/unit

test: install tools lint typecheck compat-fast
	$(BIN)/pytest
	$(MAKE) extension-test

bench: install
	$(BIN)/python bench/detect.py
	$(BIN)/python bench/hub.py
	$(BIN)/python bench/sidecar.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache tests/peers/node_modules $(EXT)/node_modules $(EXT)/dist $(EXT)/python
	rm -rf $(E2E)/node_modules $(E2E)/.run $(E2E)/test-results $(E2E)/screenshots
	rm -rf tests/conformance/node_modules tests/conformance/results
