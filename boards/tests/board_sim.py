"""Shared helpers for the board tests: run a component in Amaranth's simulator, drive and
sample a UART line bit by bit (independently of ``fpq_boards.sim_port``)."""

from amaranth.sim import Simulator

async def _ticks(ctx, n):
    """``n`` clock edges with plain awaits (``tick().repeat()`` runs an async generator that
    cannot be closed cleanly when an unfinished simulation is garbage-collected)."""
    for _ in range(n):
        await ctx.tick()



def run(dut, *testbenches, processes=(), cycles_limit=None, vcd=None):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for tb in testbenches:
        sim.add_testbench(tb)
    for p in processes:
        sim.add_testbench(p, background=True)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()


async def send_byte(ctx, line, byte, clocks_per_bit, stop=1):
    """Drive one 8N1 character; ``clocks_per_bit`` may be fractional (baud error)."""
    bits = [0] + [(byte >> i) & 1 for i in range(8)] + [stop]
    t = 0.0
    done = 0
    for b in bits:
        ctx.set(line, b)
        t += clocks_per_bit
        n = int(round(t)) - done
        await _ticks(ctx, n)
        done += n
    ctx.set(line, 1)


async def recv_byte(ctx, line, clocks_per_bit, max_wait=100000):
    """Wait for a start bit on ``line`` and decode one character; None if none comes or the
    stop bit is low."""
    waited = 0
    while ctx.get(line):
        await ctx.tick()
        waited += 1
        if waited > max_wait:
            return None
    await _ticks(ctx, clocks_per_bit // 2)
    assert ctx.get(line) == 0, "start bit too short"
    value = 0
    for i in range(8):
        await _ticks(ctx, clocks_per_bit)
        value |= ctx.get(line) << i
    await _ticks(ctx, clocks_per_bit)
    return value if ctx.get(line) else None


class QMTap:
    """A recorder of the queue manager inside a simulated ``SelfTestSoC``, clock by clock,
    from its ports (add ``process`` to the simulation, e.g. ``SimulatedPort(soc,
    probes=[tap.process])``): the clock of ``restart`` (the next is clock 0 of its time
    base), every event it accepts with its accept clock (``fpq.Arrival`` / ``Departure``),
    every commit (the first clock in which the ``config`` port or the r(N) table's active
    bank changes, with the raw registers and the active table then), the verdicts the
    generator takes, counter clears, and the register file's bus reads (the clock in which
    it took each word: telemetry is read in the clock of ``r_en``). ``replay`` runs the
    golden model on that record, as ``hdl/tests/hdl_harness.py`` does for a bare queue
    manager."""

    def __init__(self, soc):
        from fpq_hdl.layouts import ARRIVAL, DEPARTURE, config_layout
        self.soc = soc
        self.build = soc.build
        self.cycle = 0               # clocks seen so far (the next clock's number)
        self.base = None             # the clock that is clock 0 of the time base
        self.events = []
        self.verdict_words = []
        self.counter_clears = []
        self.reads = []              # (clock of the time base, byte address)
        self.commits = 0
        self._arr = {name: (f.offset, f.width) for name, f in ARRIVAL}
        self._dep = {name: (f.offset, f.width) for name, f in DEPARTURE}
        self._cfg = {name: (f.offset, f.width) for name, f in config_layout(self.build)}
        # at power-on both table banks hold the build's default table (the RAM's initial
        # contents, ``fpq_hdl.drop_probability``)
        from fpq.config import Config
        default = Config(build=self.build).rate_table()
        self._banks = [list(default), list(default)]

    @property
    def now(self):
        """The clock of the time base the simulation is at (the next clock)."""
        return self.cycle - self.base

    @staticmethod
    def _field(word, spec):
        offset, width = spec
        return (word >> offset) & ((1 << width) - 1)

    async def process(self, ctx):
        from fpq.queue_manager import Arrival, Departure
        qm = self.soc.qm
        signals = (qm.restart, qm.arrivals.valid, qm.arrivals.ready,
                   qm.arrivals.payload.as_value(), qm.departures.valid, qm.departures.ready,
                   qm.departures.payload.as_value(), qm.verdicts.valid, qm.verdicts.ready,
                   qm.verdicts.payload.as_value(), qm.config.as_value(), qm.rate_bank,
                   qm.rate_we, qm.rate_addr, qm.rate_data, qm.counter_clear,
                   qm.clear_max_queue, self.soc.regs.bus.r_en, self.soc.regs.bus.addr)
        config = bank = None
        while True:
            (_, _, restart, a_valid, a_ready, a_word, d_valid, d_ready, d_word, v_valid,
             v_ready, v_word, cfg_word, rate_bank, rate_we, rate_addr, rate_data, cclear,
             cmq, r_en, r_addr) = await ctx.tick().sample(*signals)
            c = self.cycle
            self.cycle += 1
            if restart:
                assert self.base is None, f"restart again at clock {c}"
                self.base = c + 1
            if config is None:
                config, bank = cfg_word, rate_bank
            elif cfg_word != config or rate_bank != bank:
                assert self.base is not None and c >= self.base, \
                    f"a commit at clock {c} before the time base starts"
                raw = {name: self._field(cfg_word, spec) for name, spec in self._cfg.items()}
                self.events.append(("configure", raw, tuple(self._banks[rate_bank]),
                                    c - self.base))
                self.commits += 1
                config, bank = cfg_word, rate_bank
            if d_valid and d_ready:
                assert self.base is not None, f"a departure at clock {c} before clock 0"
                self.events.append(Departure(c - self.base,
                                             self._field(d_word, self._dep["length"])))
            if a_valid and a_ready:
                assert self.base is not None, f"an arrival at clock {c} before clock 0"
                self.events.append(Arrival(c - self.base,
                                           self._field(a_word, self._arr["flow"]),
                                           self._field(a_word, self._arr["length"]),
                                           bool(self._field(a_word, self._arr["ecn"]))))
            if v_valid and v_ready:
                self.verdict_words.append(v_word)
            if rate_we:
                # into the inactive bank (the one the next commit may swap in)
                self._banks[1 - rate_bank][rate_addr] = rate_data
            if cclear or cmq:
                self.counter_clears.append((c, cclear, cmq))
            if r_en and self.base is not None:
                self.reads.append((c - self.base, r_addr & ~3))

    def replay(self):
        """The golden model run on the record; returns ``(model, verdicts)``. The model
        starts from the register file's reset values and the default table (the power-on
        contents of both banks); each commit applies the registers the port showed
        (``Config.override``: raw values) and the active table."""
        from fpq.config import Config
        from fpq.regmap import registers
        from fpq.queue_manager import QueueManager as Model, Arrival, Departure
        runtime = [r.name for r in registers(self.build) if r.kind == "config"]
        model = Model(Config(build=self.build))
        out = []
        for ev in self.events:
            if type(ev) is Departure:
                model.depart(ev)
            elif type(ev) is Arrival:
                out.append(model.arrive(ev))
            else:
                _, raw, table, ts = ev
                cfg = Config(build=self.build).override(**{n: raw[n] for n in runtime})
                model.configure(cfg, ts)
                model.rate_table = list(table)
        return model, out

    def verdicts(self):
        from fpq_hdl.layouts import VERDICT
        spec = {name: (f.offset, f.width) for name, f in VERDICT}
        return [{name: self._field(w, s) for name, s in spec.items()}
                for w in self.verdict_words]

    def check(self):
        """Every verdict the SoC's queue manager gave equals the model's on the record (all
        fields; verdicts still in its FIFO are not compared); returns ``(model, count)``."""
        model, expected = self.replay()
        got = self.verdicts()
        assert len(got) <= len(expected), (len(got), len(expected))
        for i, (g, e) in enumerate(zip(got, expected)):
            want = {"seq": e.seq, "action": e.action, "n": e.n, "avg": e.avg, "prob": e.prob}
            if g != want:
                raise AssertionError(f"verdict {i}: SoC {g} != model {want}")
        return model, len(got)
