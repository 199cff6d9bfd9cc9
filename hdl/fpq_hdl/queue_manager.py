"""The top: the line-rate FPQ / RED / drop-tail queue manager, one verdict per clock."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring, stream, data
from amaranth.lib.wiring import In, Out

from fpq.config import Build
from fpq.fields import ConfigError
from fpq.formats import (QAVG, QPKTS_BITS, QBYTES_BITS, COUNTER_BITS, SEQ_BITS, RATE,
                         CLEAR_PERIOD, SAMPLE_PERIOD_BITS, HOLD_BITS, FLOW_COUNT_BITS,
                         CAPPED_COUNT_BITS)
from fpq.queue_manager import COUNTERS, ENQUEUE, MARK, DROP_EARLY, DROP_FORCED

from .layouts import (arrival_layout, DEPARTURE, VERDICT, config_layout, fixed_registers,
                      OPTIMISE, check_optimise)
from .flow_hash import FlowHash
from .flow_counter import FlowCounter
from .drop_probability import DropProbability
from .decision import Decision
from .queue_averager import QueueAverager
from .periodic_timer import PeriodicTimer
from .random_source import RandomSource
from .delay_line import DelayLine
from .verdict_fifo import VerdictFIFO
from .register_slice import RegisterSlice

__all__ = ["QueueManager", "PARTS", "LATENCY", "MIN_AVG_DELAY", "MIN_COUNTER_BITS", "FIFO_DEPTH",
           "VERDICT_FIFOS", "OPTIMISE", "N_RAW_DELAY", "N_TELEMETRY_DELAY", "AVG_TELEMETRY_DELAY",
           "COUNTER_DELAY"]

# Pipeline stages, in clocks after the accept (stage 0). See the QueueManager docstring.
_S_HASH = 1                                   # flow key registered, hash starts
_S_SET = _S_HASH + FlowHash.LATENCY           # 8: vector read
_S_N = _S_SET + FlowCounter.LATENCY           # 12: N after the slot (FlowCounter)
_S_P = _S_N                                   # 12: N and N > n_cap into DropProbability
_S_AVG = _S_P + DropProbability.AVG_DELAY     # 16: the average read
_S_DECIDE = _S_P + DropProbability.LATENCY    # 24: probability ready, early decision
_S_FIELDS = _S_DECIDE - Decision.FIELDS_AHEAD  # 22: descriptor fields into the decision
_S_VERDICT = _S_DECIDE + Decision.LATENCY     # 26: action, occupancy after the slot
_S_SAMPLE = _S_VERDICT                        # 26: a sample takes that occupancy
#: Clocks from an arrival's accept to its verdict at the output (valid, with ready high): the
#: verdict FIFO's read register and the output's register slice make it three after the
#: decision.
LATENCY = _S_VERDICT + 3
#: Smallest ``Build.avg_delay`` this pipeline supports: a sample of the queue after the slot
#: of clock s updates the averager's register by clock s + _S_SAMPLE + QueueAverager.LATENCY;
#: the arrival of clock c reads it at c + _S_AVG.
MIN_AVG_DELAY = _S_SAMPLE + QueueAverager.LATENCY - _S_AVG
#: ``n_raw`` at clock c + N_RAW_DELAY is N after the slot of clock c.
N_RAW_DELAY = _S_N
#: ``n`` (capped or held) at clock c + N_TELEMETRY_DELAY is the model's ``n`` at clock c.
N_TELEMETRY_DELAY = N_RAW_DELAY + 2
#: ``avg`` at clock c + AVG_TELEMETRY_DELAY is the average an arrival of clock c decides with.
AVG_TELEMETRY_DELAY = _S_AVG
#: Fewest bits a statistics counter may count (``QueueManager``'s ``counter_bits``): 2**40
#: events take 3 hours at 100 M events/s.
MIN_COUNTER_BITS = 40
#: ``counters`` at clock v + COUNTER_DELAY count the verdict (or departure) of clock v.
COUNTER_DELAY = 2
#: Verdicts the credit lets be in flight or waiting (the FIFO holds at least as many, and
#: the output's register slice two more); more than LATENCY + 3 so that the credit never
#: throttles a ready sink. (33 words take the RAM of 32 beside the read register.)
FIFO_DEPTH = 33
assert FIFO_DEPTH > LATENCY + 3
#: The sub-blocks ``QueueManager`` builds, by name (its ``parts`` seam replaces them).
PARTS = {"VerdictFIFO": VerdictFIFO, "FlowHash": FlowHash, "FlowCounter": FlowCounter,
         "DropProbability": DropProbability, "Decision": Decision,
         "QueueAverager": QueueAverager, "RandomSource": RandomSource,
         "PeriodicTimer": PeriodicTimer}
#: Verdict FIFO memories (``VerdictFIFO``): "distributed" (LUT RAM, ECP5) or "block" (block
#: RAM, iCE40, which has no LUT RAM and would otherwise build the FIFO from flip-flops).
VERDICT_FIFOS = ("distributed", "block")


def _split_counter(m, event, clear, bits, name):
    """A counter of ``event`` in two halves (the low 32 bits, the rest), the carry between
    them registered, so that no carry chain is longer than 32 bits. Returns its value as the
    halves were a clock earlier (consistent: the low half is read a clock late too), and the
    registers ``(low, low a clock late, high)`` (for tests that preset them)."""
    low_bits = min(bits, 32)
    low = Signal(low_bits, name=f"{name}_lo")
    low_d = Signal(low_bits, name=f"{name}_lo_d")
    inc = Signal(low_bits + 1, name=f"{name}_inc")
    m.d.comb += inc.eq(low + 1)
    high = Signal(bits - low_bits, name=f"{name}_hi") if bits > low_bits else None
    carry = Signal(name=f"{name}_carry")
    with m.If(clear):
        m.d.sync += [low.eq(0), low_d.eq(0), carry.eq(0)]
        if high is not None:
            m.d.sync += high.eq(0)
    with m.Else():
        m.d.sync += [low_d.eq(low), carry.eq(event & inc[low_bits])]
        with m.If(event):
            m.d.sync += low.eq(inc[:low_bits])
        if high is not None:
            with m.If(carry):
                m.d.sync += high.eq(high + 1)
    return Cat(low_d, high) if high is not None else low_d, (low, low_d, high)


def _hold_counter(m, load, value, run, name):
    """The re-key hold's down-counter, ``HOLD_BITS + 1`` bits signed: ``load`` sets it to
    ``value - 2`` (over a step), ``run`` steps it down by one. Returns its sign.

    In two halves: the high half steps in the clock in which the low half wraps, known a clock
    ahead from a flag (the low half is 0), so no carry chain spans the counter and the count
    stays exact. ``value - 2`` and its flag are registered: ``value`` must be steady in the
    clock before a ``load``."""
    low_bits = (HOLD_BITS + 1) // 2
    init = Signal(signed(HOLD_BITS + 1), name=f"{name}_init")
    init_zero = Signal(name=f"{name}_init_lo_zero")
    # the low half of value - 2 is 0 when value's is 2: no subtraction before the compare
    m.d.sync += [init.eq(value - 2), init_zero.eq(value[:low_bits] == 2)]
    low = Signal(low_bits, name=f"{name}_lo")
    high = Signal(signed(HOLD_BITS + 1 - low_bits), name=f"{name}_hi")
    low_zero = Signal(init=1, name=f"{name}_lo_zero")     # the low half is 0 out of reset
    with m.If(load):
        m.d.sync += [low.eq(init[:low_bits]), high.eq(init[low_bits:]),
                     low_zero.eq(init_zero)]
    with m.Elif(run):
        m.d.sync += [low.eq(low - 1), low_zero.eq(low == 1)]
        with m.If(low_zero):
            m.d.sync += high.eq(high - 1)
    return high[-1]


class QueueManager(wiring.Component):
    """Bit-exact ``fpq.queue_manager.QueueManager``, fully pipelined.

    Arrival descriptors in, verdicts out (with the flow count, average and probability used,
    as telemetry), departures in. One verdict per clock, no bubbles. The queue manager keeps
    its own time: clock 0 is the clock after ``restart``, and each event is decided from the
    clock it is accepted in (sw/README.md, "The bit-exact contract"). Clearing and averaging
    run on that clock whatever the traffic (two ``PeriodicTimer``), so the arrivals only set a
    bit and read results, and no one-clock loop is longer than one LUT and one carry chain.
    The arrival port is not ready while the vector is wiped, while ``hold`` is high, or when
    the verdict FIFO has no room; ``ready`` is a function of registers only (never of a
    payload). Departures are always accepted; one accepted in the same clock as an arrival
    applies first.

    Pipeline (clocks after the accept, one slot per clock; each slot may hold an arrival, a
    departure, a clear, a sample of the queue, or a wipe):

    ======  ===========================================================================
    0       accept; the timers' strobes: a clear (its random number drawn now) and a sample
    1       the slot registered; live re-key hold (a down-counter of clocks)
    1-7     flow hash (Toeplitz, keyed mix), index ``(h * v_max) >> 32``  FlowHash
    8-11    vector read (2), old bits and writes with forwarding, N    FlowCounter
    12-23   ``n = min(N, n_cap)``, r(n) table read, the average read (16), RED regions,
            multiply, shifts, saturation                               DropProbability
    22-23   thresholds of the hard limits from the descriptor fields   Decision
    23      random number u (the generator steps once per arrival here, in arrival order)
    24-25   early decision, ECN, hard limits, occupancy                Decision
    26      verdict into the FIFO, sequence number, counters; a sample takes the
            occupancy after its slot: the average is updated by clock 30 (QueueAverager),
            which arrivals accepted ``MIN_AVG_DELAY`` = 14 clocks later read at stage 16
    ======  ===========================================================================

    Latency: ``LATENCY`` = 29 clocks from accept to verdict when the sink is ready (the
    instance's ``latency``).
    Reset: the documented reset state (sw/README.md) includes an empty flow vector, a memory
    that keeps its contents across a reset; so out of reset the flow counter wipes the vector
    (``busy`` high and the arrival port not ready for the first ``build.vec_bits + 3``
    clocks: 8195 for the default build, 55 us at 150 MHz). Departures are accepted meanwhile.
    The timers wait for ``restart``.
    Back-pressure: verdicts wait in a ``FIFO_DEPTH``-entry FIFO; an arrival is accepted only
    when its verdict has a place (a credit counted from registered accepts and reads), so no
    verdict is lost or duplicated and a ready sink is never throttled.

    Parameters
    ----------
    build : fpq.Build
        Build-time parameters; ``build.avg_delay`` must be at least ``MIN_AVG_DELAY`` (more
        delays the average by registers).
    ram_style : str
        ``BlockRAM`` and ``Multiplier`` style ("generic": portable, simulation, Verilog
        export; "ecp5": DP16KD primitives with output registers, MULT18X18D with input and
        output registers).
    verdict_fifo : str
        One of ``VERDICT_FIFOS``: "distributed" (default) or "block" (for FPGAs without LUT
        RAM, such as the iCE40; the same latency and throughput). It also says where
        the RAM delay line of the descriptors' wide fields starts: 16 words before their use
        for LUT RAM, at the ports for block RAM.
    optimise : str
        One of ``OPTIMISE``: "speed" (default) or "area", where a block has a choice that
        changes no verdict and no clock: the decision's occupancy loop (``Decision``) and the
        drop probability's shifts (``DropProbability``).
    counter_bits : int
        Bits the statistics counters count, ``MIN_COUNTER_BITS`` .. 64 (default 64); the
        ``counters`` port stays 64 bits wide, its bits above read as 0. Below 64 a counter
        wraps after ``2**counter_bits`` events, which the model's counters never do: for a
        small FPGA at a low clock, where ``2**counter_bits`` clocks are longer than any run
        (the iCEBreaker's 44 bits: 13.6 days at one event per clock at 15 MHz).
    parts : dict or None
        Sub-block factories by name, each called with the real class's arguments; a name
        left out (default: all) builds the real class of ``PARTS``. A seam for tests: a
        bench builds a top with a faulty block wrapped around the real one.

    Attributes
    ----------
    arrivals : In(stream.Signature(arrival_layout(build)))
        ``ARRIVAL``; its ``flow`` is 296 bits in an IPv6 build (``Build.flow_key``).
    departures : In(stream.Signature(DEPARTURE))
    verdicts : Out(stream.Signature(VERDICT))
    config : In(config_layout(build))
        Raw configuration registers (``fpq.Config.registers()``). A change applies from the
        clock in which the port shows it (``ts`` of ``fpq.QueueManager.configure``), with no
        arrival in the pipeline (``idle``); the strobes it needs come in that same clock.
        The fields of registers the build fixes (``Build.fixed``, kind "fixed" in
        ``fpq.regmap``) are ignored: the build's constants are used.
    load_rng_decide, load_rng_clear : In(1)
        Load a generator from its config seed (the clear drawn in this clock already takes
        the new seed's first number).
    restart : In(1)
        Start the time base: the next clock is clock 0 (the timers' first strobes come
        ``clear_period`` and ``avg_sample_period`` clocks later).
    wipe : In(1)
        Wipe the flow vector (``busy`` meanwhile): a commit that changes ``v_max``.
    rekey : In(1)
        With ``wipe``, in a commit that changes ``hash_key``: live re-key. N after every clear
        due before this clock is latched (unless a hold is already armed or running) and,
        from the next arrival on, arrivals earlier than its clock + ``rekey_hold`` decide with
        it while the wiped vector refills under the new key (``fpq.QueueManager.configure``).
    hold : In(1)
        Accept no arrival (the register file's commit waits for an empty pipeline).
    idle : Out(1)
        No arrival is in the pipeline and none can enter this clock (``hold`` is high or no
        arrival is offered); verdicts may still wait in the FIFO.
    rate_bank, rate_we, rate_addr, rate_data : In
        The r(N) table: the active bank, and a write port into the other bank.
    counters : Out(7 x 64)
        ``fpq.queue_manager.COUNTERS`` in order, ``COUNTER_DELAY`` clocks after the verdicts
        they count; ``counter_clear`` bit i clears counter i.
    n_raw, n, avg, occ_pkts, occ_bytes, max_queue, busy : Out
        Telemetry: ``n_raw`` is N after the slot ``N_RAW_DELAY`` clocks ago; ``n`` the capped
        or held count, ``N_TELEMETRY_DELAY`` clocks after its slot; ``avg`` the average
        arrivals decide with; ``clear_max_queue`` clears ``max_queue``.
    """

    def __init__(self, build=None, ram_style="generic", verdict_fifo="distributed",
                 optimise="speed", counter_bits=COUNTER_BITS, parts=None):
        build = build or Build()
        unknown = sorted(set(parts or ()) - set(PARTS))
        if unknown:
            raise ValueError(f"parts: {', '.join(unknown)} not among {', '.join(PARTS)}")
        self.parts = {**PARTS, **(parts or {})}
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
        self.latency = LATENCY
        if build.avg_delay < MIN_AVG_DELAY:
            raise ConfigError(f"avg_delay: {build.avg_delay} is below the RTL's pipeline "
                              f"distance; allowed range [{MIN_AVG_DELAY}, 127] clocks")
        self.build = build
        self._config_layout = config_layout(build)
        tbits = (build.table_depth - 1).bit_length()
        super().__init__({
            "arrivals": In(stream.Signature(arrival_layout(build))),
            "departures": In(stream.Signature(DEPARTURE)),
            "verdicts": Out(stream.Signature(VERDICT)),
            "config": In(self._config_layout),
            "load_rng_decide": In(1), "load_rng_clear": In(1), "restart": In(1),
            "wipe": In(1), "rekey": In(1), "hold": In(1), "idle": Out(1),
            "rate_bank": In(1), "rate_we": In(1), "rate_addr": In(tbits),
            "rate_data": In(RATE.width),
            "counters": Out(data.ArrayLayout(COUNTER_BITS, len(COUNTERS))),
            "counter_clear": In(len(COUNTERS)), "clear_max_queue": In(1),
            "n_raw": Out(FLOW_COUNT_BITS), "n": Out(CAPPED_COUNT_BITS), "avg": Out(QAVG.width),
            "occ_pkts": Out(QPKTS_BITS), "occ_bytes": Out(QBYTES_BITS),
            "max_queue": Out(QPKTS_BITS), "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        # the signals one stage hands to the next, by name
        s = SimpleNamespace()
        self._blocks(m, s)
        self._accept(m, s)
        self._slots(m, s)
        self._rekey_hold(m, s)
        self._hash_and_count(m, s)
        self._probability(m, s)
        self._decision(m, s)
        self._verdict(m, s)
        self._sample(m, s)
        self._telemetry(m, s)
        return m

    def _blocks(self, m, s):
        """The configuration (fixed registers as constants), the blocks and the timers."""
        b = self.build
        # registers the build fixes (``Build.fixed``) are constants here, whatever the port
        # carries, so that synthesis folds them into the logic they feed
        cfg = Signal(self._config_layout)
        fixed = fixed_registers(b)
        for name in self._config_layout.members:
            m.d.comb += cfg[name].eq(fixed[name] if name in fixed else self.config[name])

        p = self.parts
        m.submodules.fifo = fifo = p["VerdictFIFO"](width=VERDICT.size, depth=FIFO_DEPTH,
                                                    memory=self.verdict_fifo, credited=True)
        m.submodules.hash = fh = p["FlowHash"](b, self.ram_style)
        m.submodules.flow_counter = fc = p["FlowCounter"](b, _S_SET, self.ram_style)
        m.submodules.probability = dp = p["DropProbability"](b, self.ram_style, self.optimise)
        m.submodules.decision = dc = p["Decision"](b, self.optimise)
        m.submodules.averager = qa = p["QueueAverager"](b)
        m.d.comb += [c.config.eq(cfg) for c in (fh, fc, dp, dc)]
        m.submodules.rng = rng = p["RandomSource"]()
        m.submodules.clear_timer = clear_timer = p["PeriodicTimer"](CLEAR_PERIOD.int_bits,
                                                                    CLEAR_PERIOD.frac_bits)
        m.submodules.sample_timer = sample_timer = p["PeriodicTimer"](SAMPLE_PERIOD_BITS, 0)
        m.d.comb += [clear_timer.period.eq(cfg.clear_period),
                     sample_timer.period.eq(cfg.avg_sample_period),
                     clear_timer.restart.eq(self.restart), sample_timer.restart.eq(self.restart)]
        s.cfg, s.fifo, s.fh, s.fc, s.dp, s.dc, s.qa, s.rng = cfg, fifo, fh, fc, dp, dc, qa, rng
        s.clear_timer, s.sample_timer = clear_timer, sample_timer

    def _accept(self, m, s):
        """Stage 0: the accept; ``ready`` from registers only: "a credit and no wipe" (one
        register, from their next values) and the register file's hold."""
        arr, dep, fc = self.arrivals, self.departures, s.fc
        accept = Signal()
        # the credit and the wipe as one register, which can sit by the port: the wipe's
        # flag lives with the flow vector, across the chip from the port's users
        free = Signal(name="credit_and_no_wipe")
        m.d.comb += [
            fc.load_rng.eq(self.load_rng_clear), fc.clear.eq(s.clear_timer.fire),
            fc.wipe.eq(self.wipe),
            arr.ready.eq(free & ~self.hold), accept.eq(arr.valid & arr.ready),
            dep.ready.eq(1), self.busy.eq(fc.busy),
        ]
        # the credit: the verdicts outstanding, counted from accepts and reads registered a
        # clock late (accepts up to two clocks ago, reads up to two clocks ago), so an arrival
        # accepted now finds at most that count + 2 verdicts ahead of it in flight or in the
        # FIFO. The count is a thermometer (bit i: more than i outstanding), so that a step
        # is one LUT per bit and the credit a bit of it, with no adder or compare in the loop.
        read = self.verdicts.valid & self.verdicts.ready
        accepted, read_r = Signal(), Signal()
        m.d.sync += [accepted.eq(accept), read_r.eq(read)]
        more_than = Signal(FIFO_DEPTH + 1)
        up, down = accepted & ~read_r, read_r & ~accepted
        below, above = Cat(C(1, 1), more_than[:-1]), Cat(more_than[1:], C(0, 1))
        more_than_next = Mux(up, below, Mux(down, above, more_than))
        m.d.sync += [more_than.eq(more_than_next),
                     free.eq(~more_than_next[FIFO_DEPTH - 2] & ~fc.busy_next)]
        s.accept = accept

    def _slots(self, m, s):
        """Stage 1 on: the slot registered, its control bits stage by stage, its wide fields
        in a delay line."""
        arr, dep, cfg = self.arrivals, self.departures, s.cfg
        # Control bits travel in flip-flops, one register per stage (reset clears them, and
        # ``idle`` looks at every ``av``). The wide data (lengths, ECN, a sample's weight),
        # needed only at the decision and the averager, goes through a RAM delay line. The
        # decision's random number and the verdict's sequence number are not carried: both
        # count arrivals in order, so they are generated where they are used.
        slot = data.StructLayout({"av": 1, "dv": 1, "smp": 1, "held": 1, "rkl": 1})
        arrival = arrival_layout(self.build)
        wide = data.StructLayout({"length": arrival.members["length"], "ecn": 1,
                                  "dlen": DEPARTURE.members["length"], "wq_shift": 5})
        hold_armed, holding = Signal(), Signal()
        stages = [None, Signal(slot, name="slot1")]
        flow1 = Signal(arrival.members["flow"])
        m.d.sync += [stages[1].av.eq(s.accept), stages[1].dv.eq(dep.valid),
                     stages[1].smp.eq(s.sample_timer.fire),
                     # a re-key latches N (at stage _S_N - 1) unless a hold is armed or
                     # running
                     stages[1].rkl.eq(self.rekey & ~hold_armed & ~holding),
                     flow1.eq(arr.payload.flow)]
        for i in range(2, _S_SAMPLE + 1):
            stages.append(Signal(slot, name=f"slot{i}"))
            m.d.sync += stages[i].eq(stages[i - 1])
        wide0 = Signal(wide)
        m.d.comb += [wide0.length.eq(arr.payload.length), wide0.ecn.eq(arr.payload.ecn),
                     wide0.dlen.eq(dep.payload.length), wide0.wq_shift.eq(cfg.wq_shift)]
        if self.verdict_fifo == "distributed":
            # LUT RAM: the last 16 clocks, as 16 words are one ECP5 LUT RAM (TRELLIS_DPR16X4)
            # per 4 bits (17 words would take twice the LUT RAM); registers before
            reg = wide0
            for i in range(_S_FIELDS - 16):
                nxt = Signal(wide, name=f"wide{i + 1}")
                m.d.sync += nxt.eq(reg)
                reg = nxt
            m.submodules.wide_delay = wide_delay = DelayLine(wide.size, 16)
            m.d.comb += wide_delay.i.eq(reg)
        else:
            # block RAM (an FPGA without LUT RAM): written from the ports
            m.submodules.wide_delay = wide_delay = DelayLine(wide.size, _S_FIELDS)
            m.d.comb += wide_delay.i.eq(wide0)
        wide_f = Signal(wide)                           # at stage _S_FIELDS
        m.d.comb += wide_f.eq(wide_delay.o)
        s.stages, s.flow1, s.wide_f, s.hold_armed, s.holding = (stages, flow1, wide_f,
                                                                hold_armed, holding)

    def _rekey_hold(self, m, s):
        """Stage 1: the live re-key's hold, and N held from before the re-key.

        A down-counter of clocks: loaded with rekey_hold - 2 at the first arrival after a
        re-key (at its stage 1), so that an arrival accepted at clock c finds it at or
        above 0 exactly when c < (first arrival's clock) + rekey_hold; it stops below 0.
        A re-key comes only while the pipeline is empty (the commit waits for idle)."""
        cfg, stages, hold_armed, holding = s.cfg, s.stages, s.hold_armed, s.holding
        s1 = stages[1]
        load_hold, running = Signal(), Signal()
        negative = _hold_counter(m, load_hold, cfg.rekey_hold, running, "hold")
        m.d.comb += [running.eq(holding & ~negative), load_hold.eq(s1.av & hold_armed)]
        held1 = Signal()
        m.d.comb += held1.eq(hold_armed | running)
        m.d.sync += stages[2].held.eq(held1)
        with m.If(s1.av):
            with m.If(hold_armed):
                m.d.sync += [hold_armed.eq(0), holding.eq(1)]
            with m.Elif(holding & negative):
                m.d.sync += holding.eq(0)
        with m.If(self.rekey):
            m.d.sync += [hold_armed.eq(cfg.rekey_hold != 0), holding.eq(0)]
        n_held = Signal(FLOW_COUNT_BITS)
        held_over = Signal()                          # n_held > n_cap
        with m.If(stages[_S_N - 1].rkl):
            # N after every clear due before the re-key's clock (the slot before it)
            m.d.sync += n_held.eq(s.fc.n_raw)
        m.d.sync += held_over.eq(cfg.n_cap < n_held)
        s.running, s.n_held, s.held_over = running, n_held, held_over

    def _hash_and_count(self, m, s):
        """Stages 1-7: the hash; 8-11: the flow counter."""
        m.d.comb += s.fh.flow.eq(s.flow1)
        m.d.comb += [s.fc.set_valid.eq(s.stages[_S_SET].av), s.fc.set_index.eq(s.fh.index)]

    def _probability(self, m, s):
        """Stages 12-23: the probability, from N (or the held N) and the average."""
        b, dp, fc, stages = self.build, s.dp, s.fc, s.stages
        # the average: the averager's register, delayed by ``avg_delay - MIN_AVG_DELAY``
        avg_pub = s.qa.avg
        for i in range(b.avg_delay - MIN_AVG_DELAY):
            nxt = Signal(QAVG.width, name=f"avg_delay{i}")
            m.d.sync += nxt.eq(avg_pub)
            avg_pub = nxt
        m.d.comb += [
            # the count after the slot at this stage, and whether it is over the cap
            dp.n_raw.eq(Mux(stages[_S_P].held, s.n_held, fc.n_raw)),
            dp.n_over.eq(Mux(stages[_S_P].held, s.held_over, fc.over)), dp.avg.eq(avg_pub),
            dp.table_bank.eq(self.rate_bank), dp.table_we.eq(self.rate_we),
            dp.table_addr.eq(self.rate_addr), dp.table_data.eq(self.rate_data),
        ]
        s.avg_pub = avg_pub

    def _decision(self, m, s):
        """Stages 22-25: the decision, with the fields of the slot and its random number.

        The decision's random number: the generator steps once per arrival two stages
        before the decision, in arrival order, so arrival k gets the k-th number as if it
        had been drawn at the accept; it is loaded (``load_rng_decide``) only while the
        pipeline is empty. The decision takes it a clock ahead (``u_ahead``)."""
        rng, dc, dp, wide_f = s.rng, s.dc, s.dp, s.wide_f
        u = Signal(32)
        m.d.comb += [rng.seed.eq(s.cfg.rng_decide_state), rng.load.eq(self.load_rng_decide),
                     rng.step.eq(s.stages[_S_DECIDE - 2].av)]
        m.d.sync += u.eq(rng.value)
        sf = s.stages[_S_FIELDS]
        m.d.comb += [
            dc.valid_ahead.eq(sf.av), dc.dep_valid_ahead.eq(sf.dv),
            dc.length_ahead.eq(wide_f.length), dc.dep_length_ahead.eq(wide_f.dlen),
            dc.ecn_ahead.eq(wide_f.ecn),
            dc.p.eq(dp.prob), dc.p_zero.eq(dp.prob_zero), dc.u_ahead.eq(u),
            dc.clear_max_queue.eq(self.clear_max_queue),
        ]

    def _verdict(self, m, s):
        """Stage 26: the verdict into the FIFO, with the n and the average it was decided
        with; the counters."""
        dp, dc, fifo = s.dp, s.dc, s.fifo
        # n and the average used (telemetry of the verdict) from stage 13 to the verdict
        n_at_avg = dp.n                               # valid at stage _S_P + N_LATENCY
        for i in range(_S_P + DropProbability.N_LATENCY, _S_AVG):
            n_next = Signal.like(dp.n, name=f"n{i + 1}")
            m.d.sync += n_next.eq(n_at_avg)
            n_at_avg = n_next
        m.submodules.tele_delay = tele_delay = DelayLine(len(dp.n) + QAVG.width,
                                                         _S_VERDICT - _S_AVG)
        m.d.comb += tele_delay.i.eq(Cat(n_at_avg, s.avg_pub))
        tele = tele_delay.o
        prob_d = dp.prob
        for i in range(_S_DECIDE, _S_VERDICT):
            nxt = Signal.like(dp.prob, name=f"prob{i + 1}")
            m.d.sync += nxt.eq(prob_d)
            prob_d = nxt
        # the sequence number counts verdicts, which leave in arrival order
        seq = Signal(SEQ_BITS)
        with m.If(dc.out_valid):
            m.d.sync += seq.eq(seq + 1)
        verdict = Signal(VERDICT)
        m.d.comb += [
            verdict.seq.eq(seq),
            verdict.action.eq(dc.action),
            verdict.n.eq(tele[:len(dp.n)]),
            verdict.avg.eq(tele[len(dp.n):]),
            verdict.prob.eq(prob_d),
            fifo.w_data.eq(verdict), fifo.w_en.eq(dc.out_valid),
        ]
        # the port's ready reaches one LUT level before the slice's registers: behind the
        # FIFO it would decide the read and the fill level (three LUT levels into the level)
        m.submodules.verdict_slice = out = RegisterSlice(VERDICT)
        m.d.comb += [out.i.payload.eq(fifo.r_data), out.i.valid.eq(fifo.r_rdy),
                     fifo.r_en.eq(out.i.ready)]
        wiring.connect(m, wiring.flipped(self.verdicts), out.o)
        av_v, act = dc.out_valid, dc.action
        events = [av_v, av_v & ((act == ENQUEUE) | (act == MARK)), av_v & (act == MARK),
                  av_v & (act == DROP_EARLY), av_v & (act == DROP_FORCED), dc.out_dep_valid,
                  dc.out_dep_valid & dc.dep_error]
        # the counters' registers, kept for tests (a wrap would take 2**counter_bits events)
        self.counter_halves = []
        for i, ev in enumerate(events):
            # ``counter_bits`` wide; the port's bits above read as 0
            value, regs = _split_counter(m, ev, self.counter_clear[i], self.counter_bits,
                                         f"counter_{COUNTERS[i]}")
            m.d.comb += self.counters[i].eq(value)
            self.counter_halves.append(regs)

    def _sample(self, m, s):
        """Stage 26: a sample of the queue into the average: the occupancy after its slot,
        with the weight it took at the accept."""
        wq_s = s.wide_f.wq_shift
        for i in range(_S_FIELDS, _S_SAMPLE):
            nxt = Signal(5, name=f"wq_shift{i + 1}")
            m.d.sync += nxt.eq(wq_s)
            wq_s = nxt
        m.d.comb += [s.qa.sample.eq(s.stages[_S_SAMPLE].smp), s.qa.q.eq(s.dc.occ_pkts),
                     s.qa.wq_shift.eq(wq_s)]

    def _telemetry(self, m, s):
        """``idle`` for the register file's commit, and the telemetry ports."""
        cfg, fc, dc = s.cfg, s.fc, s.dc
        # not ``~accept`` (``arr.valid`` would reach every configuration register through
        # the commit): no arrival can enter while ``hold`` is high or none is offered. That
        # no slot is in flight is registered a clock ahead (the slots shift by one stage per
        # clock: stage 1 takes the accept), so the commit's enable of every configuration
        # register follows one LUT here, not an OR of all the slots.
        empty = Signal(init=1, name="pipeline_empty")
        m.d.sync += empty.eq(~s.accept & ~Cat(st.av for st in s.stages[1:_S_VERDICT]).any())
        m.d.comb += self.idle.eq((self.hold | ~self.arrivals.valid) & empty)
        # ``n`` in two registered steps: the hold's select, then the cap's compare and select
        n_tele = Signal(FLOW_COUNT_BITS)
        m.d.sync += n_tele.eq(Mux(s.hold_armed | s.running, s.n_held, fc.n_raw))
        m.d.sync += self.n.eq(Mux(cfg.n_cap < n_tele, cfg.n_cap, n_tele))
        m.d.comb += [self.n_raw.eq(fc.n_raw),
                     self.avg.eq(s.avg_pub), self.occ_pkts.eq(dc.occ_pkts),
                     self.occ_bytes.eq(dc.occ_bytes), self.max_queue.eq(dc.max_queue)]
