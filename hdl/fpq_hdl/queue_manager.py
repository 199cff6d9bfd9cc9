"""The top: the line-rate FPQ / RED / drop-tail queue manager, one verdict per clock."""

from amaranth import *
from amaranth.lib import wiring, stream, memory, data
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from fpq.config import Build, ConfigError
from fpq.formats import TIME_BITS, QAVG, QPKTS_BITS, QBYTES_BITS, COUNTER_BITS, SEQ_BITS, \
    RATE, DECAY_SHIFT_BITS
from fpq.queue_manager import COUNTERS, ENQUEUE, MARK, DROP_EARLY, DROP_FORCED

from .layouts import (ARRIVAL, DEPARTURE, VERDICT, config_layout, fixed_registers, OPTIMISE,
                      check_optimise)
from .flow_hash import FlowHash
from .flow_counter import FlowCounter
from .drop_probability import DropProbability
from .decision import Decision
from .queue_averager import QueueAverager
from .random_source import RandomSource
from .delay_line import DelayLine
from .block_fifo import BlockFIFO

__all__ = ["QueueManager", "LATENCY", "MIN_AVG_LAG", "MIN_COUNTER_BITS", "FIFO_DEPTH",
           "VERDICT_FIFOS", "OPTIMISE"]

# Pipeline stages, in clocks after the accept (stage 0). See the QueueManager docstring.
_S_HASH = 1                                   # flow key registered, hash starts
_S_SET = _S_HASH + FlowHash.LATENCY           # 5: vector read
_S_N = _S_SET + FlowCounter.LATENCY           # 9: N after the slot (FlowCounter)
_S_P = _S_N - 1                               # 8: N (``n_next``) into DropProbability
_S_AVG = _S_P + DropProbability.AVG_DELAY     # 11: lagged average read
_S_DECIDE = _S_P + DropProbability.LATENCY    # 17: probability ready, early decision
assert _S_P + DropProbability.N_LATENCY == _S_N + 1   # the capped n at stage 10
_S_VERDICT = _S_DECIDE + Decision.LATENCY     # 19: action; verdict into the FIFO
_S_AVG_WRITE = _S_VERDICT + QueueAverager.NEXT_LATENCY  # 22: updated average into the lag line
#: Clocks from an arrival's accept to its verdict at the output (valid, with ready high).
LATENCY = _S_VERDICT + 1
#: Smallest ``Build.avg_lag`` this pipeline supports: arrival k reads the lag line at stage 11,
#: arrival k - avg_lag left its average at stage 22 (in the lag line's pending-write register
#: the clock after, in the RAM from the one after that), i.e. at least avg_lag clocks earlier.
MIN_AVG_LAG = _S_AVG_WRITE + 1 - _S_AVG
#: Fewest bits a statistics counter may count (``QueueManager``'s ``counter_bits``): 2**40
#: events take 3 hours at 100 M events/s.
MIN_COUNTER_BITS = 40
#: Verdict FIFO depth; more than LATENCY + 2 so that credits never throttle a ready sink.
FIFO_DEPTH = 32
assert FIFO_DEPTH > LATENCY + 3
#: Verdict FIFO memories: "distributed" (``SyncFIFO``: asynchronous read, LUT RAM on ECP5;
#: ``LATENCY``) or "block" (``BlockFIFO``: synchronous read, block RAM on iCE40, which
#: has no LUT RAM and would otherwise build the FIFO from flip-flops; ``LATENCY + 1``).
VERDICT_FIFOS = ("distributed", "block")




