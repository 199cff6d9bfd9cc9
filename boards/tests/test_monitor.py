"""``fpq board monitor`` and ``fpq board``: argument errors, the rendered view, bad ports."""

import pytest

from fpq.cli import main
from fpq.config import Build
from fpq.queue_manager import COUNTERS
from fpq_boards.monitor import parse_settings, render
from fpq_boards.protocol import BridgeError


def run_cli(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr()


def test_no_such_port(capsys):
    code, out = run_cli(["board", "monitor", "--port", "/dev/ttyFPQ-does-not-exist"], capsys)
    assert code == 2
    assert "--port: cannot open '/dev/ttyFPQ-does-not-exist'" in out.err


def test_port_required(capsys):
    code, out = run_cli(["board", "monitor"], capsys)
    assert code == 2
    assert "--port: required" in out.err


@pytest.mark.parametrize("item,message", [
    ("flows=0", r"--set tg_flows: 0 is out of range \[1, 65536\]"),
    ("arrival_period=70000", r"--set tg_arrival_period: 70000 is out of range \[1, 65535\]"),
    ("flows=many", "--set tg_flows: 'many' is not an integer"),
    ("sent=3", "--set: 'tg_sent' is not a writable generator register"),
    ("flows", "--set: 'flows' must be NAME=VALUE"),
])
def test_settings_checked(item, message, capsys):
    with pytest.raises(ValueError, match=message):
        parse_settings([item])
    code, out = run_cli(["board", "monitor", "--port", "x", "--set", item], capsys)
    assert code == 2 and "error" in out.err


def test_settings_parsed():
    assert parse_settings(["flows=1000", "tg_pattern=0", "drain_period=0x10"]) == \
        {"tg_flows": 1000, "tg_pattern": 0, "tg_drain_period": 16}


def test_unknown_board(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["board", "build", "de10"])
    assert exc.value.code == 2
    assert "invalid choice: 'de10'" in capsys.readouterr().err


def _snap(arrivals, drops, time, n_raw=37):
    s = {name: 0 for name in COUNTERS}
    s.update(arrivals=arrivals, early_drops=drops, enqueued=arrivals - drops,
             build=(11 | (9 << 5) | (12 << 10)), status=0, mode=2, time=time,
             n_raw=n_raw, n=n_raw, avg=int(12.5 * 65536), occ_pkts=13, occ_bytes=832,
             max_queue=20, tg_enable=1, tg_arrival_period=1, tg_flows=40, tg_pattern=1,
             tg_length=64, tg_drain_period=2, tg_salt=0, tg_backlog=13, tg_sent=arrivals,
             tg_stalls=0, tg_status=0)
    return s


def test_render_view():
    prev, cur = _snap(1000, 100, 0), _snap(3000, 600, 4000)
    text = render(prev, cur, clk_hz=25e6)
    assert "vec_bits 2048   table_depth 512   avg_delay 12" in text
    assert "N (active flows)            37" in text
    assert "12.50 pkts" in text
    assert "20.00 % (since clear)" in text          # 600 / 3000
    assert "25.00 % (last interval)" in text        # 500 / 2000
    assert "0.5000" in text                         # 2000 arrivals in 4000 clocks
    assert "1.25e+07" in text                       # ... at 25 MHz
    first = render(None, cur)
    assert "last interval" not in first


@pytest.mark.parametrize("argv, message", [
    (["--key", "3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9"], "--key: only with --configure"),
    (["--configure", "--clk-mhz", "15", "--key", "00" * 20], "--key: 0000"),
    (["--configure", "--clk-mhz", "15", "--board", "icebreaker", "--key",
      "3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9"],
     "--key: the icebreaker's bitstream fixes hash_key (fpq board build icebreaker --key "
     "HEX): it cannot be written"),
])
def test_monitor_key_is_checked_before_the_port_is_opened(argv, message, capsys):
    """A bad ``--key`` is refused before any port is opened (``--port`` names none that
    exists)."""
    code, out = run_cli(["board", "monitor", "--port", "/dev/ttyFPQ-does-not-exist", *argv],
                        capsys)
    assert code == 2 and message in out.err, out.err
    assert "cannot open" not in out.err


def test_configure_needs_the_board_clock(capsys):
    """--configure derives the registers that count clocks (clear_period, wq_shift,
    avg_sample_period, rekey_hold) with tick_hz = the board clock: without --clk-mhz it is
    refused before any port is opened (this one does not exist)."""
    code, out = run_cli(["board", "monitor", "--port", "/dev/ttyFPQ-does-not-exist",
                         "--configure"], capsys)
    assert code == 2
    assert "--clk-mhz: required with --configure (the board clock is the queue manager's " \
           "time base: tick_hz = the clock)" in out.err
    assert "cannot open" not in out.err


def test_monitor_configures_sets_then_locks_and_passes_the_key(monkeypatch, capsys):
    """``--configure --key HEX --set ... --lock``: the configuration gets the key, the
    generator settings are written before the lock (a locked bridge refuses them), and the
    view then writes nothing. The port and the bus are stand-ins that record the calls."""
    import fpq_boards.monitor as monitor_module
    from fpq_boards.protocol import BusClient
    key = bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9")
    calls = []
    monkeypatch.setattr(monitor_module, "open_port", lambda *args: "port")
    monkeypatch.setattr(monitor_module, "configure",
                        lambda client, tick_hz, build=None, **fields:
                        calls.append(("configure", fields)))
    monkeypatch.setattr(monitor_module, "apply_settings",
                        lambda client, settings: calls.append(("settings", settings)))
    monkeypatch.setattr(BusClient, "lock", lambda self: calls.append(("lock",)))
    monkeypatch.setattr(monitor_module, "monitor",
                        lambda port, settings=None, **kwargs: calls.append(("view", settings)))
    code, out = run_cli(["board", "monitor", "--port", "x", "--clk-mhz", "75", "--configure",
                         "--key", key.hex(), "--set", "flows=5", "--lock"], capsys)
    assert code == 0, out.err
    assert calls == [("configure", {"hash_key": key}), ("settings", {"tg_flows": 5}),
                     ("lock",), ("view", {})]
    assert "the UART bridge is locked" in out.err


class RecordingBus:
    """A board bus stand-in for ``monitor.configure``: the ``build`` register reads
    ``build``'s word, everything else 0 (a commit never busy, never rejected); writes are
    recorded as ``{address: value}``."""

    def __init__(self, build):
        from fpq.regmap import build_word
        self.word, self.writes = build_word(build), {}

    def read(self, addr):
        return self.word if addr == 0x004 else 0

    def read_wide(self, addr, width):
        return 0

    def write(self, addr, value):
        self.writes[addr] = value


def written_key(bus, build):
    from fpq.regmap import registers
    hk = next(r for r in registers(build) if r.name == "hash_key")
    return sum(bus.writes[hk.offset + 4 * w] << (32 * w)
               for w in range(hk.words)).to_bytes(20, "big")


def test_configure_writes_a_drawn_key_or_the_given_one_never_a_weak_one():
    """``monitor.configure`` without a key writes one drawn from the OS (another each time,
    not the public default, not weak); a given key is written as given; a weak one is
    refused naming the field before anything is written."""
    from fpq.fields import ConfigError, RSS_KEY
    from fpq.keys import key_weakness
    from fpq_boards.monitor import configure
    build = Build(vec_bits=256, table_depth=32)
    keys = []
    for _ in range(2):
        bus = RecordingBus(build)
        cfg = configure(bus, 1e6, tables_to_load=())
        keys.append(written_key(bus, build))
        assert cfg.hash_key == keys[-1]
    assert keys[0] != keys[1] and RSS_KEY not in keys
    assert all(key_weakness(k) is None for k in keys)
    good = bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9")
    bus = RecordingBus(build)
    configure(bus, 1e6, tables_to_load=(), hash_key=good)
    assert written_key(bus, build) == good
    bus = RecordingBus(build)
    with pytest.raises(ConfigError, match="hash_key: 6d5a.* is a weak key: it is the public"):
        configure(bus, 1e6, tables_to_load=(), hash_key=RSS_KEY)
    assert bus.writes == {}


def test_help_says_the_clock_is_the_time_base(capsys):
    with pytest.raises(SystemExit):
        main(["board", "monitor", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "tick_hz = the board clock" in text
    assert "r(N) table" in text and "decay" not in text


def test_read_build_decodes_sizes_and_avg_delay():
    """The build register's fields, avg_delay included ([16:10], ``fpq.regmap.build_word``),
    and the hash options ([18] no mix, [20:19] hash input, [21] IPv6 flow keys)."""
    from fpq.regmap import build_word
    from fpq_boards.monitor import read_build
    for b in (Build(vec_bits=2048, table_depth=512, avg_delay=20), Build(vec_bits=64,
              table_depth=65536, avg_delay=127), Build(),
              Build(hash_input="rss", hash_mix=False), Build(hash_input="descriptor"),
              Build(flow_key="ipv6"), Build(flow_key="ipv6", hash_input="rss")):
        class Client:
            def read(self, addr):
                assert addr == 0x004
                return build_word(b)
        assert read_build(Client()) == b

    class Unknown:
        def read(self, addr):
            return build_word(Build()) | 3 << 19
    with pytest.raises(BridgeError, match=r"build: .* names hash input 3, which this fpq "
                                          r"does not know \(0 \.\. 2\)"):
        read_build(Unknown())


# The view's rates are differences of the board's 32-bit clock counter (tg_time) between two
# readings: 2**32 clocks are 286.331 s at 15 MHz, 28.6331 s at 150 MHz (the ULX3S's default
# clock, the fastest of the boards' defaults), 2147483.648 s at the simulated board's 2000
# clocks per interval second.
WRAP_150 = (r"\(0, 28.6331\) s: the board's 32-bit clock counter wraps after 28.6331 s at the "
            r"fastest default board clock, 150 MHz \(ulx3s\); give --clk-mhz for another")


@pytest.mark.parametrize("args, message", [
    (["--interval", "inf"], r"--interval: inf s is out of range " + WRAP_150),
    (["--interval", "nan"], r"--interval: nan s is out of range " + WRAP_150),
    (["--interval", "0"], r"--interval: 0.0 s is out of range " + WRAP_150),
    (["--interval", "-1"], r"--interval: -1.0 s is out of range " + WRAP_150),
    (["--interval", "30"], r"--interval: 30.0 s is out of range " + WRAP_150),
    (["--interval", "300", "--clk-mhz", "15"],
     r"--interval: 300.0 s is out of range \(0, 286.331\) s: .* at --clk-mhz 15$"),
    (["--interval", "300", "--board", "icebreaker"],
     r"--interval: 300.0 s is out of range \(0, 286.331\) s: .* at the icebreaker's default "
     r"clock 15 MHz$"),
    (["--interval", "1e7", "--simulate"],
     r"--interval: 10000000.0 s is out of range \(0, 2.14748e\+06\) s: .* at the simulated "
     r"board's 2000 clocks per interval second$"),
    (["--clk-mhz", "nan"], r"--clk-mhz: nan MHz is out of range \[0.001, 10000\] \(tick_hz\)"),
    (["--clk-mhz", "-5"], r"--clk-mhz: -5.0 MHz is out of range \[0.001, 10000\] \(tick_hz\)"),
    (["--clk-mhz", "0"], r"--clk-mhz: 0.0 MHz is out of range \[0.001, 10000\] \(tick_hz\)"),
    (["--clk-mhz", "inf"], r"--clk-mhz: inf MHz is out of range \[0.001, 10000\]"),
])
def test_bad_interval_and_clock_are_refused_before_the_port_is_opened(args, message, capsys):
    """Nothing is opened. Before the checks, after the first view ``--interval inf`` ended
    in an OverflowError traceback from time.sleep and ``nan`` in "Invalid value NaN" naming
    no argument; ``--clk-mhz nan`` or ``-5`` showed nan or negative rates per second."""
    import re
    code, out = run_cli(["board", "monitor", "--port", "/dev/ttyFPQ-does-not-exist", *args],
                        capsys)
    assert code == 2
    line = out.err.strip()
    assert "\n" not in line and re.search(message, line), line


@pytest.mark.parametrize("args", [["--interval", "28"], ["--interval", "286", "--clk-mhz", "15"],
                                  ["--interval", "286", "--board", "icebreaker"],
                                  ["--clk-mhz", "0.001"],
                                  ["--clk-mhz", "10000", "--interval", "0.4"]])
def test_intervals_and_clocks_in_range_reach_the_port(args, capsys):
    code, out = run_cli(["board", "monitor", "--port", "/dev/ttyFPQ-does-not-exist", *args],
                        capsys)
    assert code == 2 and "--port: cannot open" in out.err
