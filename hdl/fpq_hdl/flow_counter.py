"""Flow counter: the bit vector with random clearing and the flow count N (FPQ paper Fig. 4)."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .flow_hash import reduce_index
from .block_ram import BlockRAM
from .layouts import config_layout
from .random_source import RandomSource

__all__ = ["FlowCounter", "step_counter"]


def step_counter(m, value, up, down, clear=None, next=None):
    """Update ``value``, a counter that moves by one (``up``, ``down``, both or neither) and
    to 0 on ``clear``, and return ``(next, value + 1, value - 1)``. Its next value is a
    select of registers (``value`` and ``value`` +- 1, kept beside it), so no adder lies
    between the events and the next value, nor between it and what the user computes of
    it; the +- 1 registers serve compares that must follow the select. They are selected
    too, from ``value`` and their own +- 1: those adders start at registers and run while
    the events arrive, so no carry chain follows the select. ``next``: a signal to drive
    with the next value (default: a new one)."""
    name, width = value.name, len(value)
    p1 = Signal(width, init=1, name=f"{name}_p1")
    m1 = Signal(width, init=(1 << width) - 1, name=f"{name}_m1")
    if next is None:
        next = Signal(width, name=f"{name}_next")

    def select(stay, if_up, if_down, if_clear):
        step = Mux(up == down, stay, Mux(up, if_up, if_down))
        return step if clear is None else Mux(clear, if_clear, step)
    m.d.comb += next.eq(select(value, p1, m1, 0))
    m.d.sync += [p1.eq(select(p1, p1 + 1, value, 1)),
                 m1.eq(select(m1, value, m1 - 1, (1 << width) - 1)),
                 value.eq(next)]
    return next, p1, m1


class FlowCounter(wiring.Component):
    """Bit-exact ``fpq.flow_counter.FlowCounter`` at one arrival and one clear per clock.

    Each clock is a slot of the queue manager's pipeline, which may hold an arrival's set and
    a clear (the clear first) or a wipe. Clears are timed outside (``clear``, from a
    ``PeriodicTimer`` at cycle 0): this block draws the clear's random number in that clock
    (``rng_clear`` steps with it), reduces it to an index and applies it ``set_delay`` clocks
    later, in the same slot as an arrival accepted in the clock of the clear.

    **Vector (cycles ``set_delay`` .. ``set_delay + 3``).** Two read-modify-writes of one bit
    per clock, each needing the old bit for N. It is the XOR two-write-port memory built from
    1R1W RAMs, portable to iCE40 as well as ECP5: banks P and Q, bit = P ^ Q; a set writes
    ``P[a] = ~Q[a]`` and a clear ``Q[b] = P[b]``, unconditionally (the write enables are
    registers, not functions of the old bits: the bit ends 1 or 0 whatever it was); each bank
    is two RAMs (one per read port). A clear and a set of the same index in one slot is the
    clear first: the bit ends 1 and N changes as for the set alone, so the clear's write is
    dropped. The RAMs have read latency 2 (``BlockRAM``, output register) and the writes are
    registered; reads are not transparent, so the bank words written by the three previous
    slots are forwarded (the write data), and the old bit for N is forwarded logically: after
    a set at an address the bit is 1, after a clear 0, whatever the RAM read. The same flow
    on every clock counts once and nothing stalls.

    * cycle ``set_delay``: read addresses (set and clear index, registered);
    * ``set_delay + 1``: RAM output register; address matches with the writes in flight;
    * ``set_delay + 2``: old bits, write data, N's increment/decrement (registered);
    * ``set_delay + 3``: writes; ``N += inc - dec`` (or 0 after a wipe); ``n_raw`` is valid at
      ``set_delay + 4``, the popcount after this slot's clear and set.

    **Wipe.** ``wipe`` (cycle 0; also out of reset) zeroes the vector: ``busy`` is high from
    the next clock until an arrival accepted after it finds the vector empty (``vec_bits +
    2`` clocks; out of reset from the first clock); arrivals must not be accepted
    meanwhile. Clears of slots during the wipe draw their number and clear nothing; N is 0
    from the wipe's slot on.

    Throughput: one arrival and one clear per clock.

    Parameters
    ----------
    build : fpq.Build
        ``build.vec_bits`` is the vector size.
    set_delay : int
        Clocks from the slot's cycle 0 to ``set_valid``/``set_index`` (>= 4).
    ram_style : str
        ``BlockRAM`` style of the four vector RAMs ("generic" or "ecp5").
    ram : class
        The vector RAMs' class (default ``BlockRAM``), built as ``ram(1, vec_bits,
        ram_style)``: a seam for tests, which wrap a faulty RAM around the real one.

    Attributes
    ----------
    config : In(config_layout(build))
        Uses ``v_max``, ``n_cap`` and ``rng_clear_state`` (loaded on ``load_rng``).
    load_rng : In(1)
        Load the clear generator from ``rng_clear_state`` (``RandomSource.load``: the clear of
        this clock already draws from the new seed).
    clear : In(1)
        A clear in this clock's slot (cycle 0).
    wipe : In(1)
        Wipe the vector in this clock's slot (a commit that changes ``v_max`` or the key).
    set_valid, set_index : In
        The slot's arrival and its vector index, ``set_delay`` clocks after cycle 0.
    n_raw : Out(17)
        N after the slot that was at cycle 0 ``set_delay + 4`` clocks ago.
    n_next : Out(17)
        What ``n_raw`` shows at the next clock (the input of its register), for users that
        register a function of N without a clock more (``DropProbability``).
    over : Out(1)
        ``n_raw > n_cap``, a register beside ``n_raw`` (a commit's new cap shows two clocks
        after it: arrivals, which use it, come later).
    busy : Out(1)
        A wipe is under way: accept no arrival.
    busy_next : Out(1)
        ``busy`` in the next clock (for a register of the arrival port's ready).
    """

    LATENCY = 4      # clocks from set_index to n_raw

    def __init__(self, build, set_delay, ram_style="generic", ram=BlockRAM):
        assert set_delay >= 4
        self.ram_style = ram_style
        self._ram = ram
        vec_bits = build.vec_bits
        self.vec_bits = vec_bits
        self.set_delay = set_delay
        self.index_bits = (vec_bits - 1).bit_length()
        super().__init__({
            "config": In(config_layout(build)), "load_rng": In(1), "clear": In(1),
            "wipe": In(1),
            "set_valid": In(1), "set_index": In(self.index_bits),
            "n_raw": Out(17), "n_next": Out(17), "over": Out(1), "busy": Out(1),
            "busy_next": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        clr_index, clr_v0, wipe_s0 = self._clear_index(m)
        set_w, clr_w, wipe2 = self._vector(m, clr_index, clr_v0, wipe_s0)
        self._count(m, set_w, clr_w, wipe2)
        return m

    def _clear_index(self, m):
        """Cycles 0 .. set_delay: the clear's random number and index, aligned with the set
        index; the wipe's wait at the port. Returns the clear's index, its valid and the
        wipe at cycle set_delay."""
        cfg = self.config
        ib = self.index_bits
        # ---- cycle 0: the clear's random number; the wipe's wait at the port ---------------
        m.submodules.rng = rng = RandomSource()
        m.d.comb += [rng.seed.eq(cfg.rng_clear_state), rng.load.eq(self.load_rng),
                     rng.step.eq(self.clear)]
        # out of reset the vector is wiped (the documented reset state is an empty vector;
        # block RAM contents survive a reset)
        first = Signal(init=1)
        busy = Signal(init=1)
        m.d.sync += first.eq(0)
        wipe0 = self.wipe | first
        # the wipe's writes run in the clocks set_delay + 3 .. set_delay + 2 + vec_bits after
        # its slot; an arrival accepted vec_bits + 3 clocks after it reads the vector after
        # the last of them
        wait = Signal(range(self.vec_bits + 3))
        m.d.comb += [self.busy.eq(busy), self.busy_next.eq(wipe0 | (busy & (wait != 1)))]
        m.d.sync += busy.eq(self.busy_next)
        with m.If(wipe0):
            m.d.sync += wait.eq(self.vec_bits + 2)
        with m.Elif(busy):
            m.d.sync += wait.eq(wait - 1)

        # ---- cycles 1 .. set_delay - 1: the clear's index, aligned with the set index --------
        # ``reduce_index`` takes its operand into the multipliers' input registers and gives
        # the index three clocks later
        # v_max travels with the number: a commit that changes it applies from its own
        # clock's clear on, not to the clears already in flight
        r = Signal(32)
        vm = Signal.like(cfg.v_max, name="clr_v_max")
        cv, wp = Signal(), Signal()
        m.d.sync += [r.eq(rng.value), vm.eq(cfg.v_max), cv.eq(self.clear), wp.eq(wipe0)]
        for i in range(self.set_delay - 4):
            r_n, cv_n, wp_n = Signal(32, name=f"r{i}"), Signal(name=f"clr_v{i}"), \
                Signal(name=f"wipe{i}")
            vm_n = Signal.like(vm, name=f"clr_v_max{i}")
            m.d.sync += [r_n.eq(r), vm_n.eq(vm), cv_n.eq(cv), wp_n.eq(wp)]
            r, vm, cv, wp = r_n, vm_n, cv_n, wp_n
        clr_index = reduce_index(m, r, vm, ib, self.ram_style, "clr_index")
        for i in range(3):
            cv_n, wp_n = Signal(name=f"clr_va{i}"), Signal(name=f"wipe_a{i}")
            m.d.sync += [cv_n.eq(cv), wp_n.eq(wp)]
            cv, wp = cv_n, wp_n
        return clr_index, cv, wp                  # cycle set_delay

    def _vector(self, m, clr_index, clr_v0, wipe_s0):
        """The vector: an XOR two-write-port memory from 1R1W RAMs, with the writes of the
        three slots before a read forwarded. Returns whether the set and the clear change
        N, and the wipe, at cycle set_delay + 2."""
        # the signals one stage hands to the next, by name
        s = SimpleNamespace()
        # a wipe's writes under way and their address (``_wipe_counter``)
        wiping = Signal()
        wcount = Signal(self.index_bits)
        s.wiping, s.wcount = wiping, wcount
        self._reads(m, s, clr_index)
        self._slot(m, s, clr_v0, wipe_s0)
        self._in_flight(m, s)
        self._old_bits(m, s)
        self._wipe_counter(m, s)
        self._writes(m, s)
        return s.set_w, s.clr_w, s.wipe2

    def _reads(self, m, s, clr_index):
        """Cycle set_delay: the four RAMs (bank P or Q, read at the set's index (a) or the
        clear's (b)) and their read addresses."""
        rams = {}
        for name in ("pa", "pb", "qa", "qb"):        # bank P or Q, read at set (a) or clear (b)
            rams[name] = m.submodules[f"bank_{name}"] = self._ram(1, self.vec_bits,
                                                                  self.ram_style)
        a0, b0 = self.set_index, clr_index
        m.d.comb += [rams["pa"].r_addr.eq(a0), rams["qa"].r_addr.eq(a0),
                     rams["pb"].r_addr.eq(b0), rams["qb"].r_addr.eq(b0)]
        s.rams, s.a0, s.b0 = rams, a0, b0

    def _slot(self, m, s, clr_v0, wipe_s0):
        """Cycles set_delay + 1 and + 2: the slot registered along (the set, the clear, the
        wipe, their addresses, whether the read saw a wipe under way), the set and the clear
        at one index (``same``), and the clear's write: ``cw`` (not overridden by the set),
        ``cwe`` (its enable)."""
        ib = self.index_bits
        a0, b0 = s.a0, s.b0
        # cycle set_delay + 1: the RAMs' output register; the slot registered
        sv1, cv1, wipe1, rw1 = Signal(), Signal(), Signal(), Signal()
        # the set and the clear at one index: the match in two registered halves, as the
        # address matches of the writes in flight (``_in_flight``)
        half = ib // 2
        same_lo, same_hi = Signal(), Signal()
        a1, b1 = Signal(ib), Signal(ib)
        m.d.sync += [sv1.eq(self.set_valid), cv1.eq(clr_v0), wipe1.eq(wipe_s0), a1.eq(a0),
                     b1.eq(b0), same_lo.eq(a0[:half] == b0[:half]),
                     same_hi.eq(a0[half:] == b0[half:]),
                     rw1.eq(s.wiping)]
        # cycle set_delay + 2: old bits, write data
        sv, cv2, wipe2, same, rw2 = Signal(), Signal(), Signal(), Signal(), Signal()
        a, b = Signal(ib), Signal(ib)
        m.d.sync += [sv.eq(sv1), cv2.eq(cv1), wipe2.eq(wipe1), a.eq(a1), b.eq(b1),
                     same.eq(sv1 & cv1 & same_lo & same_hi), rw2.eq(rw1)]
        cw = cv2 & ~same                              # the clear (not overridden by the set)
        # A clear whose read saw the vector during a wipe (``rw2``) writes nothing: the wipe
        # made the bit 0 and no set comes that soon after it (the port is not ready). So no
        # read ever needs a wipe's write forwarded, only the slots' own writes.
        cwe = cw & ~rw2
        s.a1, s.b1, s.a, s.b, s.sv, s.cw, s.cwe, s.rw2, s.wipe2 = a1, b1, a, b, sv, cw, cwe, \
            rw2, wipe2

    def _in_flight(self, m, s):
        """Cycles set_delay and + 1: the writes of the three slots before a read, which the
        RAM it reads does not hold yet: their enables, their addresses matched with the read
        addresses, the bank words' forwarding selects (``fw``, registers at set_delay + 2),
        and their data registers (``p1`` .. ``q3``, driven by ``_writes``)."""
        ib = self.index_bits
        half = ib // 2
        a0, b0, a1, b1, a, b = s.a0, s.b0, s.a1, s.b1, s.a, s.b
        sv, cw, cwe = s.sv, s.cw, s.cwe
        # A slot's writes are registered (their data comes from the RAMs' read through the
        # forwarding select: registering them keeps that path off the RAM's input), so a
        # slot writes at set_delay + 3. The writes of the three slots before a read are then
        # not in the RAM it reads (read at cycle set_delay, non-transparent; they write at
        # set_delay + 2, + 1 and set_delay). Their addresses are compared with the read
        # addresses at cycle set_delay, registered, and combined with their write enables at
        # set_delay + 1, registered again: at set_delay + 2 the forwarding is one select from
        # registers. ``slots[k]`` holds the enables of the slot k + 2 before (at set_delay +
        # 3 + k when the read is at + 1). The wipe's writes are not registered (they come
        # from registers): a wipe takes the ports in the clocks it writes, and a slot's write
        # in such a clock is dropped (the wipe zeroes that address later or did already;
        # the reads it would feed are the ones a wipe makes stale, ``rw2``, ``wiping``).
        slots = [(Signal(name=f"ls_en{k}"), Signal(name=f"lc_en{k}"), Signal(name=f"lc_wen{k}"))
                 for k in range(2)]
        m.d.sync += [Cat(*slots[0]).eq(Cat(sv, cw, cwe)), Cat(*slots[1]).eq(Cat(*slots[0]))]
        a3, b3 = Signal(ib), Signal(ib)
        m.d.sync += [a3.eq(a), b3.eq(b)]
        # each address match in two registered halves (the read addresses come from the
        # multipliers, a long route away: a whole-width compare after it is too deep)
        eq = {}
        for x, x0 in (("a", a0), ("b", b0)):
            for y, y_prev in (("a1", a1), ("b1", b1), ("a2", a), ("b2", b), ("a3", a3),
                              ("b3", b3)):
                lo, hi = Signal(name=f"eq_{x}_{y}_lo"), Signal(name=f"eq_{x}_{y}_hi")
                m.d.sync += [lo.eq(x0[:half] == y_prev[:half]),      # cycle set_delay
                             hi.eq(x0[half:] == y_prev[half:])]
                eq[x, y] = lo & hi
        # at set_delay + 1: the slot before is at set_delay + 2 (``sv``, ``cw``, ``cwe``), the
        # ones before that in ``slots``
        en_prev = [(sv, cw, cwe), slots[0], slots[1]]
        fw = {}
        for key, x, y, which in (("pb", "b", "a", 0), ("qa", "a", "b", 2)):
            sel = []
            for k in range(3):
                f = Signal(name=f"fwd_{key}_{k + 1}")
                m.d.sync += f.eq(en_prev[k][which] & eq[x, f"{y}{k + 1}"])
                sel.append(f)
            fw[key] = sel
        # the data of those writes: ``p1``/``q1`` are the write registers, then their past
        p1, p2, p3, q1, q2, q3 = (Signal(name=n) for n in ("p1_data", "p2_data", "p3_data",
                                                            "q1_data", "q2_data", "q3_data"))
        s.eq, s.en_prev, s.fw = eq, en_prev, fw
        s.p_data, s.q_data = (p1, p2, p3), (q1, q2, q3)

    def _old_bits(self, m, s):
        """Cycle set_delay + 2: the bank words at the read addresses with the writes in
        flight forwarded (``pb``, ``qa``: the write data), the old bits for N (forwarded
        logically: after a set the bit is 1, after a clear 0), and whether the set and the
        clear change N (``set_w``, ``clr_w``)."""
        rams, eq, en_prev, fw = s.rams, s.eq, s.en_prev, s.fw
        (p1, p2, p3), (q1, q2, q3) = s.p_data, s.q_data
        sv, cw, rw2, wiping = s.sv, s.cw, s.rw2, s.wiping

        def forward(key, d1, d2, d3):
            f1, f2, f3 = fw[key]
            return Mux(f1, d1, Mux(f2, d2, Mux(f3, d3, rams[key].r_data)))
        pb = forward("pb", p1, p2, p3)
        qa = forward("qa", q1, q2, q3)

        def logical(x, tag):
            # the logical bit at the read address: the latest set (1) or clear (0) of the three
            # slots before (within a slot the set is later than the clear), else the RAMs'
            hit, val = Signal(name=f"hit_{tag}"), Signal(name=f"val_{tag}")
            s_, c_ = [], []
            for k in range(3):
                s_.append(en_prev[k][0] & eq[x, f"a{k + 1}"])
                c_.append(en_prev[k][1] & eq[x, f"b{k + 1}"])
            m.d.sync += [hit.eq(s_[0] | c_[0] | s_[1] | c_[1] | s_[2] | c_[2]),
                         val.eq(s_[0] | (~c_[0] & (s_[1] | (~c_[1] & s_[2]))))]
            return hit, val
        hit_a, val_a = logical("a", "a")
        hit_b, val_b = logical("b", "b")
        old_a = Mux(hit_a, val_a, rams["pa"].r_data ^ rams["qa"].r_data)
        old_b = Mux(hit_b, val_b, rams["pb"].r_data ^ rams["qb"].r_data)
        # N: a set counts if the bit was 0 (with ``same`` too: the clear, dropped, would have
        # taken one off a 1 that the set puts back); a clear counts if the bit was 1, and not
        # while or just after the vector was wiped (its read saw the RAM before the wipe's
        # writes: ``rw2``)
        s.set_w = sv & ~old_a
        s.clr_w = cw & old_b & ~rw2 & ~wiping
        s.pb, s.qa = pb, qa

    def _wipe_counter(self, m, s):
        """From cycle set_delay + 3 of a wipe's slot: ``wiping`` for ``vec_bits`` clocks, the
        address ``wcount`` the wipe writes in each."""
        wiping, wcount = s.wiping, s.wcount
        with m.If(s.wipe2):
            m.d.sync += [wiping.eq(1), wcount.eq(0)]
        with m.Elif(wiping):
            m.d.sync += wcount.eq(wcount + 1)
            with m.If(wcount == self.vec_bits - 1):
                m.d.sync += wiping.eq(0)

    def _writes(self, m, s):
        """Cycle set_delay + 3: the slot's writes, registered (``p1``, ``q1`` their data: a
        set writes ``P[a] = ~Q[a]``, a clear ``Q[b] = P[b]``), or the wipe's zeros, into both
        RAMs of each bank."""
        ib = self.index_bits
        rams, wiping, wcount = s.rams, s.wiping, s.wcount
        (p1, p2, p3), (q1, q2, q3) = s.p_data, s.q_data
        # the slot's writes, registered (``p1``, ``q1`` their data)
        p_en1, q_en1 = Signal(), Signal()
        p_addr1, q_addr1 = Signal(ib), Signal(ib)
        m.d.sync += [p_en1.eq(s.sv), p_addr1.eq(s.a), p1.eq(~s.qa),
                     q_en1.eq(s.cwe), q_addr1.eq(s.b), q1.eq(s.pb),
                     p2.eq(p1), p3.eq(p2), q2.eq(q1), q3.eq(q2)]
        p_addr, q_addr = Mux(wiping, wcount, p_addr1), Mux(wiping, wcount, q_addr1)
        p_en, p_data = p_en1 | wiping, p1 & ~wiping
        q_en, q_data = q_en1 | wiping, q1 & ~wiping
        for name in ("pa", "pb"):
            m.d.comb += [rams[name].w_en.eq(p_en), rams[name].w_addr.eq(p_addr),
                         rams[name].w_data.eq(p_data)]
        for name in ("qa", "qb"):
            m.d.comb += [rams[name].w_en.eq(q_en), rams[name].w_addr.eq(q_addr),
                         rams[name].w_data.eq(q_data)]

    def _count(self, m, set_w, clr_w, wipe2):
        """N = popcount, counted up and down from the set's and the clear's changes, and
        ``N > n_cap`` beside it."""
        inc, dec, wipe3 = Signal(), Signal(), Signal()
        m.d.sync += [inc.eq(set_w), dec.eq(clr_w), wipe3.eq(wipe2)]
        n = Signal(17)
        # n_next a select of registers, without an adder in front of the user's function of
        # it (DropProbability's cap compare)
        _, n_p1, n_m1 = step_counter(m, n, inc, dec, clear=wipe3, next=self.n_next)
        m.d.comb += self.n_raw.eq(n)
        # ``n > n_cap`` as a register beside n: each candidate's compare (n, n + 1, n - 1, all
        # registers) selected as n_next is, so no compare follows the select. Each compare
        # is ``~(n_k < n_cap + 1)`` with ``n_cap + 1`` a register of n's width: a chain of
        # registers and one LUT (Yosys compares the top bits there), and the select one LUT
        # after them. ``n_cap < n_k`` with the cap zero-extended takes a LUT level more.
        cap1 = Signal(len(n), name="n_cap_plus_1", init=1)       # out of reset n = 0: not over
        m.d.sync += cap1.eq(self.config.n_cap + 1)
        over_k = [~(n_k < cap1) for n_k in (n, n_p1, n_m1)]
        m.d.sync += self.over.eq(Mux(wipe3, 0, Mux(inc == dec, over_k[0],
                                                   Mux(inc, over_k[1], over_k[2]))))
