"""The self-test SoC in Amaranth's simulator, driven only through its UART pins by the host
code (``BusClient``, ``monitor``) over ``SimulatedPort``: bus decode, the generator feeding
the queue manager, loading a configuration, and the live view. The queue manager inside is
tapped (``board_sim.QMTap``): the clocks in which it accepted each event and applied each
commit are replayed with the golden model, and every verdict, the counters and the telemetry
read over the UART are compared with the model's."""

import io

import pytest

from fpq.config import Build, Config
from fpq.flow_hash import FlowHash, reduce_index
from fpq.regmap import registers, ID_VALUE, STATUS_BITS
from fpq.queue_manager import COUNTERS
from fpq_hdl.queue_manager import AVG_TELEMETRY_DELAY, N_RAW_DELAY, N_TELEMETRY_DELAY
from fpq_boards.soc import SelfTestSoC
from fpq_boards.sim_port import SimulatedPort
from fpq_boards.protocol import BusClient
from fpq_boards.traffic_generator import TG_REG, TG_ID, flow_key
from fpq_boards.monitor import snapshot, read_build, configure, monitor

from board_sim import QMTap

BUILD = Build(vec_bits=256, table_depth=32)
REG = {r.name: r for r in registers(BUILD)}
TELEMETRY = ("n_raw", "n", "avg", "occ_pkts", "occ_bytes", "max_queue")


def make(build=BUILD, clk_freq=1e6, baud=250000, verdict_fifo="distributed",
         arrival_fifo=True, optimise="speed", counter_bits=64):
    soc = SelfTestSoC(build, clk_freq=clk_freq, baud=baud, verdict_fifo=verdict_fifo,
                      arrival_fifo=arrival_fifo, optimise=optimise, counter_bits=counter_bits)
    tap = QMTap(soc)
    port = SimulatedPort(soc, probes=[tap.process])
    return soc, port, BusClient(port), tap


def stop_and_drain(client, port):
    client.write(TG_REG["tg_enable"].offset, 0)
    port.run_cycles(200)


#: Telemetry that moves on the clock with no traffic (clears, samples of the average): the
#: model's value at the clock the register file took the word, ``fpq_hdl.queue_manager``'s
#: delays: ``n_raw`` at clock c + N_RAW_DELAY is N after the slot of clock c, ``n`` a clock
#: later, ``avg`` at c + AVG_TELEMETRY_DELAY is what an arrival at c reads.
CLOCKED_TELEMETRY = {"n_raw": N_RAW_DELAY, "n": N_TELEMETRY_DELAY, "avg": AVG_TELEMETRY_DELAY}


def checked_snapshot(client, tap):
    """``monitor.snapshot`` with the queue manager idle (traffic stopped, every verdict out),
    and the golden model's replay of the tap's record: every verdict compared, and the
    model's telemetry as the bus read it (returned with the model). The occupancy and
    ``max_queue`` stand still with no traffic; ``n_raw``, ``n`` and ``avg`` are the model's at
    the clock in which the register file took each word (the last read of each word, the one
    ``read_wide`` keeps)."""
    since = tap.now
    s = snapshot(client)
    model, count = tap.check()
    assert count == model.seq > 0                  # every verdict out, and equal
    static = model.snapshot()
    want = {k: static[k] for k in ("occ_pkts", "occ_bytes", "max_queue")}
    words = {}                                     # (clock, name, word)
    for name in CLOCKED_TELEMETRY:
        r = REG[name]
        for w in range(r.words):
            clock = max(t for t, a in tap.reads if a == r.offset + 4 * w and t >= since)
            words[clock] = (name, w)
    values = {name: 0 for name in CLOCKED_TELEMETRY}
    for clock in sorted(words):
        name, w = words[clock]
        model.advance(clock - CLOCKED_TELEMETRY[name])
        value = model.n_raw if name == "n_raw" else model.snapshot()[name]
        values[name] |= (value >> (32 * w) & 0xFFFFFFFF) << (32 * w)
    want.update(values)
    return s, want, model


def test_identity_build_and_bus_decode():
    soc, port, c, tap = make()
    assert c.read(REG["id"].offset) == ID_VALUE
    assert c.read(TG_REG["tg_id"].offset) == TG_ID
    assert read_build(c) == BUILD
    # a generator register: written there, and no BAD_WRITE in the queue manager's file
    c.write(TG_REG["tg_flows"].offset, 33)
    assert c.read(TG_REG["tg_flows"].offset) == 33
    assert c.read(REG["status"].offset) & (1 << STATUS_BITS["BAD_WRITE"]) == 0
    # an unmapped address goes to the register file, which flags it
    c.write(0x900, 1)
    assert c.read(REG["status"].offset) & (1 << STATUS_BITS["BAD_WRITE"])
    assert c.read(TG_REG["tg_status"].offset) == 0
    # the register file started the queue manager's time base in its second clock
    assert tap.base == 2


