"""The cocotb side of the exported-core bench: the Verilog of `fpq verilog` (no Amaranth in
the simulation) driven through cocotbext-axi, as a hardware engineer would drive it, by a
:class:`tb_lib.bench.Bench` whose model adapter is ``tb_lib.scoreboard.Record``.

Out of reset the core's register file loads the map's defaults and restarts the queue
manager's time base: clock 0 is the third clock with ``rst`` low (the core's header). The
AXI agents clock on their own (a bus access or a wait runs no Python per clock), so the
bench's clock is read from the simulation time. A port agent samples each rising edge as
cocotbext-axi does (the values of the clock that edge ends): a transfer is a clock with
``tvalid`` and ``tready`` high; the model gets each accepted departure, then each accepted
arrival, at that clock, and every verdict (``tdata``, and ``tuser`` in a stream) is compared
with the model's, in order.

Script items: ``("reset",)`` (five clocks); ``("identity",)`` (ID and BUILD; a write of part
of a word answers SLVERR and writes nothing); ``("configure", config)`` (``fpq config``'s
bus writes, ``fpq.config_export.bus_writes``, then STATUS until the commit is done, no error
bit; the model configured at that clock); ``("wipe_done",)`` (STATUS polled until BUSY is
low) and ``("status",)`` (read once), both kept; ``("stream", events, start, seed,
arrival_gap, departure_gap, backpressure)`` (from clock ``start``, ``AxiStreamSource``\s
with seeded idle clocks, an ``AxiStreamSink`` with seeded back-pressure; every event
accepted, no verdict more than arrivals); ``("bursts", [(start, [(flow, length, ecn),
...]), ...])`` (back-to-back arrivals from each burst's clock, the sink always ready);
``("counters",)`` (the counters over the bus equal the model's)."""

import random

from cocotb.triggers import ClockCycles, RisingEdge, Timer
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

from tb_lib.bench import Bench
from tb_lib.scoreboard import Record
from tb_lib.sim_cocotb import PERIOD_NS, bench_test

#: The clocks with rst low before clock 0 (the register file's first clock, its restart's).
CLOCK0_AFTER_RESET = 2
_BUSY = 1 << STATUS_BITS["BUSY"]
_ACTION = dict(VERDICT)["action"]


def _pauses(seed, busy):
    """A seeded pause generator: True (pause) in a fraction ``busy`` of the clocks."""
    rnd = random.Random(seed)
    while True:
        yield rnd.random() < busy


