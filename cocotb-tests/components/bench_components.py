"""cocotb benches of single RTL blocks (``components_top.Components``) against their golden
models, imported from ``fpq``: one input per clock, outputs compared ``LATENCY`` clocks later.
Each test reads its plan (``tb_lib.runner``) and stores checked counts."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from fpq import Config
from fpq.bitfields import pack
from fpq.flow_hash import FlowHash as HashModel, reduce_index
from fpq.random_source import XorShift128
from fpq.drop_probability import probability
from fpq.formats import QAVG, RATE, FLOW_COUNT_BITS

from fpq_hdl.flow_hash import FlowHash
from fpq_hdl.drop_probability import DropProbability
from fpq_hdl.layouts import config_layout

from tb_lib.runner import load_plan, save_result

_results = {}


async def _start(dut, config):
    Clock(dut.clk, 10, unit="ns", impl="gpi").start()
    dut.rst.value = 1
    dut.config.value = pack(config_layout(config.build), config.registers())
    for s in ("rng__step", "rng__load", "prob__table_we", "prob__table_bank"):
        getattr(dut, s).value = 0
    edge = RisingEdge(dut.clk)
    await edge
    await edge
    dut.rst.value = 0
    await edge
    return edge


def _store(name, checked):
    _results[name] = checked
    save_result({"arrivals": 0, "checked": dict(_results), "coverage": {}, "cycles": 0})


@cocotb.test()
async def flow_hash(dut):
    """Random flows (and the all-zero and all-one flows) every clock; the hash
    ``HASH_LATENCY`` clocks later equals the model's (``fpq.flow_hash.FlowHash``) and the index
    ``LATENCY`` clocks later ``reduce_index(hash, v_max)``."""
    plan = load_plan()
    rnd = random.Random(plan["seed"])
    checked = 0
    for key, v_max in plan["hash_cases"]:
        config = Config(build=plan["build"], hash_key=key, v_max=v_max)
        edge = await _start(dut, config)
        model = HashModel.of(config)
        flows = [0, (1 << 104) - 1] + [rnd.getrandbits(104) for _ in range(plan["n"])]
        lat, hlat = FlowHash.LATENCY, FlowHash.HASH_LATENCY
        got, got_h = [], []
        for k in range(len(flows) + lat):
            if k < len(flows):
                dut.hash__flow.value = flows[k]
            await edge
            if k >= lat:
                got.append(dut.hash__index.value.to_unsigned())
            if hlat <= k < len(flows) + hlat:
                got_h.append(dut.hash__hash.value.to_unsigned())
        for i, (f, g, gh) in enumerate(zip(flows, got, got_h)):
            h = model(f)
            want = reduce_index(h, v_max)
            assert (gh, g) == (h, want), (f"flow {i} {f:#x}: RTL hash {gh:#x} index {g} != "
                                          f"model {h:#x} {want} (v_max {v_max})")
        checked += len(flows)
    _store("flow_hash", checked)


@cocotb.test()
async def random_source(dut):
    """Random step pattern and seed loads, a load with and without a step in its clock; the
    number the block offers in every clock equals the model's next number:
    ``XorShift128.next()`` when it is stepped, a copy's when it is not (a load makes its
    clock's number the seed's first one, and a step in that clock consumes it). An all-zero
    seed (which the register map refuses) loads ``w = 1`` as the model's, with or without a
    step in its clock, with the documented exception of the number in its own clock, which
    is 0."""
    import copy
    plan = load_plan()
    rnd = random.Random(plan["seed"] + 1)
    config = Config(build=plan["build"])
    edge = await _start(dut, config)
    model = XorShift128(1 << 96)             # reset state: x = y = z = 0, w = 1
    checked = loads = 0
    for k in range(plan["n"]):
        r = rnd.random()
        load = r < 0.02
        step = rnd.random() < 0.6
        zero = False
        if load:
            zero = rnd.random() < 0.2
            seed = 0 if zero else rnd.getrandbits(128)
            dut.rng__seed.value = seed
            model = XorShift128(seed)
            loads += 1
        dut.rng__load.value = int(load)
        dut.rng__step.value = int(step)
        await edge
        got = dut.rng__value.value.to_unsigned()
        want = model.next() if step else copy.copy(model).next()
        want = 0 if zero else want
        assert got == want, (f"clock {k} (step {step}, load {load}): RTL {got:#x} != model "
                             f"{want:#x}")
        checked += 1
    assert loads > 10
    _store("random_source", checked)


@cocotb.test()
async def drop_probability(dut):
    """Every mode and RED region, random r(N) words over the whole RATE range; ``n_raw`` with
    ``n_over`` (``n_raw > n_cap``, as the caller forms it); n ``N_LATENCY`` clocks after
    n_raw and p (with ``prob_zero``) ``LATENCY`` clocks after it equal the model's."""
    plan = load_plan()
    build = plan["build"]
    rnd = random.Random(plan["seed"] + 2)
    checked = 0
    for case in plan["prob_cases"]:
        config = Config(build=build, **case)
        regs = config.registers()
        edge = await _start(dut, config)
        table = [RATE.pack(rnd.getrandbits(RATE.mant_bits), rnd.randrange(64))
                 for _ in range(build.table_depth)]
        table[:4] = [0, RATE.pack(0xFFFF, 0), RATE.pack(0x8000, 63), RATE.pack(1, 0)]
        dut.prob__table_we.value = 1
        for i, w in enumerate(table):
            dut.prob__table_addr.value = i
            dut.prob__table_data.value = w
            await edge
        dut.prob__table_we.value = 0
        dut.prob__table_bank.value = 1
        th = [regs["red_min_th"], regs["red_max_th"], 2 * regs["red_max_th"]]
        inputs = []
        for _ in range(plan["n"]):
            n = rnd.randrange(1 << FLOW_COUNT_BITS) if rnd.random() < 0.2 else \
                rnd.randrange(build.table_depth)
            r = rnd.random()
            if r < 0.3:
                avg = max(0, min(QAVG.max_raw, rnd.choice(th) + rnd.randint(-3, 3)))
            elif r < 0.6:
                avg = rnd.randrange(4 * regs["red_max_th"] + 1)
            else:
                avg = rnd.randrange(QAVG.max_raw + 1)
            inputs.append((n, avg))
        L, D, LN = DropProbability.LATENCY, DropProbability.AVG_DELAY, DropProbability.N_LATENCY
        got_n, got_p = [], []
        for k in range(len(inputs) + L + 1):
            if k < len(inputs):
                dut.prob__n_raw.value = inputs[k][0]
                dut.prob__n_over.value = int(inputs[k][0] > regs["n_cap"])
            if 0 <= k - D < len(inputs):
                dut.prob__avg.value = inputs[k - D][1]
            await edge
            if 0 <= k - LN < len(inputs):
                got_n.append(dut.prob__n.value.to_unsigned())
            if L <= k < len(inputs) + L:
                got_p.append((dut.prob__prob.value.to_unsigned(),
                              int(dut.prob__prob_zero.value)))
        for i, ((n, avg), gn, (gp, gz)) in enumerate(zip(inputs, got_n, got_p)):
            nc = min(n, regs["n_cap"])
            want = probability(regs["mode"], avg, table[nc], regs)
            assert (gn, gp, gz) == (nc, want, int(want == 0)), (
                f"{case} input {i} (n_raw {n}, avg {avg}): RTL n {gn} p {gp} p_zero {gz} != "
                f"model n {nc} p {want} p_zero {int(want == 0)}")

        checked += len(inputs)
    _store("drop_probability", checked)
