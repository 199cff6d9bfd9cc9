"""On-chip traffic generator: many-flow arrivals and a drain, set by registers on the bus."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring, stream
from amaranth.lib.wiring import In, Out

from fpq.formats import QPKTS_BITS
from fpq.queue_manager import ENQUEUE, MARK, DROP_EARLY, DROP_FORCED
from fpq.regmap import place
from fpq.register_specs import RegisterSpec
from fpq_hdl.layouts import ARRIVAL, DEPARTURE, VERDICT, check_optimise
from fpq_hdl.flow_counter import step_counter
from fpq_hdl.registers import BusSignature
from fpq_hdl.read_decode import read_decode

__all__ = ["TG_BASE", "TG_SIZE", "TG_ID", "TG_SPECS", "TG_REGISTERS", "TG_REG",
           "TrafficGenerator", "flow_key"]

#: Byte address range of the generator's registers on the SoC bus. It lies in the gap of
#: ``fpq.regmap`` between the telemetry (ends below 0x300) and the r(N) table (0x40000).
TG_BASE = 0x800
TG_SIZE = 0x100
TG_ID = 0x5447454E  # "TGEN"


def _setting(name, width, lo, hi, reset, doc):
    """A setting: read-write, applied at the write (no shadow, no commit)."""
    return RegisterSpec(name, width, lo, hi, "", doc, kind="setting", access="rw", reset=reset)


def _reading(name, width, doc, kind="telemetry", reset=0):
    """A read-only register the generator drives."""
    return RegisterSpec(name, width, 0, 0, "", doc, kind=kind, access="ro", reset=reset)


#: The generator's register declarations, in address order. A write of a setting outside
#: [lo, hi] is ignored and sets ``status.BAD_WRITE`` (the host tool checks the range first
#: and names the field).
TG_SPECS = [
    _reading("tg_id", 32, "'TGEN'.", kind="control", reset=TG_ID),
    _setting("tg_enable", 1, 0, 1, 1,
             "1: generate arrivals and departures (on out of reset: a self-test)."),
    _setting("tg_arrival_period", 16, 1, 0xFFFF, 4,
             "Clocks between two arrivals (1 = one per clock, line rate)."),
    _setting("tg_flows", 17, 1, 65536, 64,
             "Number of distinct flows (5-tuples) the arrivals come from."),
    _setting("tg_pattern", 1, 0, 1, 1,
             "Flow order: 0 round robin, 1 pseudo-random (32-bit LFSR)."),
    _setting("tg_length", 16, 1, 0xFFFF, 64,
             "Packet length in bytes of arrivals and departures."),
    _setting("tg_drain_period", 16, 0, 0xFFFF, 5,
             "Clocks between two departures while the queue is not empty (0: no drain)."),
    _setting("tg_salt", 32, 0, 0xFFFFFFFF, 0,
             "XORed into the source address and port: another set of flows."),
    _reading("tg_backlog", QPKTS_BITS, "Packets enqueued (verdicts) and not yet departed."),
    _reading("tg_sent", 32, "Arrivals accepted by the queue manager (wraps)."),
    _reading("tg_stalls", 32, "Clocks an arrival waited for the queue manager's ready (wraps)."),
    _reading("tg_time", 32,
             "Free-running clock counter (wraps): the time base of the monitor's rates."),
    _reading("tg_status", 1, "bit 0 BAD_WRITE (sticky; a write of tg_status clears it).",
             kind="control"),
]
#: The generator's registers (``fpq.regmap.Register``) at their addresses from ``TG_BASE``.
TG_REGISTERS = place(TG_SPECS, TG_BASE)
assert TG_REGISTERS[-1].offset + 4 <= TG_BASE + TG_SIZE
TG_REG = {r.name: r for r in TG_REGISTERS}

#: Fixed parts of the generated 5-tuples.
SRC_BASE, DST_IP, DST_PORT, PROTO = 0x0A000000, 0xC0A80001, 80, 6


def flow_key(flow_id, salt=0):
    """The 104-bit flow key (``fpq.flow_hash.pack_flow`` layout) of generated flow
    ``flow_id``: src 10.x.y.z = 10.0.0.0 + id, sport 1024 + id, both XOR the salt."""
    from fpq.flow_hash import pack_flow
    src = (SRC_BASE + flow_id) ^ salt
    sport = ((1024 + flow_id) & 0xFFFF) ^ (salt >> 16)
    return pack_flow(src, DST_IP, sport, DST_PORT, PROTO)


def in_range(value, lo, hi):
    """``lo <= value <= hi`` for an unsigned ``value``, without a carry chain where the bounds
    allow: a bound 0 needs no logic, 1 is "any bit set", ``2**k - 1`` is "no bit at or above
    k" (a comparator with a constant is a carry chain on an iCE40, one logic cell per bit)."""
    ok = Const(1, 1)
    if lo == 1:
        ok = ok & value.any()
    elif lo > 1:
        ok = ok & (value >= lo)
    width = len(value)
    if hi + 1 == 1 << hi.bit_length():
        if hi.bit_length() < width:
            ok = ok & ~value[hi.bit_length():].any()
    else:
        ok = ok & (value <= hi)
    return ok


