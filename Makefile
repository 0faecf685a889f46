# p4cache — top-level targets.
#   make run    install what is missing, then run the main job on the default target (softnic):
#               p4cache up, a skewed memcached workload, what the switch did, coherence verdict,
#               GETs answered per second; TARGET=xdp (PLACEMENT=host) on the kernel engine
#   make test   install what is missing, then run every test (the PTF suite on TARGET and on the
#               xdp engine, then pytest)
#   make ptf    the PTF packet tests on veth pairs against TARGET (docs/ptf.md)
#   make setup  only install (Debian packages via apt-get, Python virtualenv in .venv with pinned versions)
#               and build build/bin/p4cache-lincheck (make lincheck) and p4cache-loadgen (make loadgen)
#   make lint   ruff over the Python code
#   make mutate mutation testing of the engine (exprgen, gen_deparse, tables); not part of `make test`
#   make clean  remove build output (keeps .venv; `make distclean` removes it too)

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
TARGET ?= softnic
BUILD_DIR ?= build
PYTEST_ARGS ?=

# Debian packages the project needs, as "command:package" pairs; installed only when the command is missing.
APT_NEEDS := cpp:cpp ip:iproute2 ping:iputils-ping ethtool:ethtool memcached:memcached go:golang-go \
  mnexec:mininet memccat:libmemcached-tools nft:nftables clang:clang bpftool:bpftool \
  xdp-loader:xdp-tools
# Files the xdp engine needs that no command stands for, as "file:package" pairs.
APT_FILES := /usr/include/bpf/bpf_helpers.h:libbpf-dev /usr/include/x86_64-linux-gnu/asm/types.h:linux-libc-dev

# Go for tools/lincheck: `go` on PATH, else the upstream install in /usr/local/go (often not on
# PATH), else Debian's golang-go (installed by `apt`). Looked up when a recipe runs, after `apt`.
GO_LOCAL := /usr/local/go/bin/go
FIND_GO = $$(command -v go 2>/dev/null || echo $(GO_LOCAL))

.PHONY: all run test setup apt venv lincheck loadgen lint mutate fuzz clean distclean

all: test

setup: apt venv lincheck loadgen

