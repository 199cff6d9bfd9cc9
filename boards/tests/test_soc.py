"""The self-test SoC in Amaranth's simulator, driven only through its UART pins by the host
code (``BusClient``, ``monitor``) over ``SimulatedPort``: bus decode, the generator feeding
the queue manager, counters and telemetry against the golden model's flow hash, loading a
configuration, and the live view."""

import io

import pytest

from fpq.config import Build, Config
from fpq.flow_hash import ToeplitzHash, reduce_index
from fpq.regmap import registers, ID_VALUE, STATUS_BITS
from fpq_boards.soc import SelfTestSoC
from fpq_boards.sim_port import SimulatedPort
from fpq_boards.protocol import BusClient
from fpq_boards.traffic_generator import TG_REG, TG_ID, flow_key
from fpq_boards.monitor import snapshot, read_build, configure, monitor

BUILD = Build(vec_bits=256, table_depth=32)
REG = {r.name: r for r in registers(BUILD)}


def make(clk_freq=1e6, baud=250000, verdict_fifo="distributed", arrival_fifo=True,
         optimise="speed", counter_bits=64):
    soc = SelfTestSoC(BUILD, clk_freq=clk_freq, baud=baud, verdict_fifo=verdict_fifo,
                      arrival_fifo=arrival_fifo, optimise=optimise, counter_bits=counter_bits)
    port = SimulatedPort(soc)
    return soc, port, BusClient(port)


def stop_and_drain(client, port):
    client.write(TG_REG["tg_enable"].offset, 0)
    port.run_cycles(200)


def test_identity_build_and_bus_decode():
    soc, port, c = make()
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


@pytest.mark.parametrize("verdict_fifo, arrival_fifo, optimise, counter_bits",
                         [("distributed", True, "speed", 64),         # ULX3S
                          ("block", False, "area", 48)])              # iCEBreaker
def test_counters_and_flow_count_match_the_traffic(verdict_fifo, arrival_fifo, optimise,
                                                   counter_bits):
    soc, port, c = make(verdict_fifo=verdict_fifo, arrival_fifo=arrival_fifo,
                        optimise=optimise, counter_bits=counter_bits)
    flows, salt = 20, 0x00A0B000
    stop_and_drain(c, port)
    v_max = 200                      # a commit that changes v_max wipes the flow vector
    c.write(REG["v_max"].offset, v_max)
    c.write(REG["control"].offset, 1)
    port.run_cycles(BUILD.vec_bits + 100)
    assert c.read(REG["status"].offset) == 0
    assert c.read(REG["n_raw"].offset) == 0
    for name in ("arrivals", "enqueued", "early_drops", "forced_drops", "departures"):
        c.write(REG[name].offset, 0)                       # clear
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
    s = snapshot(c)
    sent = (s["tg_sent"] - sent0) & 0xFFFFFFFF
    assert s["arrivals"] == sent > 300
    assert s["enqueued"] + s["early_drops"] + s["forced_drops"] == s["arrivals"]
    assert s["departures"] == backlog0 + s["enqueued"] - s["tg_backlog"]
    assert s["dep_errors"] == 0
    assert s["occ_pkts"] == s["tg_backlog"] > 0               # drain slower than arrivals
    # N: distinct vector bits of the 20 flows under the golden model's hash
    cfg = Config(build=BUILD)
    h = ToeplitzHash(cfg.registers()["hash_key"])
    bits = {reduce_index(h(flow_key(i, salt)), v_max) for i in range(flows)}
    assert s["n_raw"] == len(bits)


def test_configure_loads_tables_and_fpq_drops_under_overload():
    soc, port, c = make()
    stop_and_drain(c, port)
    # the r(N) table only (the 256-word decay table takes minutes over the simulated UART;
    # the long test below loads everything)
    cfg = configure(c, tick_hz=1e6, wait=lambda: port.run_cycles(50), tables_to_load=("rate_table",))
    raw = cfg.registers()
    for name in ("mode", "v_max", "clear_period", "red_max_th"):
        assert c.read_wide(REG[name].offset, REG[name].width) == raw[name]
    assert c.read(REG["status"].offset) & 0x6 == 0             # not rejected, no bad write
    c.write(REG["early_drops"].offset, 0)
    for name, v in (("tg_flows", 8), ("tg_arrival_period", 1), ("tg_drain_period", 4),
                    ("tg_enable", 1)):
        c.write(TG_REG[name].offset, v)
    port.run_cycles(3000)
    s = snapshot(c)
    assert s["early_drops"] > 0
    assert s["n_raw"] >= 6