class TrafficGenerator(wiring.Component):
    """Arrivals from ``tg_flows`` flows every ``tg_arrival_period`` clocks; departures every
    ``tg_drain_period`` clocks while the generator's own backlog is not zero.

    Arrivals: a timer offers an arrival every ``tg_arrival_period`` clocks (1 = every clock);
    an offered arrival waits for ``ready`` (the timer waits with it, so back-pressure slows the
    source rather than dropping). The flow is the next one in round-robin order or, for
    pattern 1, a free-running 32-bit Galois LFSR value masked to the next power of two of ``tg_flows``
    and folded into range (``x - flows`` when ``x >= flows``; slightly non-uniform when
    ``tg_flows`` is not a power of two; for 3 clocks after a write of ``tg_flows`` an id may
    still fall in the old range). Its key is ``flow_key(id, tg_salt)``. The descriptors
    carry no time: the queue manager decides each event from the clock it accepts it in.

    Departures (also while ``tg_enable`` is 0, so the queue drains): the backlog counts verdicts that enqueue (or mark) minus departures sent, so
    a departure never precedes its packet's verdict and the queue manager never sees a
    departure from an empty queue (as long as ``tg_length`` does not change while packets
    are queued: departures use the current length).

    Latency: an arrival is offered 1 clock after its timer expires; bus reads answer
    ``read_latency`` clocks after the request. Throughput: one arrival per clock at
    ``tg_arrival_period`` = 1.

    Parameters
    ----------
    optimise : str
        "speed" (default) or "area": how a write's range check is built. "speed": two
        comparators per register (a carry chain each, cheap and fast on an ECP5); "area":
        ``in_range``, without a carry chain where the bounds allow (on an iCE40 a carry chain
        costs a logic cell per bit; on the ULX3S ``in_range`` measured 116 LUTs more).
    read_latency : int
        1 or 2: with 2 the word select is split over two registered stages (groups of four
        words in the read's clock, the group a clock later), and a write takes effect a clock
        later (its decode and range check registered first): a read sees a write issued two
        clocks or more before it (the UART bridge's accesses are a whole request apart).

    Attributes
    ----------
    bus : In(BusSignature())
        Target side; decodes ``TG_BASE`` .. ``TG_BASE + TG_SIZE`` (the SoC routes only that
        range here). Reads return 0 outside the mapped words.
    arrivals : Out(stream.Signature(ARRIVAL))
    departures : Out(stream.Signature(DEPARTURE))
    verdicts : In(stream.Signature(VERDICT))
        Always ready.
    arrival_pulse, drop_pulse, mark_pulse, enabled, backlog_nonzero : Out(1)
        For LEDs.
    """

    def __init__(self, optimise="speed", read_latency=1):
        self.optimise = check_optimise(optimise)
        if read_latency not in (1, 2):
            raise ValueError(f"read_latency: {read_latency!r} must be 1 or 2")
        self.read_latency = read_latency
        super().__init__({
            "bus": In(BusSignature()),
            "arrivals": Out(stream.Signature(ARRIVAL)),
            "departures": Out(stream.Signature(DEPARTURE)),
            "verdicts": In(stream.Signature(VERDICT)),
            "arrival_pulse": Out(1), "drop_pulse": Out(1), "mark_pulse": Out(1),
            "enabled": Out(1), "backlog_nonzero": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        # the signals one stage hands to the next, by name
        s = SimpleNamespace()
        self._registers(m, s)
        self._read(m, s)
        self._writes(m, s)
        self._next_flow(m, s)
        self._arrivals(m, s)
        self._departures(m, s)
        return m

    def _registers(self, m, s):
        """The registers of ``TG_REGISTERS`` (``s.regs``, by name), and the clock counter
        ``tg_time`` for the host's rates (not in the descriptors)."""
        regs = {r.name: Signal(r.width, init=r.reset, name=r.name) for r in TG_REGISTERS}
        m.d.comb += self.enabled.eq(regs["tg_enable"])
        m.d.sync += regs["tg_time"].eq(regs["tg_time"] + 1)
        s.regs = regs

    def _read(self, m, s):
        """Bus reads: the 16 words by address (``read_decode``), ``read_latency`` clocks after
        the read, 0 above them."""
        bus = self.bus
        words = {(r.offset - TG_BASE) // 4: s.regs[r.name] for r in TG_REGISTERS}
        # With read_latency 2 the select of the 16 words is in two registered stages: in the
        # read's clock each group of four by the address's low bits, a clock later the group
        # by the next two, 0 above the 16 words (as one select after a registered address, it
        # was five LUT levels). Loaded with the read (the address bits then are registers of
        # their own: loaded every clock, they would equal the other targets' registered
        # addresses, and Yosys would merge them into one flip-flop placed by the farthest of
        # its loads).
        m.d.comb += bus.r_data.eq(read_decode(
            m, bus.r_en, bus.addr[2:8], words, stages=self.read_latency, one_stage="array",
            group_bits=2, load_with_read=True))

    def _writes(self, m, s):
        """Bus writes: a setting takes a value in its range, else (and for a read-only or
        unmapped word) ``BAD_WRITE`` is set; a write of ``tg_status`` clears it."""
        bus, regs = self.bus, s.regs
        bad_write = regs["tg_status"]
        # With read_latency 2 a write takes effect a clock after the bus's: its word's decode
        # and the value's range check (two compares) are registered first, so that the write
        # itself is one enable of registers; a read sees it from two clocks after the write
        # (the read samples the words in its own clock).
        stage = m.d.sync if self.read_latency == 2 else m.d.comb
        w_data = Signal(32, name="w_data")
        hit = {r.name: Signal(name=f"w_{r.name}") for r in TG_REGISTERS}
        fits = {r.name: Signal(name=f"fits_{r.name}") for r in TG_REGISTERS if r.access == "rw"}
        unmapped = Signal()
        stage += [w_data.eq(bus.w_data), unmapped.eq(0)]
        stage += [hit[name].eq(0) for name in hit]
        with m.Switch(bus.addr[2:8]):
            for r in TG_REGISTERS:
                with m.Case((r.offset - TG_BASE) // 4):
                    stage += hit[r.name].eq(bus.w_en)
            with m.Default():
                stage += unmapped.eq(bus.w_en)
        for r in TG_REGISTERS:
            if r.access == "rw":
                stage += fits[r.name].eq(
                    in_range(bus.w_data, r.lo, r.hi) if self.optimise == "area"
                    else (bus.w_data >= r.lo) & (bus.w_data <= r.hi))
        for r in TG_REGISTERS:
            with m.If(hit[r.name]):
                if r.access == "rw":
                    with m.If(fits[r.name]):
                        m.d.sync += regs[r.name].eq(w_data)
                    with m.Else():
                        m.d.sync += bad_write.eq(1)
                elif r.name == "tg_status":
                    m.d.sync += bad_write.eq(0)
                else:
                    m.d.sync += bad_write.eq(1)
        with m.If(unmapped):
            m.d.sync += bad_write.eq(1)

    def _next_flow(self, m, s):
        """The next arrival's flow id, one clock ahead (``s.flow_id``): round robin
        (``s.rr_id``, stepped by ``_arrivals``) or the LFSR's value masked and folded into
        ``tg_flows``."""
        flows = s.regs["tg_flows"]
        lfsr = Signal(32, init=1)
        # Galois LFSR x^32 + x^22 + x^2 + x + 1 (taps 0x80200003), one step per clock
        m.d.sync += lfsr.eq(Mux(lfsr[0], (lfsr >> 1) ^ 0x80200003, lfsr >> 1))
        # mask = 2**ceil(log2(flows)) - 1: fill the bits right of the top bit of flows - 1
        # (registered in steps: tg_flows changes rarely, the LFSR value may be a few clocks old)
        fm1 = Signal(17)
        m.d.sync += fm1.eq(flows - 1)
        mask = Signal(17)
        # each bit the OR of flows - 1's bits at and above it: a tree of at most three LUT
        # levels (a fill by shifts, x | x >> 1 | ..., is five ORs in series)
        m.d.sync += mask.eq(Cat(fm1[i:].any() for i in range(17)))
        masked = Signal(17)
        m.d.sync += masked.eq(lfsr[:17] & mask)
        random_id = Signal(17)
        # masked - flows when masked >= flows: the difference's borrow selects (one carry
        # chain, then the select; a compare beside the subtraction puts a chain and LUTs
        # after it)
        diff = Signal(signed(18))
        m.d.comb += diff.eq(masked - flows)
        m.d.sync += random_id.eq(Mux(diff[-1], masked, diff[:17]))
        rr_id = Signal(17)
        flow_id = Signal(17)
        m.d.comb += flow_id.eq(Mux(s.regs["tg_pattern"], random_id, rr_id))
        s.fm1, s.rr_id, s.flow_id = fm1, rr_id, flow_id

    def _arrivals(self, m, s):
        """An arrival offered every ``tg_arrival_period`` clocks while enabled (its timer
        waits while the arrival waits for ``ready``), the round-robin id stepped, and the
        counters of arrivals sent and of clocks stalled."""
        regs, rr_id, flow_id = s.regs, s.rr_id, s.flow_id
        arr = self.arrivals
        timer = Signal(16)
        timer_zero = Signal(init=1, name="arrival_timer_zero")     # timer == 0, a register
        accepted = arr.valid & arr.ready
        with m.If(accepted):
            m.d.sync += arr.valid.eq(0)
        with m.If(~arr.valid | accepted):
            with m.If(regs["tg_enable"] & timer_zero):
                salt = regs["tg_salt"]
                m.d.sync += [
                    arr.valid.eq(1),
                    arr.payload.length.eq(regs["tg_length"]),
                    arr.payload.ecn.eq(0),
                    arr.payload.flow.eq(Cat(
                        C(PROTO, 8), C(DST_PORT, 16),
                        (C(1024, 17) + flow_id)[:16] ^ salt[16:32],
                        C(DST_IP, 32),
                        (C(SRC_BASE, 32) + flow_id)[:32] ^ salt)),
                    timer.eq(regs["tg_arrival_period"] - 1),
                    timer_zero.eq(regs["tg_arrival_period"] == 1),
                    # ``rr_id + 1 >= flows`` as a compare beside the increment, not after it
                    rr_id.eq(Mux(rr_id >= s.fm1, 0, rr_id + 1)),
                ]
            with m.Elif(~timer_zero):
                m.d.sync += [timer.eq(timer - 1), timer_zero.eq(timer == 1)]
        with m.If(accepted):
            m.d.sync += regs["tg_sent"].eq(regs["tg_sent"] + 1)
        with m.If(arr.valid & ~arr.ready):
            m.d.sync += regs["tg_stalls"].eq(regs["tg_stalls"] + 1)
        with m.If(rr_id >= regs["tg_flows"]):        # tg_flows was lowered
            m.d.sync += rr_id.eq(0)
        m.d.comb += self.arrival_pulse.eq(accepted)

    def _departures(self, m, s):
        """The verdicts (always taken; their pulses for the LEDs), the backlog they and the
        departures leave, and a departure every ``tg_drain_period`` clocks while it is not
        zero."""
        regs = s.regs
        v = self.verdicts
        m.d.comb += v.ready.eq(1)
        act = v.payload.action
        m.d.comb += [self.drop_pulse.eq(v.valid & ((act == DROP_EARLY) | (act == DROP_FORCED))),
                     self.mark_pulse.eq(v.valid & (act == MARK))]
        # The backlog counts a verdict a clock after it arrives (registered: the decode stays
        # out of the counter's path) and a departure in the clock it is sent: it is never
        # above the packets the queue manager holds, so no departure finds its queue empty.
        # Its next value is a select of registers (backlog, + 1, - 1) and "not zero" a flag
        # beside it, so that the drain's decision and the count are a few LUTs, no adder.
        enq = Signal()
        m.d.sync += enq.eq(v.valid & ((act == ENQUEUE) | (act == MARK)))
        backlog = regs["tg_backlog"]
        nonzero = Signal()
        dep = self.departures
        drain_timer = Signal(16)
        timer_zero = Signal(init=1)              # drain_timer == 0
        dep_go = Signal()
        drain = regs["tg_drain_period"]
        drain_on = Signal()
        m.d.sync += drain_on.eq(drain != 0)
        # the drain runs while the generator is off too: the queue empties after a run
        with m.If(drain_on):
            with m.If(timer_zero):
                m.d.comb += dep_go.eq(nonzero)
                m.d.sync += [drain_timer.eq(drain - 1), timer_zero.eq(drain == 1)]
            with m.Else():
                m.d.sync += [drain_timer.eq(drain_timer - 1), timer_zero.eq(drain_timer == 1)]
        # a departure is valid for one clock (the port always takes it), so its length is
        # the live register, not a register of its own
        m.d.sync += dep.valid.eq(dep_go)
        m.d.comb += dep.payload.length.eq(regs["tg_length"])
        _, backlog_p1, backlog_m1 = step_counter(m, backlog, enq, dep_go)
        # "not zero" selected as the next value is, from each candidate's compare (registers),
        # so no zero test follows the select
        m.d.sync += nonzero.eq(Mux(enq == dep_go, nonzero,
                                   Mux(enq, backlog_p1 != 0, backlog_m1 != 0)))
        m.d.comb += self.backlog_nonzero.eq(nonzero)