apt:
	@missing=""; for pair in $(APT_NEEDS); do cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 || { [ $$cmd = go ] && [ -x $(GO_LOCAL) ]; } || \
	  missing="$$missing $$pkg"; done; \
	for pair in $(APT_FILES); do f=$${pair%%:*}; pkg=$${pair##*:}; \
	  case "$$f" in */x86_64-linux-gnu/*) [ "$$(uname -m)" = x86_64 ] || continue;; esac; \
	  [ -e "$$f" ] || missing="$$missing $$pkg"; done; \
	python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3 python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "setup: Debian packages present"; fi

# Every role's extra (docs/packaging.md) and the dev tools: make run and make test need them all.
$(VENV)/.installed: pyproject.toml setup.py
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[all,dev]'
	@touch $@

venv: $(VENV)/.installed

# The linearizability checker (tools/lincheck, docs/lincheck.md). Its one dependency, porcupine, comes
# through the Go module proxy only (no `direct` fallback), pinned by tools/lincheck/go.sum;
# GOTOOLCHAIN=local: never fetch a Go toolchain.
LINCHECK := $(BUILD_DIR)/bin/p4cache-lincheck
LINCHECK_GOPROXY ?= https://proxy.golang.org

lincheck: $(LINCHECK)

$(LINCHECK): $(wildcard tools/lincheck/*.go) tools/lincheck/go.mod tools/lincheck/go.sum | apt
	@mkdir -p $(@D)
	cd tools/lincheck && GOTOOLCHAIN=local GOFLAGS=-mod=readonly GOPROXY=$(LINCHECK_GOPROXY) $(FIND_GO) build -buildvcs=false \
	  -trimpath -o $(abspath $@) .

# The open-loop memcached load generator (tools/loadgen, docs/loadgen.md): standard library only.
LOADGEN := $(BUILD_DIR)/bin/p4cache-loadgen

loadgen: $(LOADGEN)

$(LOADGEN): $(wildcard tools/loadgen/*.go) tools/loadgen/go.mod | apt
	@mkdir -p $(@D)
	cd tools/loadgen && GOTOOLCHAIN=local GOFLAGS=-mod=readonly $(FIND_GO) build -buildvcs=false \
	  -trimpath -o $(abspath $@) .

# The PTF suite runs first (on TARGET, then on the xdp engine, which run.sh skips with the reason
# where the kernel cannot load XDP) so that pytest's summary ends the output; any failing fails.
PTF_TARGETS := $(TARGET) $(if $(filter xdp,$(TARGET)),,xdp)
test: setup
	@ptf_rc=0; for t in $(PTF_TARGETS); do \
	  PY="$(abspath $(PY))" ptf-tests/run.sh $$t || { ptf_rc=$$?; \
	  echo "make test: the PTF suite FAILED on $$t (exit $$ptf_rc), see above"; }; done; \
	if [ $$ptf_rc -ne 0 ]; then echo "make test: running pytest anyway"; fi; \
	$(PY) -m pytest $(PYTEST_ARGS); py_rc=$$?; \
	[ $$ptf_rc -eq 0 ] && [ $$py_rc -eq 0 ]

# PTF packet tests (docs/ptf.md): veth pairs, the switch of TARGET (softnic; bmv2 needs
# p4c-bm2-ss and simple_switch_grpc on PATH, else it is skipped), ptf over ptf-tests/tests.
# PTF_ARGS picks tests or groups, e.g. make ptf PTF_ARGS="hits updates.StaleUpdateIgnored".
PTF_ARGS ?=
.PHONY: ptf
ptf: setup
	PY="$(abspath $(PY))" ptf-tests/run.sh $(TARGET) $(PTF_ARGS)

lint: venv
	$(VENV)/bin/ruff check softnic bench control-plane host ptf-tests tools

# mutmut (config in pyproject.toml [tool.mutmut]) starts from a fresh ./mutants every time, so the
# score is never a stale cache; it keeps to MUTATE_CHILDREN processes (the machine has 2 cores).
MUTATE_CHILDREN ?= 2

mutate: venv
	rm -rf mutants
	@echo "mutmut: running (engine modules 10-15 minutes on 2 cores, plus the front-end passes), output in mutants.log"
	$(VENV)/bin/mutmut run --max-children $(MUTATE_CHILDREN) > mutants.log 2>&1 || \
	  { tail -c 4000 mutants.log | tr '\r' '\n' | tail -40; exit 1; }
	@mv mutants.log mutants/run.log
	$(PY) tools/mutation_score.py
	@echo "survivors: $(VENV)/bin/mutmut results; one diff: $(VENV)/bin/mutmut show NAME"

# Bad-input fuzz (docs/fuzz.md): N random and mutated datagrams checked against the reference
# model of ptf-tests/property; SEED picks another fixed sequence. `make test` runs 5000 of them.
fuzz: N ?= 100000
fuzz: SEED ?= 1123
fuzz: venv
	P4CACHE_FUZZ_N=$(N) P4CACHE_FUZZ_SEED=$(SEED) $(PY) -m pytest -q -s -p no:cacheprovider \
	  ptf-tests/property/test_fuzz_datagrams.py

# make run: p4cache up on TARGET (default topology topo/topology.json), a data set, a skewed
# workload from both clients, the report, the rates (p4cache-loadgen), teardown. KEEP=1 leaves
# the system up (p4cache down). TARGET=xdp PLACEMENT=host: the program on each server's own
# interface instead of the switch (docs/deployment.md).
KEEP ?=
PLACEMENT ?= switch
run: setup
	$(VENV)/bin/p4cache run --target $(TARGET) --placement $(PLACEMENT) $(if $(KEEP),--keep)

clean:
	rm -rf $(BUILD_DIR) .setuptools-build .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -not -path './$(VENV)/*' -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
