"""cocotb benches of single RTL blocks (``components_top.Components``) against their golden
models, imported from ``fpq``: one input per clock, outputs compared ``LATENCY`` clocks later.
Each test reads its plan (``tb_lib.runner``) and stores checked counts."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from fpq import Config
from fpq.flow_hash import ToeplitzHash, reduce_index
from fpq.random_source import XorShift128
from fpq.drop_probability import probability
from fpq.formats import QAVG, RATE

from fpq_hdl.flow_hash import FlowHash
from fpq_hdl.drop_probability import DropProbability
from fpq_hdl.layouts import config_layout

from tb_lib.runner import load_plan, save_result
from tb_lib.streams import pack

_results = {}


async def _start(dut, config):
    Clock(dut.clk, 10, unit="ns").start()
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
    """Random flows (and all-zero / all-one keys of flows) every clock; the index 4 clocks
    later equals ``reduce_index(ToeplitzHash(key)(flow), v_max)``."""
    plan = load_plan()
    rnd = random.Random(plan["seed"])
    checked = 0
    for key, v_max in plan["hash_cases"]:
        config = Config(build=plan["build"], hash_key=key, v_max=v_max)
        edge = await _start(dut, config)
        model = ToeplitzHash(config.registers()["hash_key"])
        flows = [0, (1 << 104) - 1] + [rnd.getrandbits(104) for _ in range(plan["n"])]
        lat = FlowHash.LATENCY
        got = []
        for k in range(len(flows) + lat):
            if k < len(flows):
                dut.hash__flow.value = flows[k]
            await edge
            if k >= lat:
                got.append(dut.hash__index.value.to_unsigned())
        for i, (f, g) in enumerate(zip(flows, got)):
            want = reduce_index(model(f), v_max)
            assert g == want, f"flow {i} {f:#x}: RTL index {g} != model {want} (v_max {v_max})"
        checked += len(flows)
    _store("flow_hash", checked)


@cocotb.test()
async def random_source(dut):
    """Random step pattern and seed loads (an all-zero seed too); every number the block
    offers while stepping equals ``XorShift128.next()``."""
    plan = load_plan()
    rnd = random.Random(plan["seed"] + 1)
    config = Config(build=plan["build"])
    edge = await _start(dut, config)
    model = XorShift128(1 << 96)             # reset state: x = y = z = 0, w = 1
    checked = 0
    for k in range(plan["n"]):
        r = rnd.random()
        if r < 0.01:
            seed = 0 if rnd.random() < 0.2 else rnd.getrandbits(128)
            dut.rng__seed.value = seed
            dut.rng__load.value = 1
            dut.rng__step.value = rnd.random() < 0.5     # load has priority
            await edge
            dut.rng__load.value = 0
            model = XorShift128(seed)
            continue
        step = r < 0.7
        dut.rng__step.value = int(step)
        await edge
        if step:
            got = dut.rng__value.value.to_unsigned()
            want = model.next()
            assert got == want, f"step {k}: RTL {got:#x} != model {want:#x}"
            checked += 1
    _store("random_source", checked)


@cocotb.test()
async def drop_probability(dut):
    """Every mode and RED region, random r(N) words over the whole RATE range; n one clock
    after n_raw and p ``LATENCY`` clocks after it equal the model's."""
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
            n = rnd.randrange(1 << 17) if rnd.random() < 0.2 else rnd.randrange(build.table_depth)
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
            if 0 <= k - D < len(inputs):
                dut.prob__avg.value = inputs[k - D][1]
            await edge
            if 0 <= k - LN < len(inputs):
                got_n.append(dut.prob__n.value.to_unsigned())
            if L <= k < len(inputs) + L:
                got_p.append(dut.prob__prob.value.to_unsigned())
        for i, ((n, avg), gn, gp) in enumerate(zip(inputs, got_n, got_p)):
            nc = min(n, regs["n_cap"])
            want = probability(regs["mode"], avg, table[nc], regs)
            assert (gn, gp) == (nc, want), (f"{case} input {i} (n_raw {n}, avg {avg}): RTL "
                                            f"n {gn} p {gp} != model n {nc} p {want}")
        checked += len(inputs)
    _store("drop_probability", checked)
