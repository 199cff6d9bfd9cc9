"""Flow counter: the bit vector with random clearing and the flow count N (FPQ paper Fig. 4)."""

from amaranth import *
from amaranth.lib import wiring, memory
from amaranth.lib.wiring import In, Out

from fpq.formats import TIME_BITS, CLEAR_PERIOD, RAND_BITS

from .flow_hash import reduce_index
from .block_ram import BlockRAM
from .layouts import config_layout, check_optimise
from .random_source import RandomSource

__all__ = ["FlowCounter"]

_FX = CLEAR_PERIOD.frac_bits
_RING = TIME_BITS + _FX          # the clear schedule lives in UQ48.16 ticks, modulo 2**64


class FlowCounter(wiring.Component):
    """Bit-exact ``fpq.flow_counter.FlowCounter`` at one arrival per clock.

    It has two parts at two places of the queue manager's pipeline.

    **Clear schedule (cycle 0, at the arrival port).** Which clears an arrival owes depends
    only on timestamps, never on the vector, so it is decided where the arrival enters. Three
    64-bit registers hold ``next_due``, ``next_due + clear_period`` and ``next_due +
    flush_after``, each minus one; each clock compares the arrival's ``ts << 16`` with all
    three in parallel (a plain 48-bit carry chain each: with the registers one below the
    compare points, the fractional bits drop out of the compare, see ``elaborate``; the
    updates are ``nd <- nd_p``, ``nd_p += period``, no add in series with a compare). In every
    clock in which the schedule does not move, the two precomputed registers are re-derived
    from ``next_due`` with the current configuration, so a configuration change (made while
    no arrival is accepted, for at least one clock: the register file's commit holds the
    port) keeps ``next_due`` and continues with the new ``clear_period`` and
    ``flush_after``, as ``fpq.QueueManager.configure`` does. ``restart`` loads the schedule
    a clock later (no arrival is accepted in these two clocks).
    Outcomes per clock:

    * nothing owed: the arrival is accepted;
    * one clear owed: a clear (random index from its own xorshift128) and the arrival go down
      the pipeline in the same slot, clear first; so clears due on every clock cost nothing;
    * more than one owed: a clear goes alone and the arrival waits (``ready`` low): the hardware
      works off the backlog one clear per clock, which does not change any verdict;
    * backlog >= ``flush_after``: a wipe slot goes down and ``ready`` stays low ``vec_bits + 2``
      clocks while the vector is zeroed (a backlog of 8 full sweeps: rare by construction).

    Out of reset the same wipe runs (``busy`` high, ``ready`` low for the first
    ``vec_bits + 3`` clocks): block RAM keeps its contents across a reset, and the reset
    state is an empty vector with N = 0.

    In paper-literal mode the last clear of an arrival restarts the schedule at ``ts + period``.

    **Vector (cycles ``set_delay`` .. ``set_delay + 3``).** Two read-modify-writes of one bit
    per clock (the arrival's set and one clear), each needing the old bit for N. It is the
    XOR two-write-port memory built from 1R1W RAMs, portable to iCE40 as well as ECP5: banks
    P and Q, bit = P ^ Q; a set writes ``P[a] = ~Q[a]``, a clear writes ``Q[b] = P[b]``; each
    bank is two RAMs (one per read port). A clear and a set of the same index in
    one slot is the clear first: the bit ends 1 and N changes as for the set alone, so the
    clear's write is dropped. The RAMs have read latency 2 (``BlockRAM``: output register, for
    Fmax); reads are not transparent, so the writes of the two previous clocks are forwarded
    (two registers per bank), which is all the read-to-write distance needs: the same flow on
    every clock counts exactly once and nothing stalls.

    * cycle ``set_delay``: read addresses (set and clear index, registered);
    * ``set_delay + 1``: RAM output register;
    * ``set_delay + 2``: old bits, forwarding, writes, N increment/decrement (registered);
    * ``set_delay + 3``: ``N += inc - dec`` (or 0 after a wipe); ``n_raw`` is valid at
      ``set_delay + 4``, the popcount after this slot's clear and set.

    Throughput: one arrival per clock with up to one clear owed per arrival.

    Parameters
    ----------
    build : fpq.Build
        ``build.vec_bits`` is the vector size.
    set_delay : int
        Clocks from the accept (cycle 0) to ``set_valid``/``set_index`` (>= 3).
    ram_style : str
        ``BlockRAM`` style of the four vector RAMs ("generic" or "ecp5").
    optimise : str
        "speed" (default): the clear schedule as above, three 64-bit registers and no adder
        in series with a compare. "area": one register, ``next_due - 1``; the compare points
        ``+ clear_period`` and ``+ flush_after`` are added in front of their compares each
        clock (three adders instead of seven; on the iCEBreaker design 426 logic cells fewer,
        2026-11-24). The same clears and verdicts, clock for clock.

    Attributes
    ----------
    config : In(config_layout(build))
        Uses ``v_max``, ``clear_period``, ``flush_after``, ``clear_literal`` (stable while
        arrivals are in flight) and ``rng_clear_state`` (loaded on ``load_rng``).
    restart : In(1)
        Restarts the schedule: ``next_due = clear_period`` (the model's reset state).
    wipe_req : In(1)
        Strobe: wipe the vector before the next arrival (a commit that changes ``v_max``).
    arrival_valid, ts : In
        The arrival at the port (cycle 0).
    can_accept : In(1)
        Room downstream (the verdict FIFO's credit).
    ready : Out(1)
        The arrival may be accepted this clock (may depend on ``arrival_valid``, ``ts``).
    set_valid, set_index : In
        The accepted arrival's vector index, ``set_delay`` clocks after the accept.
    n_raw : Out(17)
        N after the slot that was at cycle 0 ``set_delay + 4`` clocks ago.
    n_next : Out(17)
        What ``n_raw`` shows at the next clock (the input of its register), for users that
        register a function of N without a clock more (``DropProbability``).
    busy : Out(1)
        A wipe is pending or under way.
    """

    LATENCY = 4      # clocks from set_index to n_raw

    def __init__(self, build, set_delay, ram_style="generic", optimise="speed"):
        assert set_delay >= 3
        self.ram_style = ram_style
        self.optimise = check_optimise(optimise)
        vec_bits = build.vec_bits
        self.vec_bits = vec_bits
        self.set_delay = set_delay
        self.index_bits = (vec_bits - 1).bit_length()
        super().__init__({
            "config": In(config_layout(build)), "load_rng": In(1),
            "restart": In(1), "wipe_req": In(1),
            "arrival_valid": In(1), "ts": In(TIME_BITS), "can_accept": In(1),
            "ready": Out(1),
            "set_valid": In(1), "set_index": In(self.index_bits),
            "n_raw": Out(17), "n_next": Out(17), "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.rng = rng = RandomSource()
        cfg = self.config
        m.d.comb += [rng.seed.eq(cfg.rng_clear_state), rng.load.eq(self.load_rng)]

        # ---- clear schedule (cycle 0) -------------------------------------------------------
        period = Signal(_RING)
        m.d.comb += period.eq(cfg.clear_period)
        # The schedule registers hold ``next_due - 1``, ``next_due + clear_period - 1`` and
        # ``next_due + flush_after - 1`` (modulo 2**64). Why minus one: ``now - x`` (the low 16
        # bits of ``now = ts << 16`` are zero) is negative modulo 2**64 iff ``ts - x_hi -
        # (x_lo != 0)`` is modulo 2**48, and with ``y = x - 1`` that is ``ts - y_hi - 1`` =
        # ``ts + ~y_hi``: each compare is a plain 48-bit carry chain with no borrow from the
        # fractional bits, and every update is still a two-input add.
        nd, nd_p, nd_f = (Signal(_RING, name=n) for n in ("next_due_m1", "next_due_p_m1",
                                                             "next_due_f_m1"))
        stall_bits = (self.vec_bits + 2).bit_length()
        wait = Signal(stall_bits)
        waiting = Signal()                # wait != 0, registered
        # out of reset the vector is wiped (the documented reset state is an empty vector;
        # block RAM contents survive a reset)
        pending_wipe = Signal(init=1)
        # functions of the configuration only, registered (configuration changes only while
        # no arrival is accepted, at least one clock before the next: see RegisterFile):
        # period - 1, 2 period - 1 and period + flush_after - 1 (the last as one carry-save
        # step, ``p + f + ~0 = ~(p ^ f) + ((p | f) << 1)``, and one adder)
        pm1 = Signal(_RING, name="period_m1")
        flush = cfg.flush_after
        m.d.sync += pm1.eq(period - 1)
        if self.optimise == "speed":
            p2m1, pfm1 = Signal(_RING, name="period2_m1"), Signal(_RING, name="period_f_m1")
            m.d.sync += [p2m1.eq((period << 1) - 1),
                         pfm1.eq(~(period ^ flush) + ((period | flush) << 1))]
        # a restart loads the schedule a clock later, from those registers (so that a
        # restart in the same clock as a configuration write sees the new configuration);
        # no arrival is accepted in either clock
        restart_d = Signal()
        m.d.sync += restart_d.eq(self.restart)

        def behind(y):
            # now >= y + 1 (modulo 2**64, signed): ts + ~y_hi as a 48-bit sum is >= 0
            return ~(self.ts + ~y[_FX:])[TIME_BITS - 1]
        owed = behind(nd)
        more = behind(nd_p)
        flushed = owed & ~cfg.flush_after[_RING - 1] & behind(nd_f)
        go = (self.arrival_valid & self.can_accept & ~waiting & ~pending_wipe &
              ~self.restart & ~restart_d)
        clear0 = Signal()
        wipe0 = Signal()
        jump = Signal()
        advance = Signal()
        m.d.comb += self.busy.eq(pending_wipe | waiting)

        with m.If(go):
            with m.If(flushed):
                m.d.comb += [wipe0.eq(1), jump.eq(1)]
            with m.Elif(owed):
                m.d.comb += clear0.eq(1)
                with m.If(more):
                    m.d.comb += advance.eq(1)
                with m.Else():
                    m.d.comb += [self.ready.eq(1), jump.eq(cfg.clear_literal),
                                 advance.eq(~cfg.clear_literal)]
            with m.Else():
                m.d.comb += self.ready.eq(1)
        with m.If(~waiting & pending_wipe):
            m.d.comb += wipe0.eq(1)
            m.d.sync += pending_wipe.eq(0)
        with m.If(self.wipe_req):
            m.d.sync += pending_wipe.eq(1)

        with m.If(wipe0):
            m.d.sync += [wait.eq(self.vec_bits + 2), waiting.eq(1)]
        with m.Elif(waiting):
            m.d.sync += [wait.eq(wait - 1), waiting.eq(wait != 1)]

        now = Cat(Const(0, _FX), self.ts)
        if self.optimise == "speed":
            def candidates(tag, values):
                # the next values of (nd, nd_p, nd_f) in one case, as signals (driven
                # outside the case's condition, so that only the final select depends on it)
                out = []
                for reg, v in zip((nd, nd_p, nd_f), values):
                    if v is not None and not isinstance(v, Signal):
                        sig = Signal(_RING, name=f"{reg.name}_{tag}")
                        m.d.comb += sig.eq(v)
                        v = sig
                    out.append(v)
                return out

            def load(values):
                for reg, v in zip((nd, nd_p, nd_f), values):
                    if v is not None:
                        m.d.sync += reg.eq(v)

            at_jump = candidates("jump", (now + pm1, now + p2m1, now + pfm1))
            at_advance = candidates("advance", (nd_p, nd_p + period, nd_f + period))
            at_rest = candidates("refresh", (None, nd + period, nd + cfg.flush_after))
            with m.If(restart_d):
                load((pm1, p2m1, pfm1))
            with m.Elif(jump):
                load(at_jump)
            with m.Elif(advance):
                load(at_advance)
            with m.Else():
                # no step of the schedule: re-derive the precomputed compare points from
                # next_due, so that a commit that changes clear_period or flush_after (applied
                # while no arrival is accepted) keeps next_due and continues with the new
                # period, as the model's configure() does
                load(at_rest)
        else:
            # area: the two compare points are sums of ``next_due - 1`` and the current
            # configuration in front of their compares (an adder in series with each), and
            # ``next_due + period - 1`` is also the advanced value: three adders and one
            # 64-bit register instead of seven and three
            m.d.comb += [nd_p.eq(nd + period), nd_f.eq(nd + cfg.flush_after)]
            with m.If(restart_d):
                m.d.sync += nd.eq(pm1)
            with m.Elif(jump):
                m.d.sync += nd.eq(now + pm1)
            with m.Elif(advance):
                m.d.sync += nd.eq(nd_p)

        # ---- clear index: r -> (r * v_max) >> 32, aligned with the set index -------------
        # the generator steps a clock after its clear, from the registered ``clr_v`` (a small
        # fan-out for the compare's result); a clear in the clock in between takes the
        # number after that step
        clr_v = Signal()
        m.d.comb += rng.step.eq(clr_v)
        m.d.sync += clr_v.eq(clear0)
        # the random number of the clear, registered set_delay - 3 times; the last register
        # is the input register of the index multiply (``reduce_index``)
        r = Mux(clr_v, rng.value_next, rng.value)
        wipe_v = Signal()
        m.d.sync += wipe_v.eq(wipe0)
        for i in range(self.set_delay - 3):
            clr_v_n, r_n, wipe_n = Signal(name=f"clr_v{i}"), Signal(32, name=f"r{i}"), \
                Signal(name=f"wipe{i}")
            m.d.sync += [clr_v_n.eq(clr_v), r_n.eq(r), wipe_n.eq(wipe_v)]
            clr_v, r, wipe_v = clr_v_n, r_n, wipe_n
        clr_index = reduce_index(m, r, cfg.v_max, self.index_bits, self.ram_style, "clr_index")
        clr_v0 = Signal()          # cycle set_delay
        wipe_s0 = Signal()
        # two more register stages for the valid/wipe bits (the multiply takes two)
        cv_a, wp_a = Signal(), Signal()
        m.d.sync += [cv_a.eq(clr_v), wp_a.eq(wipe_v)]
        m.d.sync += [clr_v0.eq(cv_a), wipe_s0.eq(wp_a)]

        # ---- vector: XOR two-write-port memory from 1R1W RAMs -----------------------------
        rams = {}
        for name in ("pa", "pb", "qa", "qb"):        # bank P or Q, read at set (a) or clear (b)
            rams[name] = m.submodules[f"bank_{name}"] = BlockRAM(1, self.vec_bits,
                                                                 self.ram_style)
        a0, b0 = self.set_index, clr_index
        m.d.comb += [rams["pa"].r_addr.eq(a0), rams["qa"].r_addr.eq(a0),
                     rams["pb"].r_addr.eq(b0), rams["qb"].r_addr.eq(b0)]
        # cycle set_delay + 1: the RAMs' output register
        sv1, cv1, wipe1, same1 = Signal(), Signal(), Signal(), Signal()
        a1, b1 = Signal(self.index_bits), Signal(self.index_bits)
        m.d.sync += [sv1.eq(self.set_valid), cv1.eq(clr_v0), wipe1.eq(wipe_s0), a1.eq(a0),
                     b1.eq(b0), same1.eq(self.set_valid & clr_v0 & (a0 == b0))]
        # cycle set_delay + 2: old bits, writes
        sv, cv, wipe2, same = Signal(), Signal(), Signal(), Signal()
        a, b = Signal(self.index_bits), Signal(self.index_bits)
        m.d.sync += [sv.eq(sv1), cv.eq(cv1), wipe2.eq(wipe1), a.eq(a1), b.eq(b1),
                     same.eq(same1)]

        wiping = Signal()
        wcount = Signal(self.index_bits)
        p_addr, q_addr = Mux(wiping, wcount, a), Mux(wiping, wcount, b)
        # the writes of the two previous clocks, forwarded over the non-transparent reads
        def last(name):
            return (Signal(name=f"{name}_en"), Signal(self.index_bits, name=f"{name}_addr"),
                    Signal(name=f"{name}_data"))
        p1, p2, q1, q2 = last("p1"), last("p2"), last("q1"), last("q2")

        # address matches are compared a clock early (at set_delay + 1, against the write
        # being issued now and the one issued a clock ago), so that only the enables and the
        # data muxes sit between the RAM output register and the RAM inputs
        match = {}
        for key, addr1, w_now, w1 in (("pa", a1, "p", p1), ("pb", b1, "p", p1),
                                      ("qa", a1, "q", q1), ("qb", b1, "q", q1)):
            m1, m2 = Signal(name=f"match_{key}_1"), Signal(name=f"match_{key}_2")
            match[key] = (m1, m2)
            m.d.sync += [m1.eq(addr1 == (p_addr if w_now == "p" else q_addr)),
                         m2.eq(addr1 == w1[1])]

        def forward(key, w1, w2):
            m1, m2 = match[key]
            return Mux(w1[0] & m1, w1[2], Mux(w2[0] & m2, w2[2], rams[key].r_data))
        pa = forward("pa", p1, p2)
        pb = forward("pb", p1, p2)
        qa = forward("qa", q1, q2)
        qb = forward("qb", q1, q2)
        old_a, old_b = pa ^ qa, pb ^ qb
        set_w = sv & ~old_a
        clr_w = cv & ~same & old_b

        with m.If(wipe2):
            m.d.sync += [wiping.eq(1), wcount.eq(0)]
        with m.Elif(wiping):
            m.d.sync += wcount.eq(wcount + 1)
            with m.If(wcount == self.vec_bits - 1):
                m.d.sync += wiping.eq(0)
        p_en, p_data = set_w | wiping, ~qa & ~wiping
        q_en, q_data = clr_w | wiping, pb & ~wiping
        for name in ("pa", "pb"):
            m.d.comb += [rams[name].w_en.eq(p_en), rams[name].w_addr.eq(p_addr),
                         rams[name].w_data.eq(p_data)]
        for name in ("qa", "qb"):
            m.d.comb += [rams[name].w_en.eq(q_en), rams[name].w_addr.eq(q_addr),
                         rams[name].w_data.eq(q_data)]
        m.d.sync += [Cat(*p1).eq(Cat(p_en, p_addr, p_data)), Cat(*p2).eq(Cat(*p1)),
                     Cat(*q1).eq(Cat(q_en, q_addr, q_data)), Cat(*q2).eq(Cat(*q1))]

        inc, dec, wipe3 = Signal(), Signal(), Signal()
        m.d.sync += [inc.eq(set_w), dec.eq(clr_w), wipe3.eq(wipe2)]
        n = Signal(17)
        if self.optimise == "speed":
            # n + 1 and n - 1 in registers beside n: n_next is then a select, without an
            # adder in front of the user's function of it (DropProbability's cap compare and
            # table address: the top's critical path with the adder there, 9.4 ns)
            n_p1, n_m1 = Signal(17, init=1, name="n_p1"), Signal(17, init=(1 << 17) - 1,
                                                                 name="n_m1")
            m.d.comb += self.n_next.eq(Mux(wipe3, 0, Mux(inc == dec, n, Mux(inc, n_p1, n_m1))))
            m.d.sync += [n_p1.eq(self.n_next + 1), n_m1.eq(self.n_next - 1)]
        else:
            m.d.comb += self.n_next.eq(Mux(wipe3, 0, n + inc - dec))
        m.d.sync += n.eq(self.n_next)
        m.d.comb += self.n_raw.eq(n)
        return m