def _frame(layout, **fields):
    return AxiStreamFrame(pack(layout, fields).to_bytes(tdata_width(layout) // 8, "little"))


class _Accepts:
    """The port agent of the input streams: each transfer (``tvalid`` and ``tready`` at an
    edge) given to the model at its clock, the departures (``departures``, in order) first;
    ``expected`` the verdict words of the arrivals accepted."""

    idle = False

    def __init__(self, tb, departures=()):
        self.tb, self.departures = tb, departures
        dut = tb.sim.dut
        self.a_valid, self.a_ready = dut.s_axis_arrival_tvalid, dut.s_axis_arrival_tready
        self.a_data = dut.s_axis_arrival_tdata
        self.d_valid, self.d_ready = dut.s_axis_departure_tvalid, dut.s_axis_departure_tready
        self.expected = []
        self.departed = 0

    def drive(self):
        pass

    def sample(self):
        ts, rec = self.tb.clock, self.tb.rec
        if self.departures and self.d_valid.value and self.d_ready.value:
            rec.depart(ts, self.departures[self.departed].length)
            self.departed += 1
        if self.a_valid.value and self.a_ready.value:
            a = unpack(ARRIVAL, self.a_data.value.to_unsigned())
            self.expected.append(rec.arrive(ts, a["flow"], a["length"], a["ecn"]))


class CoreBench(Bench):
    INPUTS = ("s_axis_arrival_tvalid", "s_axis_departure_tvalid", "m_axis_verdict_tready")

    def __init__(self, sim, plan):
        super().__init__(sim, plan)
        self.build = plan["build"]
        self.regs = {r.name: r for r in registers(self.build)}
        self.released = None          # sim time (ns) of the edge after which rst went low
        self.rec = Record(Config(build=self.build), self.cov)
        self.axil = None
        self.verdicts = 0
        self.status = []              # STATUS as the wipe_done and status items read it
        self.counters = None

    @property
    def clock(self):
        """The queue manager's clock that the last rising edge ended (read at an edge)."""
        edges = round((get_sim_time("ns") - self.released) / PERIOD_NS)
        return edges - 1 - CLOCK0_AFTER_RESET

    def bus(self, prefix):
        return AxiStreamBus.from_prefix(self.sim.dut, prefix)

    # ---- AXI4-Lite -----------------------------------------------------------------------
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

    async def status_when_done(self):
        """STATUS, polled until BUSY is low."""
        while True:
            status = await self.read_reg("status")
            if not status & _BUSY:
                return status

    # ---- script items --------------------------------------------------------------------
    async def do_reset(self):
        dut = self.sim.dut
        if self.axil is None:
            self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        dut.rst.value = 1
        await ClockCycles(dut.clk, 5)
        dut.rst.value = 0
        self.released = get_sim_time("ns")

    async def do_identity(self):
        got_id, got_build = await self.read_reg("id"), await self.read_reg("build")
        if (got_id, got_build) != (ID_VALUE, build_word(self.build)):
            raise AssertionError(f"ID/BUILD {got_id:#x}/{got_build:#x}, want "
                                 f"{ID_VALUE:#x}/{build_word(self.build):#x}")
        v_max = self.regs["v_max"]
        before = await self.read_reg("v_max")
        resp = await self.axil.write(v_max.offset, (before ^ 1).to_bytes(2, "little"))
        if resp.resp != 2 or await self.read_reg("v_max") != before:
            raise AssertionError(f"partial write to v_max: BRESP {int(resp.resp)} (want 2, "
                                 f"SLVERR) and v_max now {await self.read_reg('v_max')} "
                                 f"(was {before})")

    async def do_configure(self, config):
        for w in bus_writes(config):
            await self.write(w.address, w.value)
        status = await self.status_when_done()
        if status:
            raise AssertionError(f"STATUS {status:#x} after the commit, want 0")
        # the commit applied at or before the clock STATUS said so
        self.rec.configure(config, self.clock)

    async def do_wipe_done(self):
        self.status.append(await self.status_when_done())

    async def do_status(self):
        self.status.append(await self.read_reg("status"))

    async def do_stream(self, events, start, seed, arrival_gap, departure_gap, backpressure):
        dut = self.sim.dut
        await self.wait_until(start)
        await RisingEdge(dut.clk)
        arr_src = AxiStreamSource(self.bus("s_axis_arrival"), dut.clk, dut.rst)
        dep_src = AxiStreamSource(self.bus("s_axis_departure"), dut.clk, dut.rst)
        sink = AxiStreamSink(self.bus("m_axis_verdict"), dut.clk, dut.rst)
        arr_src.set_pause_generator(_pauses(seed, arrival_gap))
        dep_src.set_pause_generator(_pauses(seed + 1, departure_gap))
        sink.set_pause_generator(_pauses(seed + 2, backpressure))
        arrivals = [e for e in events if isinstance(e, Arrival)]
        departures = [e for e in events if isinstance(e, Departure)]
        for a in arrivals:
            await arr_src.send(_frame(ARRIVAL, flow=a.flow, length=a.length, ecn=a.ecn))
        for d in departures:
            await dep_src.send(_frame(DEPARTURE, length=d.length))
        accepts = _Accepts(self, departures)
        self.agents.append(accepts)
        await self.check_verdicts(sink, accepts.expected, len(arrivals), tuser=True)
        while not dep_src.idle():
            await self.tick()
        await self.ticks(4)
        taken = {"arrival": len(accepts.expected), "departure": accepts.departed}
        if taken != {"arrival": len(arrivals), "departure": len(departures)}:
            raise AssertionError(f"accepted {taken}, sent {len(arrivals)} arrivals and "
                                 f"{len(departures)} departures")
        await self.ticks(8)
        if not sink.empty():
            raise AssertionError("more verdicts than arrivals")

    async def do_bursts(self, bursts):
        dut = self.sim.dut
        arr_src = AxiStreamSource(self.bus("s_axis_arrival"), dut.clk, dut.rst)
        sink = AxiStreamSink(self.bus("m_axis_verdict"), dut.clk, dut.rst)
        for start, arrivals in bursts:
            await self.wait_until(start)
            accepts = _Accepts(self)
            self.agents.append(accepts)
            for flow, length, ecn in arrivals:
                await arr_src.send(_frame(ARRIVAL, flow=flow, length=length, ecn=ecn))
            await self.check_verdicts(sink, accepts.expected, len(arrivals))
            self.agents.remove(accepts)

    async def do_counters(self):
        counters = {name: await self.read_reg(name) for name in COUNTERS}
        if counters != self.rec.model.counters:
            raise AssertionError(f"counters over AXI4-Lite: RTL {counters} != model "
                                 f"{self.rec.model.counters}")
        self.counters = counters

    # ---- helpers -------------------------------------------------------------------------
    async def wait_until(self, clock):
        """Past ``clock`` with no Python in the loop (the first clear and sample the reset's
        defaults scheduled: the engines keep an event already scheduled)."""
        skip = clock - self.clock
        if skip > 0:
            await Timer(skip * PERIOD_NS, unit="ns")

    async def check_verdicts(self, sink, expected, n, tuser=False):
        """Clock until ``n`` verdicts left the core, each equal to the model's word (and its
        ``tuser`` the action, with ``tuser``)."""
        first = self.verdicts
        while self.verdicts < first + n:
            await self.tick()
            while not sink.empty() and self.verdicts < first + n:
                self.check_verdict(sink.recv_nowait(), expected, self.verdicts - first, tuser)
                self.verdicts += 1

    def check_verdict(self, frame, expected, i, tuser):
        word = int.from_bytes(bytes(frame.tdata), "little")
        k = self.verdicts
        if word >> VERDICT.size:
            raise AssertionError(f"verdict {k}: tdata pad bits set: {word:#x}")
        if i >= len(expected):
            raise AssertionError(f"verdict {k} before its arrival was accepted")
        if word != expected[i]:
            raise AssertionError(f"verdict {k}: RTL {unpack(VERDICT, word)} != model "
                                 f"{unpack(VERDICT, expected[i])}")
        if tuser:
            want = (word >> _ACTION.offset) & 3
            # one beat per frame: cocotbext-axi gives its tuser as one value
            got = frame.tuser if isinstance(frame.tuser, int) else frame.tuser[0]
            if got != want:
                raise AssertionError(f"verdict {k}: tuser {got} != action {want}")

    async def finish(self):
        # the clocks since clock 0, from the simulation time (the AXI agents clock on
        # their own, unseen by the bench's count)
        self.cycle = self.clock

    def extra_result(self):
        return {"verdicts": self.verdicts, "clocks": self.clock, "counters": self.counters,
                "status": tuple(self.status)}


run_plan = bench_test(CoreBench, "run_plan")
