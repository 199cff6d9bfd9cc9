"""Register file: the register map of ``fpq.regmap`` on a simple memory-mapped bus."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring, data, memory
from amaranth.lib.wiring import In, Out

from fpq.config import Config
from fpq.register_specs import key_registers
from fpq.formats import QAVG, COUNTER_BITS, RATE, QPKTS_BITS, QBYTES_BITS
from fpq.queue_manager import COUNTERS
from fpq.regmap import (registers, tables, CONTROL_COMMIT, CONTROL_CLEAR_ERRORS, STATUS_BITS,
                        STATUS_REJECT_INDEX_SHIFT)

from .layouts import config_layout, fixed_registers
from .read_decode import read_decode

__all__ = ["BusSignature", "RegisterFile", "ADDR_BITS", "READ_LATENCIES", "WRITE_SETUPS",
           "READ_SETUPS"]

#: Byte-address width of the bus (the r(N) table of the largest build ends below 2**20).
ADDR_BITS = 20
#: ``RegisterFile``'s read latencies: 1 (one multiplexer) or 2 (the multiplexer in two
#: registered stages, for a fast clock).
READ_LATENCIES = (1, 2)
#: ``RegisterFile(write_setup=)`` choices: clocks ``addr`` and ``w_data`` are stable before
#: ``w_en``.
WRITE_SETUPS = (0, 1, 2, 3)
#: ``RegisterFile(read_setup=)`` choices: clocks ``addr`` is stable before ``r_en`` (and held
#: in its clock).
READ_SETUPS = (0, 1, 2)
#: Word-address bits the first stage of a two-stage read selects on (8 words per group: with
#: one-hot lines, an OR of eight ANDs is two LUT levels).
_GROUP_BITS = 3


def _registered(m, value, name):
    """``value`` through a register of its own, named ``name``."""
    reg = Signal(name=name)
    m.d.sync += reg.eq(value)
    return reg


def _first_of(items):
    """(any bad, the index of the first bad) over ``items`` ((index, bad) pairs), as a
    balanced tree of selects."""
    if not items:                          # a build that fixes every register
        return C(0, 1), C(0, 8)
    if len(items) == 1:
        i, bad = items[0]
        return bad, C(i, 8)
    half = len(items) // 2
    any_l, idx_l = _first_of(items[:half])
    any_r, idx_r = _first_of(items[half:])
    return any_l | any_r, Mux(any_l, idx_l, idx_r)


class BusSignature(wiring.Signature):
    """A simple 32-bit memory-mapped bus, from the initiator's side.

    ``addr`` is a byte address (bits 1..0 ignored). A write is ``w_en`` with ``w_data`` for one
    clock; a read is ``r_en`` for one clock and ``r_data`` is valid on the next clock (or a
    fixed number of clocks later, the target's read latency: ``RegisterFile(read_latency=2)``),
    and 0 otherwise. No wait states: a bridge (UART, AXI-Lite, Wishbone) needs only a few
    gates."""

    def __init__(self):
        super().__init__({"addr": Out(ADDR_BITS), "w_en": Out(1), "w_data": Out(32),
                          "r_en": Out(1), "r_data": In(32)})


class RegisterFile(wiring.Component):
    """The registers of ``fpq.regmap.registers(build)``, generated from that list.

    Behaviour (``fpq.regmap``'s docstring, which docs/REGISTERS.md reproduces): configuration
    registers are shadows; ``CONTROL.COMMIT`` holds the arrival port (``hold``) until the
    queue manager's pipeline is empty (``idle``), checks every shadow against its range (the
    checks are generated from the map's ``lo``/``hi``, plus ``red_max_th >= red_min_th + 1``)
    and applies them all in one clock, or rejects the commit (``STATUS.COMMIT_REJECTED``,
    ``STATUS.REJECT_INDEX`` = the first bad register's index, nothing changes). A commit that
    changes ``v_max`` wipes the vector; one that changes a key (``fpq.config.key_registers``)
    wipes it and pulses ``rekey`` (live re-key: the queue manager holds the flow count); one
    that changes a ``rng_*_state`` reloads that generator (one clock after the apply, so the
    generator sees the new seed). Table writes go
    to the inactive bank; a commit after a table write swaps that table's banks. Reads of a
    table return 0 (a host read port would cost a second copy of each table RAM). Writes to
    read-only or unmapped addresses, a config value wider than its register (the shadow keeps
    its old value and a flag rejects every commit until a value that fits is written) and a
    ``control`` write with undefined bits set all set ``STATUS.BAD_WRITE`` and change nothing
    else; ``CONTROL.CLEAR_ERRORS`` clears the sticky bits. Counters are 64 bits; a write to either word clears the counter. Reads
    of configuration registers return the shadow, except those of secret registers
    (``Register.secret``: the hash key, and any register computed from a field declared
    ``secret``), which return 0 whether configurable or fixed: the read multiplexer has no
    input from them, so no bus in front of this file (AXI4-Lite, Wishbone, the boards' UART
    bridge) can read a key back. Out of reset the shadows and the active configuration
    are the map's reset values, the build's defaults (its key registers hold its power-on
    keys, ``Build.power_on_keys``, not the public default keys), and the generators and
    clear schedule are loaded from them; at
    power-on both banks of the r(N) table hold the defaults' table too (the RAM's initial
    contents, ``DropProbability``), and ``STATUS.TABLES_DEFAULT`` says whether the active
    bank still does (1 until the first commit that swaps in a bank the host wrote; after a
    reset, whether bank 0, active again, was ever written).

    Latency: reads ``read_latency`` clocks (1 or 2); a write applies ``write_latency``
    clocks after ``w_en`` (0, or 1 with ``write_setup`` 3): its word's shadow takes the value
    at the end of that clock (a read whose ``r_en`` is in a later clock returns it), and the
    counter clear and ``clear_max_queue`` strobes, ``CONTROL``'s effects and ``BAD_WRITE``
    come in that clock; a commit applies 2 clocks after ``idle``
    and at least 4 after the last bus write (the checks registered in two stages).
    Throughput: one bus access per clock.

    Parameters
    ----------
    build : fpq.Build
    const_rom : bool
        Read the constant words (``id``, ``build``, the registers the build fixes) from a
        ROM instead of the read multiplexer: the same data in the same clock, for fewer logic
        cells where the build fixes many registers (on the iCEBreaker, 2 block RAMs for about
        100 logic cells). Default off.
    read_latency : int
        One of ``READ_LATENCIES``. 1 (default): ``r_data`` the clock after ``r_en``, as
        ``BusSignature`` says. 2: the read multiplexer in two registered stages (8-word
        groups, then the group), ``r_data`` two clocks after ``r_en``, for a clock at which
        one multiplexer from the bus address to ``r_data`` is too slow (the ULX3S design's
        critical path was that multiplexer). Not with ``const_rom``.
    write_setup : int
        One of ``WRITE_SETUPS``: the clocks before ``w_en`` from which the bus in front
        promises ``addr`` and ``w_data`` stable (the boards' UART bridge sets them clocks
        before it writes). With 1 the write's decode (the word it hits, its value's fit,
        whether it is a bad write) is registered from them every clock and ``w_en`` only
        enables it; with 2 whether the write is bad is an OR of registered terms,
        registered again, and a commit is decided a clock before it applies (3 clocks after
        ``idle``, at least 5 after the last write): for a clock at which decoding the
        address in ``w_en``'s clock is too slow (the ULX3S at 150 MHz). With 1 and 2 a write
        applies in ``w_en``'s clock. 3: as 2, and whether each byte of ``w_data`` has a
        bit set is registered a clock before the fits, so that each fit (no bit of the
        value above the register's width) is an OR of at most 7 bits and 3 registered
        flags, not a tree over the value that shares its branches with every other
        register's (the ULX3S at 150 MHz: the fits chained through each other); and the
        write applies a clock later (``write_latency`` 1): each word's enable, ``w_en`` and
        its registered hit, is registered, and ``w_data`` with it, so that a shadow's clock
        enable starts at a register of its own rather than at ``w_en`` through a gate per
        word (the exported core's AXI4-Lite variant: ``w_en`` fanned out to every word and
        each word to its shadow's flip-flops). A read of the written word then returns the
        new value from ``r_en`` 2 clocks after ``w_en``, and the bus in front does not read
        it in the clock after the write (the AXI4-Lite adapter issues its next access at
        least 3 clocks after a write, the UART bridge a request later); a commit still
        applies at least 5 clocks after ``w_en``. Default 0 (AXI4-Lite and Wishbone give no
        such promise).
    read_setup : int
        One of ``READ_SETUPS``; 1 or 2 only with ``read_latency`` 2: the bus in front
        promises ``addr`` that many clocks before ``r_en`` and in its clock (the UART bridge
        gives 4, the AXI4-Lite adapter 1), so the first read stage's decode of the address
        is registered ahead: each group's one-hot lines, so that its select is an OR of
        ANDs (the ULX3S at 150 MHz: the groups' selects shared one decode, six LUTs deep).
        With 2 that decode takes two registered stages: the low bits' one-hot and each
        group's hit, then the group's lines. Default 0.

    Attributes
    ----------
    write_latency : int
        Clocks from ``w_en`` to the clock in which the write applies: 1 with ``write_setup``
        3, else 0.
    bus : In(BusSignature())
    config : Out(config_layout(build))
        The active configuration, to ``QueueManager.config``.
    load_rng_decide, load_rng_clear, restart, wipe, rekey, hold, rate_bank, rate_we, rate_addr,
    rate_data, counter_clear,
    clear_max_queue : Out
        To the queue manager's ports of the same names.
    counters, n_raw, n, avg, occ_pkts, occ_bytes, max_queue, busy, idle : In
        From the queue manager's ports of the same names.
    """

    def __init__(self, build, const_rom=False, read_latency=1, write_setup=0, read_setup=0):
        for name, value, choices in (("read_latency", read_latency, READ_LATENCIES),
                                     ("write_setup", write_setup, WRITE_SETUPS),
                                     ("read_setup", read_setup, READ_SETUPS)):
            if value not in choices:
                raise ValueError(f"{name}: {value!r} must be one of "
                                 f"{', '.join(map(str, choices))}")
        if const_rom and read_latency != 1:
            raise ValueError(f"read_latency: {read_latency} with const_rom must be 1")
        self.build = build
        self.const_rom = bool(const_rom)
        self.read_latency = read_latency
        self.write_setup = write_setup
        self.write_latency = int(write_setup >= 3)
        if read_setup and read_latency != 2:
            raise ValueError(f"read_setup: {read_setup} needs read_latency 2")
        self.read_setup = read_setup
        self.regs = registers(build)
        self.defaults = Config(build=build).registers()
        layout = config_layout(build)
        tbits = (build.table_depth - 1).bit_length()
        super().__init__({
            "bus": In(BusSignature()),
            # fixed registers are never assigned: constants at their reset value
            "config": Out(layout, init={r.name: r.reset for r in self.regs
                                        if r.kind in ("config", "fixed")}),
            "load_rng_decide": Out(1), "load_rng_clear": Out(1), "restart": Out(1),
            "wipe": Out(1), "rekey": Out(1), "hold": Out(1),
            "rate_bank": Out(1), "rate_we": Out(1), "rate_addr": Out(tbits),
            "rate_data": Out(RATE.width),
            "counter_clear": Out(len(COUNTERS)), "clear_max_queue": Out(1),
            "counters": In(data.ArrayLayout(COUNTER_BITS, len(COUNTERS))),
            "n_raw": In(17), "n": In(16), "avg": In(QAVG.width), "occ_pkts": In(QPKTS_BITS),
            "occ_bytes": In(QBYTES_BITS), "max_queue": In(QPKTS_BITS), "busy": In(1),
            "idle": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        # the signals one part hands to the next, by name
        s = SimpleNamespace()
        self._state(m, s)
        self._words(m, s)
        self._read(m, s)
        self._tables(m, s)
        self._writes(m, s)
        self._commit(m, s)
        return m

    def _state(self, m, s):
        """The shadows, the commit's and the errors' state, the status word."""
        bus = self.bus
        wa = bus.addr[2:]                      # word address
        pending, applying = Signal(), Signal()
        # their next values: written where the commit's steps decide them, registered below,
        # so that ``hold`` is a register of its own (the OR of the next values), not an OR
        # of registers in front of the arrival port's ready
        pending_next, applying_next = Signal(), Signal()
        m.d.comb += [pending_next.eq(pending), applying_next.eq(0)]
        m.d.sync += [pending.eq(pending_next), applying.eq(applying_next)]
        rejected, bad_write = Signal(), Signal()
        reject_index = Signal(8)
        rate_dirty = Signal()
        started = Signal()

        shadow = {r.name: Signal(r.width, init=r.reset, name=f"shadow_{r.name}")
                  for r in self.regs if r.kind == "config"}
        # set by a write whose value does not fit the register (bits above its width), cleared
        # by the next write of that word that fits; a commit is rejected while one is set
        overflow = {r.name: Signal(name=f"overflow_{r.name}")
                    for r in self.regs if r.kind == "config"}
        index = {r.name: i for i, r in enumerate(self.regs)}
        counter_pos = {name: i for i, name in enumerate(COUNTERS)}
        telemetry = {"n_raw": self.n_raw, "n": self.n, "avg": self.avg,
                     "occ_pkts": self.occ_pkts, "occ_bytes": self.occ_bytes,
                     "max_queue": self.max_queue}
        # whether each bank of the r(N) table still holds its power-on contents (the build's
        # defaults): cleared by the first table write into it, and reset-less because the
        # RAM keeps what the host wrote across a reset while ``rate_bank`` returns to 0
        bank_default = [Signal(init=1, reset_less=True, name=f"rate_bank{i}_default")
                        for i in range(2)]
        with m.If(self.rate_we):
            with m.If(self.rate_bank):
                m.d.sync += bank_default[0].eq(0)
            with m.Else():
                m.d.sync += bank_default[1].eq(0)
        tables_default = Mux(self.rate_bank, bank_default[1], bank_default[0])
        status = Signal(16)
        m.d.comb += status.eq((pending | applying | self.busy) << STATUS_BITS["BUSY"]
                              | rejected << STATUS_BITS["COMMIT_REJECTED"]
                              | bad_write << STATUS_BITS["BAD_WRITE"]
                              | tables_default << STATUS_BITS["TABLES_DEFAULT"]
                              | reject_index << STATUS_REJECT_INDEX_SHIFT)
        s.bus, s.wa, s.status, s.started = bus, wa, status, started
        s.pending, s.applying, s.rejected, s.bad_write = pending, applying, rejected, bad_write
        s.pending_next, s.applying_next = pending_next, applying_next
        s.reject_index, s.rate_dirty = reject_index, rate_dirty
        s.shadow, s.overflow, s.index = shadow, overflow, index
        s.counter_pos, s.telemetry = counter_pos, telemetry

    def _words(self, m, s):
        """The register words: each word's read value, and its write (range of the top word,
        strobes of control and counter words)."""
        wa, status, shadow = s.wa, s.status, s.shadow
        counter_pos, telemetry = s.counter_pos, s.telemetry
        read_words = {}                   # word address -> value (the read multiplexer's)
        rom_words = {}                    # word address -> constant (const_rom)
        is_const = Signal()
        mapped = Signal()
        # per word: the bus address is that word's, and what a write of it needs (``_decode``:
        # as is, or registered a clock ahead with ``write_setup``)
        hits = []
        with m.Switch(wa):
            for r in self.regs:
                for w in range(r.words):
                    lo_bit, hi_bit = 32 * w, min(32 * w + 32, r.width)
                    with m.Case(r.offset // 4 + w):
                        hit = Signal(name=f"hit_{r.name}_{w}")
                        m.d.comb += [mapped.eq(1), hit.eq(1)]
                        hits.append((r, w, lo_bit, hi_bit, hit))
                        if r.secret:
                            # key material is write-only (fpq.regmap: access "secret"): no
                            # path from the shadow or the constant to r_data on any bus
                            value = Const(0, r.width)
                        elif r.kind == "config":
                            value = shadow[r.name]
                        elif r.kind == "counter":
                            value = self.counters[counter_pos[r.name]]
                        elif r.kind == "telemetry":
                            value = telemetry[r.name]
                        elif r.name == "status":
                            value = status
                        elif r.access == "ro":
                            value = Const(r.reset, r.width)
                        else:
                            value = Const(0, r.width)
                        word = value[lo_bit:hi_bit]
                        if self.const_rom and isinstance(value, Const):
                            rom_words[r.offset // 4 + w] = Const.cast(word).value
                            m.d.comb += is_const.eq(1)
                        else:
                            read_words[r.offset // 4 + w] = word
        s.hits = hits
        s.read_words, s.rom_words, s.is_const, s.mapped = read_words, rom_words, is_const, mapped

    def _read(self, m, s):
        """The read multiplexer (``read_decode``), in one or two registered stages, and the
        constant words' ROM."""
        bus, wa = s.bus, s.wa
        rom_words, is_const = s.rom_words, s.is_const
        r_live = read_decode(m, bus.r_en, wa, s.read_words, stages=self.read_latency,
                             group_bits=_GROUP_BITS, setup=self.read_setup)
        if self.const_rom:
            # the constant words from a ROM read in the same clock as the multiplexer's
            # register; the multiplexer gives 0 for them, the ROM's data counts only for them
            abits = max(rom_words).bit_length()
            m.submodules.const_rom = rom = memory.Memory(
                shape=32, depth=1 << abits,
                init=[rom_words.get(a, 0) for a in range(1 << abits)],
                attrs={"rom_style": "block", "ram_style": "block"})
            rom_rp = rom.read_port()
            const_read = Signal()
            m.d.comb += rom_rp.addr.eq(wa[:abits])
            m.d.sync += const_read.eq(bus.r_en & is_const)
            m.d.comb += bus.r_data.eq(r_live | Mux(const_read, rom_rp.data, 0))
        else:
            m.d.comb += bus.r_data.eq(r_live)

    def _tables(self, m, s):
        """Table writes, into the inactive bank; a table's words are mapped."""
        bus, wa, mapped, rate_dirty = s.bus, s.wa, s.mapped, s.rate_dirty
        for t in tables(self.build):
            base = t.offset // 4
            # the table's words are aligned to its power-of-two size, so the range check is
            # the address's high bits against a constant and the index its low bits: no
            # carry chain between the bus register and the block RAMs' ports
            bits = t.depth.bit_length() - 1
            assert t.depth == 1 << bits and base % t.depth == 0
            in_table = wa[bits:] == base >> bits
            assert t.name == "rate_table"
            with m.If(in_table):
                m.d.comb += mapped.eq(1)
            if self.write_setup:
                # the write registered on its way to the block RAMs, its word's decode a
                # clock ahead (the table is write-only, and a commit comes clocks later)
                in_table_r = Signal(name="w_rate_table")
                m.d.sync += [in_table_r.eq(in_table),
                             self.rate_we.eq(bus.w_en & in_table_r),
                             self.rate_addr.eq(wa[:len(self.rate_addr)]),
                             self.rate_data.eq(bus.w_data)]
                in_table = in_table_r
            s.table_hit = in_table
            with m.If(in_table & bus.w_en):
                if not self.write_setup:
                    m.d.comb += [self.rate_we.eq(1),
                                 self.rate_addr.eq(wa[:len(self.rate_addr)]),
                                 self.rate_data.eq(bus.w_data)]
                m.d.sync += rate_dirty.eq(1)

    def _writes(self, m, s):
        """The register words' writes: shadows (the top word's range), strobes of control and
        counter words; a write to a read-only word, to no word, or of a value that does not
        fit sets BAD_WRITE. With ``write_setup`` each word's hit, its value's fit and the
        write's badness are registered a clock ahead (``addr`` and ``w_data`` are stable
        then), so that ``w_en`` is the one late input of each enable; with
        ``write_latency`` 1 each enable is registered in turn and the write applies from it
        and the registered ``w_data`` a clock later."""
        self._write_inputs(m, s)
        # what makes a write bad, from each word's decode (write_setup below 2; registered
        # as a whole with 1) or from its registered hit and fit (2 and 3: "no word" then from
        # the hits' OR, not from the address), ORed and registered
        bad_terms, hits = [], []
        for r, w, lo_bit, hi_bit, hit in s.hits:
            h, bad_term = self._write_word(m, s, r, w, lo_bit, hi_bit, hit)
            hits.append(h)
            if bad_term is not None:
                bad_terms.append(bad_term)
        early = self.write_setup < 2
        bad_terms.append(~s.mapped if early else ~Cat(s.table_hit, *hits).any())
        bad = self._decode(m, Cat(*bad_terms).any(), "write_is_bad")
        with m.If(self._enable(m, s.bus.w_en & bad, "we_bad")):
            m.d.sync += s.bad_write.eq(1)

    def _decode(self, m, value, name):
        """``value``, or with ``write_setup`` that registered a clock ahead (``addr`` and
        ``w_data`` are stable then)."""
        return _registered(m, value, name) if self.write_setup else value

    def _enable(self, m, value, name):
        """``value`` (``w_en`` and what it enables), or with ``write_latency`` 1 that
        registered: the write then applies in the next clock from a register per word, so
        that a shadow's clock enable is that register (with its fit, one gate), not
        ``w_en``'s fan-out to every word."""
        return _registered(m, value, name) if self.write_latency else value

    def _write_inputs(self, m, s):
        """What every word's write decodes: with ``write_setup`` 3 the word address's one-hot
        lines (``_word_hit``) and whether each byte of ``w_data`` has a bit set (``_excess``),
        registered; ``s.w_data``, the value a write applies (with ``write_latency`` 1
        registered with the enables: the bus promises w_data only up to w_en's clock)."""
        bus = s.bus
        if self.write_setup >= 3:
            # the word decode in two registered stages (``addr`` is stable three clocks
            # before ``w_en``, and each word's hit is needed from the clock before it, for
            # the write's badness): one-hot lines of the word address's two low nibbles and
            # "the bits above are 0", then each word's hit as an AND of three of them (a
            # compare per word of the whole address, with Yosys sharing terms between the
            # words, is five LUT levels)
            wa = s.wa
            low, mid, high_zero = Signal(16, name="w_addr_low"), Signal(16, name="w_addr_mid"), \
                Signal(name="w_addr_high_zero")
            m.d.sync += [low.eq(Cat(wa[:4] == i for i in range(16))),
                         mid.eq(Cat(wa[4:8] == i for i in range(16))),
                         high_zero.eq(wa[8:] == 0)]
            s.w_addr_onehot = (low, mid, high_zero)
        w_data = bus.w_data
        if self.write_latency:
            w_data = Signal(32, name="w_data_late")
            m.d.sync += w_data.eq(bus.w_data)
        s.w_data = w_data
        if self.write_setup >= 3:
            byte_any = Signal(4, name="w_data_byte_any")
            m.d.sync += byte_any.eq(Cat(bus.w_data[8 * i:8 * i + 8].any() for i in range(4)))
            s.byte_any = byte_any

    def _word_hit(self, s, index, hit):
        """Whether the write is to word ``index``: ``hit`` (its case of the address), or with
        ``write_setup`` 3 an AND of three registered lines (``_write_inputs``)."""
        if self.write_setup < 3:
            return hit
        low, mid, high_zero = s.w_addr_onehot
        assert index < 1 << 8, "a word address beyond the two decoded nibbles"
        return low[index & 15] & mid[index >> 4] & high_zero

    def _excess(self, s, k):
        """Whether the written value has a bit at or above bit ``k``."""
        if k >= 32:
            return Const(0, 1)
        if self.write_setup < 3:
            return s.bus.w_data[k:].any()
        whole = -(-k // 8)                     # the first whole byte at or above k
        return s.bus.w_data[k:8 * whole].any() | s.byte_any[whole:].any()

    def _write_word(self, m, s, r, w, lo_bit, hi_bit, hit):
        """Word ``w`` of register ``r`` (its bits ``lo_bit`` .. ``hi_bit``, ``hit`` its case of
        the address): its decode and its write. Returns whether the write is to this word
        (for "no word": the address's case, or with ``write_setup`` 2 and 3 the registered
        hit) and what makes a write of it bad (None: nothing)."""
        # bits of the written word above the register's width: must be zero
        above = self._excess(s, hi_bit - lo_bit)
        top_of_config = r.kind == "config" and w == r.words - 1 and hi_bit - lo_bit < 32
        writable = (r.kind in ("config", "counter") or r.name in ("max_queue", "control"))
        sel = self._decode(m, self._word_hit(s, r.offset // 4 + w, hit), f"w_{r.name}_{w}")
        fit = self._decode(m, ~above, f"fit_{r.name}_{w}")
        h, misfit = (hit, above) if self.write_setup < 2 else (sel, ~fit)
        bad_term = None
        if top_of_config or r.name == "control":
            bad_term = h & misfit
        elif not writable:
            bad_term = h
        if writable:
            # ``fit`` in the clock the write applies is the written value's: with
            # write_latency 1 (the clock after w_en) the register holds the fit of w_en's
            # clock's w_data (and of the per-byte flags of the clock before, in the promise)
            with m.If(self._enable(m, s.bus.w_en & sel, f"we_{r.name}_{w}")):
                self._apply_write(m, s, r, lo_bit, hi_bit, fit, top_of_config)
        return h, bad_term

    def _apply_write(self, m, s, r, lo_bit, hi_bit, fit, top_of_config):
        """What a write of register ``r``'s word (bits ``lo_bit`` .. ``hi_bit``) does, in the
        clock it applies: a shadow's bits (the top word only if the value fits), a counter's
        or ``max_queue``'s clear, ``CONTROL``'s commit and error clear."""
        shadow, overflow, w_data = s.shadow, s.overflow, s.w_data
        if top_of_config:
            # a value that does not fit: the shadow keeps its old value, the next commit is
            # rejected naming this register
            with m.If(~fit):
                m.d.sync += overflow[r.name].eq(1)
            with m.Else():
                m.d.sync += [shadow[r.name][lo_bit:hi_bit].eq(
                    w_data[:hi_bit - lo_bit]), overflow[r.name].eq(0)]
        elif r.kind == "config":
            m.d.sync += shadow[r.name][lo_bit:hi_bit].eq(w_data[:hi_bit - lo_bit])
        elif r.kind == "counter":
            m.d.comb += self.counter_clear[s.counter_pos[r.name]].eq(1)
        elif r.name == "max_queue":
            m.d.comb += self.clear_max_queue.eq(1)
        elif r.name == "control":
            with m.If(fit):                 # undefined bits: nothing happens
                with m.If(w_data & CONTROL_COMMIT):
                    m.d.comb += s.pending_next.eq(1)
                with m.If(w_data & CONTROL_CLEAR_ERRORS):
                    m.d.sync += [s.rejected.eq(0), s.bad_write.eq(0), s.reject_index.eq(0)]

    def _commit(self, m, s):
        """The commit: each register's check and what the commit changes, registered; then
        the active configuration, the bank and the strobes in one clock."""
        s.fixed = fixed_registers(self.build)
        self._changes(m, s)
        self._checks(m, s)
        self._first_bad(m, s)
        self._apply(m, s, self._commit_go(m, s))

    def _pending_value(self, s, name):
        """What a commit would apply to register ``name``: the shadow, or the build's
        constant."""
        return s.shadow[name] if name in s.shadow else s.fixed[name]

    def _changes(self, m, s):
        """What a commit changes, registered (wide compares: the key is hundreds of bits):
        ``s.changed`` (``v_max``, the generators' states, each key) and ``s.rekey``."""
        changed = {}
        keys = key_registers(self.build)
        for name in ("v_max", "rng_decide_state", "rng_clear_state", *keys):
            changed[name] = Signal(name=f"changes_{name}")
            new, old = self._pending_value(s, name), self.config[name]
            if self.write_setup >= 2:
                # in two registered stages, whether each byte differs and then their OR: the
                # commit applies at least 4 clocks after the last write
                differs = Signal((len(old) + 7) // 8, name=f"differs_{name}")
                m.d.sync += [differs.eq(Cat(new[i:i + 8] != old[i:i + 8]
                                            for i in range(0, len(old), 8))),
                             changed[name].eq(differs.any())]
            else:
                m.d.sync += changed[name].eq(new != old)
        s.changed, s.rekey = changed, Cat(changed[name] for name in keys).any()

    def _checks(self, m, s):
        """The first of the checks' two registered stages: each register's own check (a
        compare), and ``red_max_th >= red_min_th + 1.0``'s sum. ``s.checks`` and
        ``s.checks_after`` are (index, bad) of the registers before and after
        ``red_max_th`` in map order, ``s.cross`` the cross check (a register, or None)."""
        # The checks in two registered stages: each register's own check (a compare), then the
        # first bad one (a tree of selects over registers), so neither stage chains the other.
        # A commit waits for three clocks without a write: the checks then see the shadows.
        # ``red_max_th >= red_min_th + 1.0`` is an adder and a compare, so its sum takes the
        # first stage and the compare the second; it joins the others at the commit, which
        # names the first bad register in map order as the model does
        # (``fpq.regmap.check_registers``): the ones before red_max_th, then it, then the rest.
        shadow, overflow, index = s.shadow, s.overflow, s.index
        checks, checks_after, cross = [], [], None
        for r in self.regs:
            if r.kind != "config":
                continue
            v = shadow[r.name]
            bad = overflow[r.name]
            # a bound that is a power of two is a test of the bits above it (an OR tree), not
            # a compare (a carry chain as long as the register: 128 bits for a seed's state)
            if r.lo > 0:
                bad = bad | (~v[r.lo.bit_length() - 1:].any() if r.lo & (r.lo - 1) == 0
                             else v < r.lo)
            if r.hi < (1 << r.width) - 1:
                bad = bad | (v[r.hi.bit_length():].any() if r.hi & (r.hi + 1) == 0
                             else v > r.hi)
            bad_r = Signal(name=f"bad_{r.name}")
            m.d.sync += bad_r.eq(bad)
            (checks if cross is None else checks_after).append((index[r.name], bad_r))
            if r.name == "red_max_th":
                least = self._pending_value(s, "red_min_th") + (1 << QAVG.frac_bits)
                if "red_min_th" in shadow:
                    least_r = Signal(len(least), name="red_max_th_least")
                    m.d.sync += least_r.eq(least)
                    least = least_r
                cross = Signal(name="bad_red_max_th_cross")
                m.d.sync += cross.eq(v < least)
        s.checks, s.checks_after, s.cross = checks, checks_after, cross

    def _first_bad(self, m, s):
        """The second stage of the checks: whether any register is bad (``s.bad_any``) and
        the first bad one's index (``s.bad_first``), from registers; and ``s.wrote``, the
        bus writes of the last two clocks."""
        bus, index = s.bus, s.index
        any_comb, idx_comb = _first_of(s.checks)
        after_comb, idx_after_comb = _first_of(s.checks_after)
        bad_before, bad_idx, bad_after, bad_idx_after = Signal(), Signal(8), Signal(), Signal(8)
        wrote = Signal(2)                          # bus writes in the last two clocks
        m.d.sync += [bad_before.eq(any_comb), bad_idx.eq(idx_comb),
                     bad_after.eq(after_comb), bad_idx_after.eq(idx_after_comb),
                     wrote.eq(Cat(bus.w_en, wrote[0]))]
        cross = C(0, 1) if s.cross is None else s.cross
        # the commit's enable of every configuration register: one LUT of three registers
        bad_range = Signal(name="bad_range")
        m.d.sync += bad_range.eq(any_comb | after_comb)
        s.bad_any = bad_range | cross
        s.bad_first = Mux(bad_before, bad_idx,
                          Mux(cross, index.get("red_max_th", 0), bad_idx_after))
        s.wrote = wrote

    def _commit_go(self, m, s):
        """When a commit goes: ``CONTROL.COMMIT`` pending, the pipeline idle, no bus write in
        the last clocks (with ``write_setup`` 2 and 3 decided a clock ahead); and ``hold``, a
        register. Returns the commit's strobe."""
        ready = s.pending & self.idle & ~self.busy & ~s.wrote.any() & ~s.bus.w_en
        if self.write_setup >= 2:
            # the decision registered, the commit a clock later: its enable of every
            # configuration register then starts at a register, not at the queue manager's
            # idle across the chip (the hold covers the clock between)
            go, go_next = Signal(name="commit_go"), Signal(name="commit_go_next")
            m.d.sync += go.eq(go_next)
            with m.If(s.started & ready):
                m.d.comb += [go_next.eq(1), s.pending_next.eq(0)]
        else:
            go, go_next = ready, C(0, 1)
        # ``pending | go | applying`` (``go`` a register with write_setup >= 2), as a register
        hold = Signal(name="hold_r")
        m.d.sync += hold.eq(s.pending_next | go_next | s.applying_next)
        m.d.comb += self.hold.eq(hold)
        return go

    def _apply(self, m, s, go):
        """The strobes out of reset (load the generators, start the time base), and a
        commit's outcome in the clock after ``go``: rejected (``STATUS``), or the registers,
        the bank and the strobes all at once."""
        changed, rekey, rate_dirty = s.changed, s.rekey, s.rate_dirty
        m.d.sync += [self.load_rng_decide.eq(0), self.load_rng_clear.eq(0), self.wipe.eq(0),
                     self.rekey.eq(0), self.restart.eq(0)]
        with m.If(~s.started):
            m.d.sync += [s.started.eq(1), self.load_rng_decide.eq(1), self.load_rng_clear.eq(1),
                         self.restart.eq(1)]
        with m.Elif(go):
            if not self.write_setup >= 2:
                m.d.comb += s.pending_next.eq(0)
            with m.If(s.bad_any):
                m.d.sync += [s.rejected.eq(1), s.reject_index.eq(s.bad_first)]
            with m.Else():
                # the registers, the bank and the strobes all in the next clock: the
                # commit's clock ``ts`` (``fpq.QueueManager.configure``)
                m.d.comb += s.applying_next.eq(1)
                m.d.sync += [rate_dirty.eq(0),
                             self.rate_bank.eq(self.rate_bank ^ rate_dirty),
                             # a new key: live re-key (wipe, hold the count; QueueManager)
                             self.wipe.eq(changed["v_max"] | rekey),
                             self.rekey.eq(rekey),
                             self.load_rng_decide.eq(changed["rng_decide_state"]),
                             self.load_rng_clear.eq(changed["rng_clear_state"])]
                for name, sig in s.shadow.items():
                    m.d.sync += self.config[name].eq(sig)