class QueueManager(wiring.Component):
    """Bit-exact ``fpq.queue_manager.QueueManager``, fully pipelined.

    Arrival descriptors in, verdicts out (with the flow count, lagged average and probability
    used, as telemetry), departures in. One verdict per clock, no bubbles: the same flow on
    every clock is counted once (forwarding in the flow vector), a clear due on every clock
    rides along with the arrival. The arrival port stalls (``ready`` low) only while the
    clearing engine works off a backlog of more than one clear per arrival, during a vector
    wipe, or when the verdict FIFO has no room; none of these changes any verdict, which is a
    pure function of the event sequence (a departure accepted in the same clock as an arrival
    applies first). Departures are always accepted.

    Pipeline (clocks after the accept, one slot per clock; each slot may hold an arrival, a
    clear, a departure, or a wipe):

    ======  ===========================================================================
    0       clear schedule (FlowCounter) (the verdict credit steps a clock after the
            accept, from a register, to keep the accept's fan-out small)
    1-4     Toeplitz hash (2), index ``(h * v_max) >> 32`` (2)        FlowHash
    5-8     vector read (2), old bits and writes with forwarding, N    FlowCounter
    8-10    ``n = min(N, n_cap)`` from N a clock before it is          DropProbability
            registered (``n_next``), r(n) table read (2)
    10-11   lagged average read (arrival k reads the average after k - avg_lag; entry
            k mod avg_lag, from a count of the arrivals that passed the stage)
    11-16   RED regions, select, multiply (2), shift, saturate         DropProbability
    16      random number u (the generator steps once per arrival here, in arrival order)
    17-18   early decision, ECN, hard limits, occupancy                Decision
            (times, lengths and ECN reach stage 17, or 18 with ``optimise="area"``,
            through a RAM delay line, ``DelayLine``)
    19-21   verdict into the FIFO, sequence number, counters; idle      QueueAverager
            cells, decay table,
            decay shift decoded
    22      average update (``avg_next``); written to the lag line a clock later from the
            averager's ``avg`` register, forwarded to a read of the same entry meanwhile
    ======  ===========================================================================

    Latency: ``LATENCY`` = 20 clocks from accept to verdict when the sink is ready (21 with
    ``verdict_fifo="block"``; the instance's ``latency``).
    Reset: the documented reset state (sw/README.md) includes an empty flow vector and a lag
    line of zeros, both memories that keep their contents across a reset; so out of reset the
    flow counter wipes the vector (``busy`` high and the arrival port not ready for the first
    ``build.vec_bits + 3`` clocks: 8195 for the default build, 82 us at 100 MHz); the lag
    line reads as zeros until each entry is written. Departures are accepted meanwhile.
    Back-pressure: verdicts wait in a ``FIFO_DEPTH``-entry FIFO; an arrival is accepted only
    when its verdict has a place (credit count), so no verdict is lost or duplicated.

    Parameters
    ----------
    build : fpq.Build
        Build-time parameters; ``build.avg_lag`` must be at least ``MIN_AVG_LAG``.
    ram_style : str
        ``BlockRAM`` and ``Multiplier`` style ("generic": portable, simulation, Verilog
        export; "ecp5": DP16KD primitives with output registers, MULT18X18D with input and
        output registers).
    verdict_fifo : str
        One of ``VERDICT_FIFOS``: "distributed" (default) or "block" (for FPGAs without LUT
        RAM, such as the iCE40; one clock more latency, same throughput). It also says where
        the RAM delay line of the descriptors' wide fields starts: at stage 1 for LUT RAM
        (16 words), at the ports for block RAM (17 words, 81 flip-flops fewer).
    optimise : str
        One of ``OPTIMISE``: "speed" (default) or "area", where a block has a choice that
        changes no verdict and no clock. "area": the averager's idle-decay shift as a binary
        shifter, the flow counter's clear schedule and the decision's byte limit with their
        adders in front of their compares, the decision's descriptor fields a clock later
        from the delay line, the drop probability's shifts as binary shifters
        (``QueueAverager``, ``FlowCounter``, ``Decision``, ``DropProbability``:
        ``optimise``).
    counter_bits : int
        Bits the statistics counters count, ``MIN_COUNTER_BITS`` .. 64 (default 64); the
        ``counters`` port stays 64 bits wide, its bits above read as 0. Below 64 a counter
        wraps after ``2**counter_bits`` events, which the model's counters never do: for a
        small FPGA at a low clock, where ``2**counter_bits`` clocks are longer than any run
        (the iCEBreaker's 48 bits: 197 days at one event per clock at 16.5 MHz). Each bit less
        saves about 1.5 logic cells per counter on an iCE40, the counter's and the bus read
        multiplexer's (48 bits instead of 64: 167 cells on the iCEBreaker, 2026-11-24).

    Attributes
    ----------
    arrivals : In(stream.Signature(ARRIVAL))
    departures : In(stream.Signature(DEPARTURE))
    verdicts : Out(stream.Signature(VERDICT))
    config : In(config_layout(build))
        Raw configuration registers (``fpq.Config.registers()``); change only while idle.
        The fields of registers the build fixes (``Build.fixed``, kind "fixed" in
        ``fpq.regmap``) are ignored: the build's constants are used.
    load_rng_decide, load_rng_clear, restart, wipe : In(1)
        Strobes: load a generator from its config seed; restart the clear schedule at
        ``next_due = clear_period``; wipe the flow vector (``busy`` meanwhile).
    rekey : In(1)
        Strobe, with ``wipe``, while idle, with the new ``hash_key`` already applied: live
        re-key. N is latched (unless a hold is already armed or running) and, from the next
        arrival on, arrivals earlier than its timestamp + ``rekey_hold`` decide with it while
        the wiped vector refills under the new key (``fpq.QueueManager.configure``). The hold
        is decided at stage 1 and travels with the slot to stage 9; no latency change.
    hold : In(1)
        Accept no arrival (the register file's commit waits for an empty pipeline).
    idle : Out(1)
        No arrival is in the pipeline and none can enter this clock (``hold`` is high or no
        arrival is offered); verdicts may still wait in the FIFO.
    rate_bank, rate_we, rate_addr, rate_data, decay_bank, decay_we, decay_addr, decay_data : In
        Tables (r(N), idle decay): the active bank, and a write port into the other bank.
    counters : Out(7 x 64)
        ``fpq.queue_manager.COUNTERS`` in order; ``counter_clear`` bit i clears counter i.
    n_raw, n, avg, occ_pkts, occ_bytes, max_queue, busy : Out
        Telemetry (``n``, the capped or held count, a clock after ``n_raw``);
        ``clear_max_queue`` clears ``max_queue``.
    """

    def __init__(self, build=None, ram_style="generic", verdict_fifo="distributed",
                 optimise="speed", counter_bits=COUNTER_BITS):
        build = build or Build()
        self.optimise = check_optimise(optimise)
        if not isinstance(counter_bits, int) or not MIN_COUNTER_BITS <= counter_bits <= \
                COUNTER_BITS:
            raise ValueError(f"counter_bits: {counter_bits!r} is out of the allowed range "
                             f"[{MIN_COUNTER_BITS}, {COUNTER_BITS}]")
        self.counter_bits = counter_bits
        self.ram_style = ram_style
        if verdict_fifo not in VERDICT_FIFOS:
            raise ValueError(f"verdict_fifo: {verdict_fifo!r} is not one of "
                             f"{', '.join(VERDICT_FIFOS)}")
        self.verdict_fifo = verdict_fifo
        #: Clocks from an arrival's accept to its verdict at the output (sink ready).
        self.latency = LATENCY + (verdict_fifo == "block")
        if build.avg_lag < MIN_AVG_LAG:
            raise ConfigError(f"avg_lag: {build.avg_lag} is below the RTL pipeline distance; "
                              f"allowed range [{MIN_AVG_LAG}, 64]")
        self.build = build
        self._config_layout = config_layout(build)
        tbits = (build.table_depth - 1).bit_length()
        super().__init__({
            "arrivals": In(stream.Signature(ARRIVAL)),
            "departures": In(stream.Signature(DEPARTURE)),
            "verdicts": Out(stream.Signature(VERDICT)),
            "config": In(self._config_layout),
            "load_rng_decide": In(1), "load_rng_clear": In(1), "restart": In(1),
            "wipe": In(1), "rekey": In(1), "hold": In(1), "idle": Out(1),
            "rate_bank": In(1), "rate_we": In(1), "rate_addr": In(tbits),
            "rate_data": In(RATE.width),
            "decay_bank": In(1), "decay_we": In(1), "decay_addr": In(8),
            "decay_data": In(DECAY_SHIFT_BITS),
            "counters": Out(data.ArrayLayout(COUNTER_BITS, len(COUNTERS))),
            "counter_clear": In(len(COUNTERS)), "clear_max_queue": In(1),
            "n_raw": Out(17), "n": Out(16), "avg": Out(QAVG.width),
            "occ_pkts": Out(QPKTS_BITS), "occ_bytes": Out(QBYTES_BITS),
            "max_queue": Out(QPKTS_BITS), "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        b = self.build
        # registers the build fixes (``Build.fixed``) are constants here, whatever the port
        # carries, so that synthesis folds them into the logic they feed
        cfg = Signal(self._config_layout)
        fixed = fixed_registers(b)
        for name in self._config_layout.members:
            m.d.comb += cfg[name].eq(fixed[name] if name in fixed else self.config[name])
        arr, dep = self.arrivals, self.departures

        # "block": BlockFIFO is SyncFIFOBuffered clock for clock, written for block RAM
        fifo_cls = SyncFIFO if self.verdict_fifo == "distributed" else BlockFIFO
        m.submodules.fifo = fifo = fifo_cls(width=VERDICT.size, depth=FIFO_DEPTH)
        m.submodules.hash = fh = FlowHash(b, self.ram_style)
        m.submodules.flow_counter = fc = FlowCounter(b, _S_SET, self.ram_style, self.optimise)
        m.submodules.probability = dp = DropProbability(b, self.ram_style, self.optimise)
        m.submodules.decision = dc = Decision(b, self.optimise)
        m.submodules.averager = qa = QueueAverager(b, self.optimise)
        m.d.comb += [c.config.eq(cfg) for c in (fh, fc, dp, dc, qa)]
        m.submodules.rng = rng = RandomSource()

        # ---- stage 0: accept --------------------------------------------------------------
        outstanding = Signal(range(FIFO_DEPTH + 1))
        credit = Signal(init=1)                 # outstanding < FIFO_DEPTH - 1 (below)
        accept = Signal()
        # accept is the end of the clear schedule's compare; to keep its fan-out small, the
        # verdict credit steps a clock later from the registered accept ``accepted``
        accepted = Signal()
        m.d.sync += accepted.eq(accept)
        m.d.comb += [
            fc.load_rng.eq(self.load_rng_clear),
            fc.restart.eq(self.restart), fc.wipe_req.eq(self.wipe),
            fc.arrival_valid.eq(arr.valid), fc.ts.eq(arr.payload.ts),
            # ``outstanding`` does not count yet the arrival accepted a clock ago: one credit
            # in reserve (FIFO_DEPTH > LATENCY + 2, so a ready sink is never throttled)
            fc.can_accept.eq(credit & ~self.hold),
            arr.ready.eq(fc.ready), accept.eq(arr.valid & fc.ready),
            dep.ready.eq(1), self.busy.eq(fc.busy),
        ]
        read = self.verdicts.valid & self.verdicts.ready
        # ``credit`` is ``outstanding < FIFO_DEPTH - 1``. Speed: compared a clock early from
        # the count's next value, so that the compare's carry chain is not in front of the
        # clear schedule's select (ECP5 top 92.8 -> 95.5 MHz with FlowCounter's n register,
        # docs/BENCHMARKS.md). Area: compared from the count itself (7 iCE40 cells fewer)
        outstanding_next = Signal.like(outstanding)
        m.d.comb += outstanding_next.eq(outstanding + accepted - read)
        m.d.sync += outstanding.eq(outstanding_next)
        if self.optimise == "speed":
            m.d.sync += credit.eq(outstanding_next < FIFO_DEPTH - 1)
        else:
            m.d.comb += credit.eq(outstanding < FIFO_DEPTH - 1)

        # ---- stage 1: the slot, registered --------------------------------------------------
        # Control bits travel in flip-flops, one register per stage (reset clears them, and
        # ``idle`` looks at every ``av``). The wide data (times, lengths, ECN: 129 bits),
        # needed only at stage 1 (the timestamp, for the re-key hold) and at the decision, goes
        # through a RAM delay line: 129 bits of RAM instead of 16 x 129 flip-flops. The
        # decision's random number and the verdict's sequence number are not carried at all:
        # both count arrivals in order, so they are generated where they are used (stages 16
        # and 19), from the same sequence as at the accept.
        slot = data.StructLayout({"av": 1, "dv": 1, "held": 1})
        wide = data.StructLayout({"ts": ARRIVAL.members["ts"],
                                  "length": ARRIVAL.members["length"], "ecn": 1,
                                  "dts": DEPARTURE.members["ts"],
                                  "dlen": DEPARTURE.members["length"]})
        stages = [None, Signal(slot, name="slot1")]
        flow1 = Signal(ARRIVAL.members["flow"])
        m.d.sync += [stages[1].eq(Cat(accept, dep.valid, Const(0, 1))),
                     flow1.eq(arr.payload.flow)]
        for i in range(2, _S_AVG_WRITE + 1):
            stages.append(Signal(slot, name=f"slot{i}"))
            m.d.sync += stages[i].eq(stages[i - 1])
        wide0 = Cat(arr.payload.ts, arr.payload.length, arr.payload.ecn,
                    dep.payload.ts, dep.payload.length)
        wide_decide = Signal(wide)
        if self.verdict_fifo == "distributed":
            # LUT RAM: from stage 1, 16 clocks, as 16 words are one ECP5 LUT RAM
            # (TRELLIS_DPR16X4) per 4 bits. Written from the ports instead (17 words, without
            # the 129 stage-1 flip-flops) it took twice the LUT RAM: +800 TRELLIS_COMB on the
            # ULX3S for 155 flip-flops fewer (e1c61ce)
            wide1 = Signal(wide)
            m.d.sync += wide1.eq(wide0)
            m.submodules.wide_delay = wide_delay = DelayLine(wide.size,
                                                             _S_DECIDE - 1 + dc.fields_at)
            m.d.comb += wide_delay.i.eq(wide1)
            ts1 = wide1.ts                                  # the re-key hold's, at stage 1
        else:
            # block RAM (an FPGA without LUT RAM): 16 or 17 words cost the same, so written
            # from the ports, which saves the stage-1 register of all but the timestamp (about
            # 100 iCE40 logic cells)
            m.submodules.wide_delay = wide_delay = DelayLine(wide.size, _S_DECIDE + dc.fields_at)
            m.d.comb += wide_delay.i.eq(wide0)
            ts1 = Signal(ARRIVAL.members["ts"])
            m.d.sync += ts1.eq(arr.payload.ts)
        m.d.comb += wide_decide.eq(wide_delay.o)

        # ---- stage 1: live re-key hold ----------------------------------------------------------
        # Decided at stage 1 rather than at the accept: the state steps once per arrival, and
        # consecutive arrivals pass stage 1 in consecutive clocks, so a one-clock loop here is
        # exact and keeps the accept's fan-out as it was. A re-key comes only while the
        # pipeline is empty (the commit waits for idle), so it never meets an arrival here.
        hold_armed, holding = Signal(), Signal()
        hold_end = Signal(ARRIVAL.members["ts"])
        n_held = Signal(17)
        s1 = stages[1]
        before_end = (ts1 - hold_end)[TIME_BITS - 1]   # ts < hold_end, modulo 2**48, signed
        held1 = Signal()
        m.d.comb += held1.eq(hold_armed | (holding & before_end))
        m.d.sync += stages[2].held.eq(held1)
        with m.If(s1.av):
            with m.If(hold_armed):
                m.d.sync += [hold_end.eq(ts1 + cfg.rekey_hold), hold_armed.eq(0),
                             holding.eq(1)]
            with m.Elif(holding & ~before_end):
                m.d.sync += holding.eq(0)
        with m.If(self.rekey):
            m.d.sync += [hold_armed.eq(cfg.rekey_hold != 0), holding.eq(0)]
            with m.If(~hold_armed & ~holding):
                m.d.sync += n_held.eq(fc.n_raw)

        # ---- stages 1-4: hash; 5-7: flow counter ---------------------------------------------
        m.d.comb += fh.flow.eq(flow1)
        m.d.comb += [fc.set_valid.eq(stages[_S_SET].av), fc.set_index.eq(fh.index)]

        # ---- stages 9-16: probability ----------------------------------------------------------
        m.submodules.lag_line = lag_line = memory.Memory(shape=QAVG.width, depth=b.avg_lag,
                                                         init=[])
        # a synchronous read, addressed a clock early (stage 10) and transparent for the write
        # of that clock: a RAM with an output register, so block RAM on an FPGA without LUT
        # RAM (the iCE40: 12 x 36 flip-flops and a 12:1 multiplexer per bit otherwise); the
        # write of the read's own clock (stage 11) is forwarded below
        lag_wp = lag_line.write_port()
        lag_rp = lag_line.read_port(domain="sync", transparent_for=(lag_wp,))
        # Arrival k uses lag-line entry k mod avg_lag. Arrivals pass every stage in order, so
        # each stage that needs the entry counts the arrivals that passed it (reset with the
        # pipeline) instead of carrying the index through every stage.
        def lag_index(stage):
            idx = Signal(range(b.avg_lag), name=f"lag{stage}")
            with m.If(stages[stage].av):
                m.d.sync += idx.eq(Mux(idx == b.avg_lag - 1, 0, idx + 1))
            return idx
        lag_read, lag_avg_idx, lag_write = (lag_index(s) for s in (_S_AVG - 1, _S_AVG,
                                                                      _S_AVG_WRITE))
        m.d.comb += lag_rp.addr.eq(lag_read)
        lag_written = Signal(b.avg_lag)
        lag_avg = Signal(QAVG.width)
        # the write of the clock before is still pending (below): forward it
        pend_en, pend_addr = Signal(), Signal(range(b.avg_lag))
        m.d.comb += lag_avg.eq(Mux(pend_en & (pend_addr == lag_avg_idx), qa.avg,
                                   Mux(lag_written.bit_select(lag_avg_idx, 1),
                                       lag_rp.data, 0)))
        m.d.comb += [
            # the count the slot at stage 9 will show, a clock early: the table's address
            # is then registered without a clock more (DropProbability)
            dp.n_raw.eq(Mux(stages[_S_P].held, n_held, fc.n_next)), dp.avg.eq(lag_avg),
            dp.table_bank.eq(self.rate_bank), dp.table_we.eq(self.rate_we), dp.table_addr.eq(self.rate_addr),
            dp.table_data.eq(self.rate_data),
        ]

        # ---- stages 17-18: decision -----------------------------------------------------------
        # the decision's random number: the generator steps once per arrival at stage 16, in
        # arrival order, so arrival k gets the k-th number as if it had been drawn at the
        # accept; it is loaded (``load_rng_decide``) only while the pipeline is empty
        u = Signal(32)
        m.d.comb += [rng.seed.eq(cfg.rng_decide_state), rng.load.eq(self.load_rng_decide),
                     rng.step.eq(stages[_S_DECIDE - 1].av)]
        m.d.sync += u.eq(rng.value)
        sd, wd = stages[_S_DECIDE], wide_decide
        m.d.comb += [
            dc.valid.eq(sd.av), dc.p.eq(dp.prob), dc.u.eq(u), dc.ecn.eq(wd.ecn),
            dc.length.eq(wd.length), dc.ts.eq(wd.ts),
            dc.dep_valid.eq(sd.dv), dc.dep_length.eq(wd.dlen), dc.dep_ts.eq(wd.dts),
            dc.clear_max_queue.eq(self.clear_max_queue),
        ]

        # ---- stage 19: verdict, counters; averager ------------------------------------------
        # n and the average used (telemetry of the verdict) go from stage 11 to the verdict
        # through a RAM delay line too: 8 x 52 flip-flops less (on the iCE40, which has no
        # LUT RAM, it is a block RAM)
        n_at_avg = dp.n                               # valid at stage _S_N + 1
        for i in range(_S_N + 1, _S_AVG):
            n_next = Signal.like(dp.n, name=f"n{i + 1}")
            m.d.sync += n_next.eq(n_at_avg)
            n_at_avg = n_next
        m.submodules.tele_delay = tele_delay = DelayLine(len(dp.n) + QAVG.width,
                                                         _S_VERDICT - _S_AVG)
        m.d.comb += tele_delay.i.eq(Cat(n_at_avg, lag_avg))
        tele = tele_delay.o
        prob16, prob17 = Signal.like(dp.prob), Signal.like(dp.prob)
        m.d.sync += [prob16.eq(dp.prob), prob17.eq(prob16)]
        # the sequence number counts verdicts, which leave in arrival order
        seq = Signal(SEQ_BITS)
        with m.If(stages[_S_VERDICT].av):
            m.d.sync += seq.eq(seq + 1)
        verdict = Signal(VERDICT)
        m.d.comb += [
            verdict.seq.eq(seq),
            verdict.action.eq(dc.action),
            verdict.n.eq(tele[:len(dp.n)]),
            verdict.avg.eq(tele[len(dp.n):]),
            verdict.prob.eq(prob17),
            fifo.w_data.eq(verdict), fifo.w_en.eq(dc.out_valid),
            self.verdicts.payload.eq(fifo.r_data), self.verdicts.valid.eq(fifo.r_rdy),
            fifo.r_en.eq(self.verdicts.ready),
        ]
        assert _S_VERDICT - _S_DECIDE == 2
        av_v, act = dc.out_valid, dc.action
        events = [av_v, av_v & ((act == ENQUEUE) | (act == MARK)), av_v & (act == MARK),
                  av_v & (act == DROP_EARLY), av_v & (act == DROP_FORCED), dc.out_dep_valid,
                  dc.out_dep_valid & dc.dep_error]
        # the counters' registers, kept for tests (a wrap would take 2**counter_bits events)
        self.counter_registers = []
        for i, ev in enumerate(events):
            # ``counter_bits`` wide; the port's bits above read as 0
            count = Signal(self.counter_bits, name=f"counter_{COUNTERS[i]}")
            self.counter_registers.append(count)
            with m.If(self.counter_clear[i]):
                m.d.sync += count.eq(0)
            with m.Elif(ev):
                m.d.sync += count.eq(count + 1)
            m.d.comb += self.counters[i].eq(count)

        m.d.comb += [
            qa.valid.eq(av_v), qa.q.eq(dc.q), qa.idle.eq(dc.idle), qa.idle_diff.eq(dc.idle_diff),
            qa.table_bank.eq(self.decay_bank), qa.table_we.eq(self.decay_we), qa.table_addr.eq(self.decay_addr),
            qa.table_data.eq(self.decay_data),
        ]
        # ---- stage 22: the updated average into the lag line --------------------------------
        # The average the arrival at stage 22 leaves (``avg_next``, the recurrence output) is
        # the averager's ``avg`` register a clock later; the lag line is written from that
        # register, with the address and enable registered beside it, so the recurrence ends
        # at a flip-flop and not at the LUT RAM's write port (the top's critical path before,
        # 90.7 MHz). A read of the same entry in that clock takes the register (forwarding
        # above), so arrival k still sees the average after k - avg_lag with avg_lag 12.
        # Out of reset every entry reads as 0 until it is first written (a LUT RAM keeps its
        # contents across a reset, so a bit per entry says "written"; it is cleared by reset):
        # the decisions of the first avg_lag arrivals use A = 0.
        m.d.sync += [pend_en.eq(stages[_S_AVG_WRITE].av),
                     pend_addr.eq(lag_write)]
        m.d.comb += [lag_wp.en.eq(pend_en), lag_wp.addr.eq(pend_addr), lag_wp.data.eq(qa.avg)]
        with m.If(pend_en):
            m.d.sync += lag_written.bit_select(pend_addr, 1).eq(1)

        # not ``~accept``: that is the end of the clear schedule's compare, and ``idle`` fans
        # out to every configuration register through the commit (with a 65536-bit vector
        # the ULX3S's critical path, 2026-11-24); no arrival can enter while ``hold`` is
        # high or none is offered
        m.d.comb += self.idle.eq((self.hold | ~arr.valid) &
                                 ~Cat(s.av for s in stages[1:]).any())
        n_tele = Mux(hold_armed | holding, n_held, fc.n_raw)
        # ``n`` is registered: its hold mux and cap compare would otherwise sit in front of
        # the register file's read multiplexer (the board's critical path at 62.5 MHz)
        m.d.sync += self.n.eq(Mux(n_tele > cfg.n_cap, cfg.n_cap, n_tele))
        m.d.comb += [self.n_raw.eq(fc.n_raw),
                     self.avg.eq(qa.avg), self.occ_pkts.eq(dc.occ_pkts),
                     self.occ_bytes.eq(dc.occ_bytes), self.max_queue.eq(dc.max_queue)]
        return m
