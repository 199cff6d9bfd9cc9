"""cocotb side of the exported-core bench: the Verilog of `fpq verilog` (no Amaranth in the
simulation) driven through cocotbext-axi, as a hardware engineer would drive it.

Out of reset the core's register file loads the map's defaults and restarts the queue
manager's time base: clock 0 is the third clock with ``rst`` low (the core's header). The
configuration is written over AXI4-Lite, word for word as ``fpq.config_export.bus_writes``
lists them (``fpq config``), STATUS polled until the commit is done, ID and BUILD read
back. The arrival and departure streams then run from ``AxiStreamSource``\\s with seeded
random idle clocks, the verdicts go to an ``AxiStreamSink`` with seeded random back-pressure.
A monitor samples each rising edge as cocotbext-axi does (the values of the clock that
edge ends): a transfer is a clock with ``tvalid`` and ``tready`` high, and the golden model
(``fpq.QueueManager`` through ``tb_lib.scoreboard.Record``) gets each accepted departure,
then each accepted arrival, at that clock, counted from clock 0. Every verdict (``tdata``
and ``tuser``) is compared with the model's, in order; the counters are read over the bus
at the end and compared with the model's."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer, ClockCycles
from cocotb.utils import get_sim_time

from cocotbext.axi import (AxiStreamBus, AxiStreamSource, AxiStreamSink, AxiStreamFrame,
                           AxiLiteBus, AxiLiteMaster)

from fpq import Config, Arrival, Departure
from fpq.bitfields import pack, unpack
from fpq.config_export import bus_writes
from fpq.regmap import registers, STATUS_BITS, ID_VALUE, build_word
from fpq.queue_manager import COUNTERS
from fpq_hdl.layouts import ARRIVAL, DEPARTURE, VERDICT
from fpq_hdl.axi_core import tdata_width

from tb_lib.runner import load_plan, save_result
from tb_lib.scoreboard import Record, Coverage

PERIOD_NS = 10
#: The clocks with rst low before clock 0 (the register file's first clock, its restart's).
CLOCK0_AFTER_RESET = 2


def _pauses(seed, busy):
    """A seeded pause generator: True (pause) in a fraction ``busy`` of the clocks."""
    rnd = random.Random(seed)
    while True:
        yield rnd.random() < busy


class CoreBench:
    def __init__(self, dut, plan):
        self.dut = dut
        self.plan = plan
        self.build = plan["config"].build
        self.regs = {r.name: r for r in registers(self.build)}
        self.released = None          # sim time (ns) of the edge after which rst went low
        self.cov = Coverage()

    async def reset(self):
        dut = self.dut
        dut.rst.value = 1
        await ClockCycles(dut.clk, 5)
        dut.rst.value = 0
        self.released = get_sim_time("ns")

    @property
    def clock(self):
        """The queue manager's clock that the last rising edge ended (read at an edge; from
        the simulation time, so that no coroutine wakes in every clock)."""
        edges = round((get_sim_time("ns") - self.released) / PERIOD_NS)
        return edges - 1 - CLOCK0_AFTER_RESET

    async def write(self, address, value):
        resp = await self.axil.write(address, (value & 0xFFFFFFFF).to_bytes(4, "little"))
        if resp.resp != 0:
            raise AssertionError(f"write {value:#x} to {address:#x}: BRESP {int(resp.resp)}")

    async def read(self, address):
        resp = await self.axil.read(address, 4)
        if resp.resp != 0:
            raise AssertionError(f"read of {address:#x}: RRESP {int(resp.resp)}")
        return int.from_bytes(resp.data, "little")

    async def read_reg(self, name):
        r = self.regs[name]
        value = 0
        for w in range(r.words):
            value |= await self.read(r.offset + 4 * w) << (32 * w)
        return value

    async def configure(self, config):
        """``fpq config``'s bus writes, then STATUS until the commit is done; returns the
        clock at which STATUS said so (the commit applied at or before it)."""
        for w in bus_writes(config):
            await self.write(w.address, w.value)
        while True:
            status = await self.read_reg("status")
            if not status & (1 << STATUS_BITS["BUSY"]):
                break
        if status:
            raise AssertionError(f"STATUS {status:#x} after the commit, want 0")
        return self.clock

    async def start(self):
        """The clock, the streams idle and the sink not ready, the AXI4-Lite master, reset."""
        dut = self.dut
        Clock(dut.clk, PERIOD_NS, unit="ns").start()
        dut.s_axis_arrival_tvalid.value = 0
        dut.s_axis_departure_tvalid.value = 0
        dut.m_axis_verdict_tready.value = 0
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        await self.reset()

    async def run(self):
        dut, plan = self.dut, self.plan
        await self.start()
        got_id, got_build = await self.read_reg("id"), await self.read_reg("build")
        if (got_id, got_build) != (ID_VALUE, build_word(self.build)):
            raise AssertionError(f"ID/BUILD {got_id:#x}/{got_build:#x}, want "
                                 f"{ID_VALUE:#x}/{build_word(self.build):#x}")
        # a write of part of a word (wstrb 4'b0011) answers SLVERR and writes nothing
        v_max = self.regs["v_max"]
        before = await self.read_reg("v_max")
        resp = await self.axil.write(v_max.offset, (before ^ 1).to_bytes(2, "little"))
        if resp.resp != 2 or await self.read_reg("v_max") != before:
            raise AssertionError(f"partial write to v_max: BRESP {int(resp.resp)} (want 2, "
                                 f"SLVERR) and v_max now {await self.read_reg('v_max')} "
                                 f"(was {before})")
        config = plan["config"]
        rec = Record(Config(build=self.build), self.cov)
        rec.configure(config, await self.configure(config))
        # past the first clear and sample the reset's defaults scheduled (the engines keep
        # an event already scheduled), with no Python in the loop
        skip = plan["start"] - self.clock
        if skip > 0:
            await Timer(skip * PERIOD_NS, unit="ns")
        await RisingEdge(dut.clk)

        arr_src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_arrival"), dut.clk,
                                  dut.rst)
        dep_src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_departure"), dut.clk,
                                  dut.rst)
        sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_verdict"), dut.clk, dut.rst)
        seed = plan["seed"]
        arr_src.set_pause_generator(_pauses(seed, plan["arrival_gap"]))
        dep_src.set_pause_generator(_pauses(seed + 1, plan["departure_gap"]))
        sink.set_pause_generator(_pauses(seed + 2, plan["backpressure"]))
        arrivals = [e for e in plan["events"] if isinstance(e, Arrival)]
        departures = [e for e in plan["events"] if isinstance(e, Departure)]
        abytes, dbytes = tdata_width(ARRIVAL) // 8, tdata_width(DEPARTURE) // 8
        for a in arrivals:
            word = pack(ARRIVAL, dict(flow=a.flow, length=a.length, ecn=a.ecn))
            await arr_src.send(AxiStreamFrame(word.to_bytes(abytes, "little")))
        for d in departures:
            word = pack(DEPARTURE, dict(length=d.length))
            await dep_src.send(AxiStreamFrame(word.to_bytes(dbytes, "little")))

        expected = []
        taken = {"arrival": 0, "departure": 0}
        a_fields = {n: (f.offset, f.width) for n, f in ARRIVAL}

        def field(word, name):
            off, width = a_fields[name]
            return (word >> off) & ((1 << width) - 1)

        async def monitor():
            while True:
                await RisingEdge(dut.clk)
                ts = self.clock
                if dut.s_axis_departure_tvalid.value and dut.s_axis_departure_tready.value:
                    d = departures[taken["departure"]]
                    taken["departure"] += 1
                    rec.depart(ts, d.length)
                if dut.s_axis_arrival_tvalid.value and dut.s_axis_arrival_tready.value:
                    word = dut.s_axis_arrival_tdata.value.to_unsigned()
                    expected.append(rec.arrive(ts, field(word, "flow"), field(word, "length"),
                                               field(word, "ecn")))
                    taken["arrival"] += 1

        cocotb.start_soon(monitor())
        action = {n: f for n, f in VERDICT}["action"]
        for i in range(len(arrivals)):
            frame = await sink.recv()
            word = int.from_bytes(bytes(frame.tdata), "little")
            if word >> VERDICT.size:
                raise AssertionError(f"verdict {i}: tdata pad bits set: {word:#x}")
            if i >= len(expected):
                raise AssertionError(f"verdict {i} before its arrival was accepted")
            if word != expected[i]:
                raise AssertionError(f"verdict {i}: RTL {unpack(VERDICT, word)} != model "
                                     f"{unpack(VERDICT, expected[i])}")
            want_user = (word >> action.offset) & 3
            # one beat per frame: cocotbext-axi gives its tuser as one value
            tuser = frame.tuser if isinstance(frame.tuser, int) else frame.tuser[0]
            if tuser != want_user:
                raise AssertionError(f"verdict {i}: tuser {tuser} != action "
                                     f"{want_user}")
        await dep_src.wait()
        await ClockCycles(dut.clk, 4)
        if taken["departure"] != len(departures) or taken["arrival"] != len(arrivals):
            raise AssertionError(f"accepted {taken}, sent {len(arrivals)} arrivals and "
                                 f"{len(departures)} departures")
        await ClockCycles(dut.clk, 8)
        if not sink.empty():
            raise AssertionError("more verdicts than arrivals")
        counters = {name: await self.read_reg(name) for name in COUNTERS}
        if counters != rec.model.counters:
            raise AssertionError(f"counters over AXI4-Lite: RTL {counters} != model "
                                 f"{rec.model.counters}")
        return {"verdicts": len(expected), "clocks": self.clock, "counters": counters,
                "coverage": self.cov.bins}


    async def run_power_on(self):
        """Out of reset with no bus write: STATUS (once the wipe is over) says the tables
        hold the defaults, then bursts of back-to-back arrivals (no departure, the sink
        always ready), each from its asked clock, against the golden model of
        ``Config(build)``, the configuration the core starts with. The monitor runs only during a burst: between bursts the
        simulation skips the idle clocks with no Python in the loop."""
        dut, plan = self.dut, self.plan
        await self.start()
        while True:                   # BUSY: the vector's wipe out of reset
            status0 = await self.read_reg("status")
            if not status0 & (1 << STATUS_BITS["BUSY"]):
                break
        rec = Record(Config(build=self.build), self.cov)
        arr_src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_arrival"), dut.clk,
                                  dut.rst)
        sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_verdict"), dut.clk, dut.rst)
        abytes = tdata_width(ARRIVAL) // 8
        a_fields = {n: (f.offset, f.width) for n, f in ARRIVAL}

        def field(word, name):
            off, width = a_fields[name]
            return (word >> off) & ((1 << width) - 1)

        count = 0
        for start, arrivals in plan["bursts"]:
            skip = start - self.clock
            if skip > 0:
                await Timer(skip * PERIOD_NS, unit="ns")
            expected = []

            async def monitor(n):
                while len(expected) < n:
                    await RisingEdge(dut.clk)
                    if dut.s_axis_arrival_tvalid.value and dut.s_axis_arrival_tready.value:
                        word = dut.s_axis_arrival_tdata.value.to_unsigned()
                        expected.append(rec.arrive(self.clock, field(word, "flow"),
                                                   field(word, "length"),
                                                   field(word, "ecn")))

            cocotb.start_soon(monitor(len(arrivals)))
            for flow, length, ecn in arrivals:
                word = pack(ARRIVAL, dict(flow=flow, length=length, ecn=ecn))
                await arr_src.send(AxiStreamFrame(word.to_bytes(abytes, "little")))
            for i in range(len(arrivals)):
                frame = await sink.recv()
                word = int.from_bytes(bytes(frame.tdata), "little")
                if i >= len(expected):
                    raise AssertionError(f"verdict {count + i} before its arrival was "
                                         f"accepted")
                if word != expected[i]:
                    raise AssertionError(f"verdict {count + i}: RTL {unpack(VERDICT, word)} "
                                         f"!= model {unpack(VERDICT, expected[i])}")
            count += len(arrivals)
        status1 = await self.read_reg("status")
        counters = {name: await self.read_reg(name) for name in COUNTERS}
        if counters != rec.model.counters:
            raise AssertionError(f"counters over AXI4-Lite: RTL {counters} != model "
                                 f"{rec.model.counters}")
        return {"verdicts": count, "clocks": self.clock, "counters": counters,
                "status": (status0, status1),
                "coverage": self.cov.bins}


@cocotb.test()
async def run_plan(dut):
    bench = CoreBench(dut, load_plan())
    save_result(await (bench.run_power_on() if bench.plan.get("bursts") else bench.run()))