@pytest.mark.parametrize("verdict_fifo, arrival_fifo, optimise, counter_bits",
                         [("distributed", True, "speed", 64),         # ULX3S
                          ("block", False, "area", 48)])              # iCEBreaker
def test_counters_and_flow_count_match_the_traffic(verdict_fifo, arrival_fifo, optimise,
                                                   counter_bits):
    soc, port, c, tap = make(verdict_fifo=verdict_fifo, arrival_fifo=arrival_fifo,
                             optimise=optimise, counter_bits=counter_bits)
    flows, salt = 20, 0x00A0B000
    stop_and_drain(c, port)
    v_max = 200                      # a commit that changes v_max wipes the flow vector
    c.write(REG["v_max"].offset, v_max)
    c.write(REG["control"].offset, 1)
    port.run_cycles(BUILD.vec_bits + 100)
    # no table written: the power-on defaults are still the active table
    assert c.read(REG["status"].offset) == 1 << STATUS_BITS["TABLES_DEFAULT"]
    assert c.read(REG["n_raw"].offset) == 0
    assert tap.commits == 1
    # counters: a write clears them (the replay's counters below count from reset)
    cleared = ("arrivals", "enqueued", "early_drops", "forced_drops")
    before = {name: c.read_wide(REG[name].offset, 64) for name in cleared}
    assert before["arrivals"] > 0
    for name in cleared + ("departures",):
        c.write(REG[name].offset, 0)
    assert all(c.read(REG[name].offset) == 0 for name in ("arrivals", "departures"))
    sent0 = c.read(TG_REG["tg_sent"].offset)
    c.write(TG_REG["tg_drain_period"].offset, 0)          # freeze the backlog
    backlog0 = c.read(TG_REG["tg_backlog"].offset)
    assert c.read(REG["occ_pkts"].offset) == backlog0
    for name, v in (("tg_flows", flows), ("tg_salt", salt), ("tg_pattern", 0),
                    ("tg_arrival_period", 2), ("tg_drain_period", 3), ("tg_enable", 1)):
        c.write(TG_REG[name].offset, v)
    port.run_cycles(1500)
    c.write(TG_REG["tg_enable"].offset, 0)
    c.write(TG_REG["tg_drain_period"].offset, 0)          # freeze the backlog again
    port.run_cycles(200)                                   # let the pipeline empty
    s, want, model = checked_snapshot(c, tap)
    state = model.counters
    sent = (s["tg_sent"] - sent0) & 0xFFFFFFFF
    assert s["arrivals"] == sent > 300
    assert s["enqueued"] + s["early_drops"] + s["forced_drops"] == s["arrivals"]
    assert s["departures"] == backlog0 + s["enqueued"] - s["tg_backlog"]
    assert s["dep_errors"] == 0
    assert s["occ_pkts"] == s["tg_backlog"] > 0               # drain slower than arrivals
    # N: distinct vector bits of the 20 flows under the golden model's hash
    cfg = Config(build=BUILD)
    h = FlowHash.of(cfg)
    bits = {reduce_index(h(flow_key(i, salt)), v_max) for i in range(flows)}
    assert s["n_raw"] == len(bits)
    # ... from the 5-tuples the generator was set to send, at the queue manager's port
    commit = next(i for i, e in enumerate(tap.events) if type(e) is tuple)
    assert {e.flow for e in tap.events[commit:] if type(e).__name__ == "Arrival"} == \
        {flow_key(i, salt) for i in range(flows)}
    # the replay of every accepted event: its telemetry is what the bus read (every verdict
    # was compared in checked_snapshot); the counters not cleared count from reset, the
    # verdict counters cleared with the generator off since the first snapshot
    assert {k: s[k] for k in TELEMETRY} == want
    for name in ("marked", "dep_errors"):
        assert s[name] == state[name], name
    for name in cleared:
        assert before[name] + s[name] == state[name], name


#: A board build whose clock (the simulation's 1 MHz) is fixed as ``tick_hz``, as the
#: iCEBreaker's is (``platforms.at_clock``): its reset values count that clock. A commit does
#: not move the clear and the sample already scheduled (``fpq.QueueManager.configure``), so
#: with reset values for 150 MHz the first ones would come millions of clocks later.
CLOCKED = Build(vec_bits=256, table_depth=32, fixed={"tick_hz": 1e6})
#: Clears every 40 clocks, the average sampled every 4 clocks with weight 1/16.
SHORT = {"t_clear_s": 256 * 40 / 1e6, "avg_tau_s": 60e-6, "v_max": 256, "p_pkts": 4.0,
         "seed_decide": 0x5DEECE66D2B7}