def test_configure_rejected_commit_names_register():
    soc, port, c = make()
    stop_and_drain(c, port)
    from fpq_boards.protocol import BridgeError
    # v_max of the board is at most vec_bits; a config for a bigger vector is refused by
    # the board's commit check (the host-side Config is built for the board's build, so we
    # write a bad shadow directly and then commit through configure's path)
    c.write(REG["v_max"].offset, BUILD.vec_bits + 1)
    c.write(REG["control"].offset, 1)
    port.run_cycles(100)
    status = c.read(REG["status"].offset)
    assert status & (1 << STATUS_BITS["COMMIT_REJECTED"])
    assert (status >> 8) & 0xFF == [r.name for r in registers(BUILD)].index("v_max")


def test_monitor_view():
    soc, port, c = make()
    out = io.StringIO()
    last = monitor(port, interval=0.0, count=2, clk_hz=1e6, clear=False, out=out,
                   settings={"tg_flows": 12}, sleep=lambda s: port.run_cycles(800))
    text = out.getvalue()
    assert text.count("FPQ self-test") == 2
    assert f"N (active flows)  {last['n_raw']:>12d}" in text
    assert "from 12 flows" in text
    assert "per clock" in text and "arrivals" in text
    assert last["n_raw"] > 0          # bits of earlier flows stay until cleared (t_clear)


@pytest.mark.long
def test_configure_everything_long():
    soc, port, c = make()
    stop_and_drain(c, port)
    cfg = configure(c, tick_hz=1e6, wait=lambda: port.run_cycles(50))
    assert c.read(REG["status"].offset) & 0x6 == 0
    raw = cfg.registers()
    for r in registers(BUILD):
        if r.kind == "config":
            assert c.read_wide(r.offset, r.width) == raw[r.name], r.name


def test_configure_a_board_whose_build_fixes_fields():
    """The build register says that fields are fixed (bit 17) but not which: the host must
    name the build, which is checked against the register and against the fixed registers'
    values on the board; those are read, never written."""
    from fpq.config import ConfigError
    from fpq_boards.protocol import BridgeError
    fixed = {"wq_shift": 4, "hash_key": bytes(range(20)), "mode": "fpq"}
    build = Build(vec_bits=256, table_depth=32, fixed=fixed)
    soc = SelfTestSoC(build, clk_freq=1e6, baud=250000)
    port = SimulatedPort(soc)
    c = BusClient(port)
    stop_and_drain(c, port)
    with pytest.raises(BridgeError, match="bit 17"):
        read_build(c)
    with pytest.raises(BridgeError, match="build register is"):
        read_build(c, BUILD)
    # same build word, another fixed value: found by reading the fixed register
    other = Build(vec_bits=256, table_depth=32, fixed=dict(fixed, wq_shift=5))
    with pytest.raises(BridgeError, match="wq_shift: the board's fixed value 0x4"):
        configure(c, tick_hz=1e6, build=other, tables_to_load=())
    with pytest.raises(ConfigError, match="wq_shift: 9 is not allowed"):
        configure(c, tick_hz=1e6, build=build, wq_shift=9, tables_to_load=())
    cfg = configure(c, tick_hz=1e6, build=build, wait=lambda: port.run_cycles(50),
                    tables_to_load=(), red_max_p=0.25)
    assert c.read(REG["status"].offset) & 0x6 == 0        # not rejected, no bad write
    raw = cfg.registers()
    for name in ("wq_shift", "hash_key", "mode", "red_max_p"):
        assert c.read_wide(REG[name].offset, REG[name].width) == raw[name], name
    assert raw["red_max_p"] == 1 << 30
