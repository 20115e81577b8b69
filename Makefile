# host_bridge build entry points. `make test` and `make run` work from a fresh clone:
# they create .venv and install everything they need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PEERS  := tests/peers/node_modules/.installed

.PHONY: install tools run test lint typecheck unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $@

# Pinned reference MCP servers (server-filesystem, server-everything) that the integration tests run.
$(PEERS): tests/peers/package.json tests/peers/package-lock.json
	cd tests/peers && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Neovim (Debian's package) for the headless test of examples/neovim.lua; skipped where apt-get cannot run.
tools:
	@command -v nvim >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null) \
	      || echo "warning: could not install neovim; its example test will be skipped"; \
	  else echo "note: nvim not installed and apt-get not usable; the Neovim example test will be skipped"; fi; }

install: $(STAMP) $(PEERS)

run: install
	$(BIN)/host-bridge connect --list .

lint: install
	$(BIN)/ruff check host_bridge tests bench

typecheck: install
	$(BIN)/pyright

unit: install
	$(BIN)/pytest tests/unit

test: install tools lint typecheck
	$(BIN)/pytest

bench: install
	$(BIN)/python bench/detect.py
	$(BIN)/python bench/hub.py
	$(BIN)/python bench/sidecar.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache tests/peers/node_modules