#: Read back over the bus after ``configure`` (the tap sees every register on the port).
READ_BACK = ("mode", "v_max", "clear_period", "wq_shift", "avg_sample_period", "red_max_th",
             "rekey_hold", "rng_decide_state")


def configured(check_all=False):
    """A SoC of the CLOCKED build, stopped and drained, then ``configure``d with SHORT; the
    registers read back and the commit as the tap saw it checked."""
    soc, port, c, tap = make(CLOCKED)
    stop_and_drain(c, port)
    cfg = configure(c, tick_hz=1e6, build=CLOCKED, wait=lambda: port.run_cycles(50), **SHORT)
    raw = cfg.registers()
    assert (raw["wq_shift"], raw["avg_sample_period"]) == (4, 4)
    assert raw["clear_period"] == 40 << 16
    regs = registers(CLOCKED)
    for r in regs:
        if r.kind == "config" and (check_all or r.name in READ_BACK):
            # the key is write-only: the tap below sees it on the config port
            want = 0 if r.secret else raw[r.name]
            assert c.read_wide(r.offset, r.width) == want, r.name
    assert c.read(REG["status"].offset) & 0x6 == 0             # not rejected, no bad write
    assert tap.commits == 1
    (_, port_regs, table, ts), = [e for e in tap.events if type(e) is tuple]
    assert port_regs == {r.name: raw[r.name] for r in regs if r.kind in ("config", "fixed")}
    assert list(table) == cfg.rate_table()                     # the new bank is active
    return soc, port, c, tap


def test_configure_loads_the_table_and_fpq_drops_under_overload():
    """``configure`` with a short t_clear and avg_tau_s (clears and samples of the average
    within the run, on the clock): the registers read back, the config port shows every
    register and the commit swaps the r(N) table in, in one clock; under overload FPQ drops
    early; every verdict, the counters and the telemetry equal the golden model's replay of
    the SoC's accept and commit clocks."""
    soc, port, c, tap = configured()
    for name, v in (("tg_flows", 8), ("tg_arrival_period", 1), ("tg_drain_period", 4),
                    ("tg_enable", 1)):
        c.write(TG_REG[name].offset, v)
    port.run_cycles(3000)
    c.write(TG_REG["tg_enable"].offset, 0)
    c.write(TG_REG["tg_drain_period"].offset, 0)
    # pipeline empty, and the average settled on the queue (a time constant is 64 clocks)
    port.run_cycles(1500)
    s, want, model = checked_snapshot(c, tap)
    assert s["early_drops"] > 100
    assert model.fc.clears > 50                        # clears ran on the clock meanwhile
    assert {k: s[k] for k in COUNTERS} == model.counters
    assert {k: s[k] for k in TELEMETRY} == want
    # the average followed the queue (from below it stops within 2**wq_shift of it)
    assert 0 <= (s["occ_pkts"] << 16) - s["avg"] < 16 and s["occ_pkts"] > 10


@pytest.mark.long
def test_configure_everything_long():
    """Every configuration register reads back over the bus after ``configure``."""
    configured(check_all=True)


def test_configure_rejected_commit_names_register():
    soc, port, c, tap = make()
    stop_and_drain(c, port)
    # v_max of the board is at most vec_bits; a config for a bigger vector is refused by
    # the board's commit check (the host-side Config is built for the board's build, so we
    # write a bad shadow directly and then commit through configure's path)
    c.write(REG["v_max"].offset, BUILD.vec_bits + 1)
    c.write(REG["control"].offset, 1)
    port.run_cycles(100)
    status = c.read(REG["status"].offset)
    assert status & (1 << STATUS_BITS["COMMIT_REJECTED"])
    assert (status >> 8) & 0xFF == [r.name for r in registers(BUILD)].index("v_max")
    assert tap.commits == 0                  # nothing reached the queue manager


def test_monitor_view():
    soc, port, c, tap = make()
    out = io.StringIO()
    last = monitor(port, interval=0.0, count=2, clk_hz=1e6, clear=False, out=out,
                   settings={"tg_flows": 12}, sleep=lambda s: port.run_cycles(800))
    text = out.getvalue()
    assert text.count("FPQ self-test") == 2
    assert f"N (active flows)  {last['n_raw']:>12d}" in text
    assert "from 12 flows" in text
    assert f"avg_delay {BUILD.avg_delay}" in text
    assert "per clock" in text and "arrivals" in text
    assert last["n_raw"] > 0          # bits of earlier flows stay until cleared (t_clear)
    model, count = tap.check()        # the verdicts so far, against the replay
    assert count > 100


def test_configure_a_board_whose_build_fixes_fields():
    """The build register says that fields are fixed (bit 17) but not which: the host must
    name the build, which is checked against the register and against the fixed registers'
    values on the board; those are read, never written. ``avg_tau_s`` with ``tick_hz`` fixes
    ``wq_shift`` and ``avg_sample_period``; ``configure`` with another board clock is refused
    naming ``tick_hz``."""
    from fpq.fields import ConfigError
    from fpq_boards.protocol import BridgeError
    fixed = {"avg_tau_s": 1e-3, "tick_hz": 1e6, "hash_key": bytes(range(20)), "mode": "fpq"}
    build = Build(vec_bits=256, table_depth=32, fixed=fixed)
    regs = {r.name: r for r in registers(build)}
    assert regs["wq_shift"].kind == regs["avg_sample_period"].kind == "fixed"
    soc, port, c, tap = make(build)
    stop_and_drain(c, port)
    with pytest.raises(BridgeError, match="bit 17"):
        read_build(c)
    with pytest.raises(BridgeError, match="build register is"):
        read_build(c, BUILD)
    # same build word, another fixed value: found by reading the fixed register (a time
    # constant of 2 ms gives wq_shift 9, 1 ms gives 8)
    other = Build(vec_bits=256, table_depth=32, fixed=dict(fixed, avg_tau_s=2e-3))
    with pytest.raises(BridgeError, match="wq_shift: the board's fixed value 0x8 is not the "
                                          "build's 0x9"):
        configure(c, tick_hz=1e6, build=other, tables_to_load=())
    with pytest.raises(ConfigError, match="avg_tau_s: 0.005 is not allowed"):
        configure(c, tick_hz=1e6, build=build, avg_tau_s=5e-3, tables_to_load=())
    with pytest.raises(ConfigError, match="tick_hz: 2000000.0 is not allowed"):
        configure(c, tick_hz=2e6, build=build, tables_to_load=())
    with pytest.raises(ValueError, match="tables_to_load: decay_table is not a table"):
        configure(c, tick_hz=1e6, build=build, tables_to_load=("decay_table",))
    cfg = configure(c, tick_hz=1e6, build=build, wait=lambda: port.run_cycles(50),
                    tables_to_load=(), red_max_p=0.25)
    assert c.read(REG["status"].offset) & 0x6 == 0        # not rejected, no bad write
    raw = cfg.registers()
    assert (raw["wq_shift"], raw["avg_sample_period"]) == (8, 4)
    for name in ("wq_shift", "avg_sample_period", "mode", "red_max_p"):
        assert c.read_wide(REG[name].offset, REG[name].width) == raw[name], name
    # the fixed key is not checked (it reads 0), nor written
    assert c.read_wide(REG["hash_key"].offset, REG["hash_key"].width) == 0
    assert raw["red_max_p"] == 1 << 30
    assert tap.commits == 1
    tap.check()


def test_configure_draws_a_key_the_uart_cannot_read_and_the_lock_holds_it():
    """``configure`` without a key draws one from the OS (not the public default, not weak)
    and the queue manager runs on it (the tap sees it on the config port), while every word
    of ``hash_key`` reads 0 through the UART. Once the bridge is locked a new key, a
    configuration write, a commit and a counter clear are all refused (``BridgeLocked``):
    the active configuration, the counters and STATUS stay as they were; reads go on."""
    from fpq.fields import RSS_KEY
    from fpq.keys import key_weakness
    from fpq_boards.protocol import BridgeLocked
    soc, port, c, tap = make(CLOCKED)
    stop_and_drain(c, port)
    cfg = configure(c, tick_hz=1e6, build=CLOCKED, wait=lambda: port.run_cycles(50),
                    tables_to_load=(), **SHORT)
    key = cfg.registers()["hash_key"]
    assert cfg.hash_key != RSS_KEY and key_weakness(cfg.hash_key) is None
    (_, port_regs, _, _), = [e for e in tap.events if type(e) is tuple]
    assert port_regs["hash_key"] == key
    hk = REG["hash_key"]
    assert [c.read(hk.offset + 4 * w) for w in range(hk.words)] == [0] * hk.words
    c.write(TG_REG["tg_enable"].offset, 1)
    port.run_cycles(300)
    c.lock()
    arrivals = c.read_wide(REG["arrivals"].offset, 64)
    assert arrivals > 0
    for addr, value in ((hk.offset, 0x1234), (REG["v_max"].offset, 7),
                        (REG["control"].offset, 1), (REG["arrivals"].offset, 0),
                        (TG_REG["tg_enable"].offset, 0)):
        with pytest.raises(BridgeLocked):
            c.write(addr, value)
    port.run_cycles(300)
    assert c.read(REG["status"].offset) & 0x6 == 0       # no BAD_WRITE: nothing reached it
    assert c.read(REG["v_max"].offset) == SHORT["v_max"]
    assert c.read(TG_REG["tg_enable"].offset) == 1       # the generator still runs
    assert c.read_wide(REG["arrivals"].offset, 64) > arrivals    # not cleared
    assert tap.commits == 1
    assert c.locked()
