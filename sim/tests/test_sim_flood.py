"""The spoofed-tuple flood (``fpq_sim.flood``): its rate and spacing, its tuple pool, the
validation of ``[[floods]]`` groups, the bitmap expectation of the bits it keeps set, and the
``fpq attack`` command's arguments and output."""

import math
import os
import random
import statistics
from collections import Counter

import pytest

import fpq
from fpq import Arrival
from fpq.cli import main
from fpq_sim.flood import pool_tuple, expected_flow_count, VICTIM_IP
from fpq_sim.network import Network
from fpq_sim.scenario import load, validate, ScenarioError, with_overrides
from fpq_sim.parkinglot import validate_parking_lot

SCEN = os.path.join(os.path.dirname(__file__), "..", "scenarios")
ATTACK = os.path.join(SCEN, "attack-dumbbell.toml")
TICK = 150e6


def scenario(**flood):
    """The attack scenario cut to 3 s with one TCP flow and the given flood group."""
    sc = load(ATTACK, ["run.duration_s=3.0", "run.warmup_s=0.0", "flows.0.count=1"])
    return with_overrides(sc, floods=[dict({"rate_pps": 1000.0, "tuples": 1000}, **flood)])


def flood_arrivals(net):
    """The flood's descriptors at the bottleneck (its victim is the destination address)."""
    return [e for e in net.trace if len(e) == 4 and (e.flow >> 40) & 0xFFFFFFFF == VICTIM_IP]


def test_rate_and_spacing():
    """1000 packets/s from 0.5 s to 2.5 s: 2000 packets, one every 150,000 clocks (the
    queue manager's clock is 150 MHz; the accept clock rounds down or waits a clock), all
    counted at the bottleneck and delivered or dropped, none before start_s or at or after
    stop_s."""
    net = Network(scenario(start_s=0.5, stop_s=2.5), trace=True)
    net.run()
    arr = flood_arrivals(net)
    assert len(arr) == 2000 == net.summary()["floods"]["arrivals"]
    gaps = {b.ts - a.ts for a, b in zip(arr, arr[1:])}
    assert gaps <= {149_999, 150_000, 150_001}
    assert 0.5 * TICK <= arr[0].ts <= 0.5 * TICK + 2 and arr[-1].ts < 2.5 * TICK
    s = net.summary()
    # the queue drains within 0.5 s of the last packet: every packet delivered or dropped
    assert s["floods"]["delivered"] + s["floods"]["drops"] == 2000
    assert all(e.length == 64 for e in arr)


def test_pool_draws_and_spoof_every():
    """A pool of 20 tuples, 3000 packets, a new draw every 3rd packet: the tuple changes only
    at packets 0, 3, 6, ...; every tuple seen is one of the pool's 20, which are distinct;
    the 1000 draws spread evenly (each tuple's count within 5 standard deviations of
    1000 / 20) and the TCP flow's own tuple is not among them."""
    net = Network(scenario(rate_pps=1000.0, tuples=20, spoof_every=3), trace=True)
    net.run()
    keys = [e.flow for e in flood_arrivals(net)]
    assert len(keys) == 3000
    changes = [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]]
    assert all(i % 3 == 0 for i in changes) and len(changes) > 900
    flood = net.floods[0]
    pool = {pool_tuple(i, flood.salt) for i in range(20)}
    assert len(pool) == 20 and set(keys) == pool
    counts = Counter(keys[::3])
    sd = math.sqrt(1000 * (1 / 20) * (19 / 20))
    assert all(abs(c - 50) <= 5 * sd for c in counts.values())
    assert net.senders[0].flow_key not in pool and flood.tuples_drawn == 1000


def test_pool_entries_are_distinct_and_pools_differ():
    """The source address is a bijection of the index: 200,000 entries, 200,000 tuples;
    another salt gives another pool; the tuples are UDP towards the victim."""
    a = [pool_tuple(i, 12345) for i in range(200_000)]
    assert len(set(a)) == len(a)
    assert not set(a[:1000]) & {pool_tuple(i, 999) for i in range(1000)}
    src, dst, sport, dport, proto = fpq.unpack_flow(a[7])
    assert (dst, dport, proto) == (VICTIM_IP, 53, 17) and 1024 <= sport < 65536


def test_seeds_change_the_draws_and_leave_tcp_streams_alone():
    """The flood draws from a stream of its own: another seed, another pool; the same seed,
    the same run."""
    a, b = (Network(with_overrides(scenario(), **{"run.seed": s}), trace=True)
            for s in (1, 2))
    c = Network(with_overrides(scenario(), **{"run.seed": 1}), trace=True)
    for net in (a, b, c):
        net.run(1.0)
    assert [e.flow for e in flood_arrivals(a)] == [e.flow for e in flood_arrivals(c)]
    assert a.floods[0].salt != b.floods[0].salt


@pytest.mark.parametrize("flood,needle", [
    ({"rate_pps": 0.0}, "floods[0].rate_pps: 0.0 is out of range [0.001, 10000000.0]"),
    ({"rate_pps": 2e7}, "floods[0].rate_pps: 20000000.0 is out of range"),
    ({"tuples": 0}, "floods[0].tuples: 0 is out of range [1, 4294967296]"),
    ({"tuples": 2**32 + 1}, "floods[0].tuples: 4294967297 is out of range"),
    ({"tuples": 2.5}, "floods[0].tuples: 2.5 must be an integer"),
    ({"spoof_every": 0}, "floods[0].spoof_every: 0 is out of range [1, 1000000000]"),
    ({"packet_bytes": 20}, "floods[0].packet_bytes: 20 is out of range [28, 65535]"),
    ({"start_s": 3.0}, "floods[0].start_s: 3.0 must be less than run.duration_s (3.0)"),
    ({"start_s": 1.0, "stop_s": 0.5}, "floods[0].stop_s: 0.5 must be greater than start_s"),
    ({"rate_pps": 1e7, "start_s": 0.0}, "floods[0].rate_pps: 10000000.0 packets/s over 200 s"),
    ({"colour": 1}, "floods[0].colour: unknown key"),
    ({"rate_pps": "fast"}, "floods[0].rate_pps: 'fast' is not a number"),
])
def test_bad_flood_groups_name_the_key(flood, needle):
    doc = {"run": {"duration_s": 3.0}, "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.01},
           "flows": [{"count": 1, "access_bw_bps": 1e7}],
           "floods": [dict({"rate_pps": 100.0, "tuples": 10}, **flood)]}
    if "rate_pps" in flood and flood["rate_pps"] == 1e7:
        doc["run"]["duration_s"] = 200.0
    with pytest.raises(ScenarioError) as exc:
        validate(doc)
    assert needle in str(exc.value)


def test_floods_must_be_an_array_of_tables_and_the_parking_lot_has_none():
    doc = {"run": {"duration_s": 3.0}, "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.01},
           "flows": [{"count": 1, "access_bw_bps": 1e7}], "floods": {"rate_pps": 1.0}}
    with pytest.raises(ScenarioError, match=r"^floods: must be an array of tables"):
        validate(doc)
    doc["floods"] = [{"rate_pps": 1.0, "tuples": 1}]
    doc["topology"] = {"hops": 2}
    doc["flows"][0]["route"] = "long"
    with pytest.raises(ScenarioError, match=r"^floods: a parking lot has no flood sources"):
        validate_parking_lot(doc)


@pytest.mark.parametrize("tuples,spoof_every", [(1_000_000, 1), (1000, 1), (1_000_000, 4)])
def test_the_flow_count_a_flood_keeps_is_the_bitmap_s_expectation(tuples, spoof_every):
    """The golden model fed a flood alone (256 packets/s, v_max 256, t_clear 1 s: about half
    the vector for fresh tuples, and pools that revisit their tuples): the time average of N
    over seeds lies within four standard errors of ``expected_flow_count``, plus 2 % for its
    Poisson approximation of the clear schedule and for the collisions of this one pool
    against their expectation over hash keys."""
    cfg = fpq.Config(mode="fpq", tick_hz=1e5, v_max=256, t_clear_s=1.0)
    rate, salt = 256.0, 77
    values = []
    for seed in range(10):
        rnd = random.Random(seed)
        qm = fpq.QueueManager(cfg.replace(seed_clear=seed + 1))
        total = reads = 0
        key = None
        for k in range(int(rate * 12)):
            clock = int(k / rate * cfg.tick_hz)
            if k % spoof_every == 0:
                key = pool_tuple(rnd.randrange(tuples), salt)
            qm.arrive(Arrival(clock, key, 64))
            if k >= rate * 4 and k % 8 == 0:      # after 4 t_clear, read N 32 times a second
                total += qm.n_raw
                reads += 1
        values.append(total / reads)
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values))
    want = expected_flow_count(rate, tuples, spoof_every, 256, 1.0)
    assert abs(mean - want) <= 4 * se + 0.02 * want, (mean, se, want)


def test_expected_flow_count_limits():
    """A pool far larger than the vector: v_max x / (1 + x), x = new tuples per t_clear per
    bit; one tuple: one bit, set with probability a t / (a t + 1)."""
    assert expected_flow_count(1250, 2**32, 1, 5000, 4.0) == pytest.approx(2500, rel=1e-3)
    assert expected_flow_count(5000, 2**32, 1, 5000, 4.0) == pytest.approx(4000, rel=1e-3)
    assert expected_flow_count(10, 1, 1, 5000, 4.0) == pytest.approx(40 / 41, rel=1e-9)


@pytest.mark.parametrize("args,needle", [
    (["--seeds", "1"], "--seeds: 1 is out of range [2, 100]"),
    (["--jobs", "0"], "--jobs: 0 is out of range [1, 64]"),
    (["--n-cap", "0"], "--n-cap: 0 is out of range [1, 8191]"),
    (["--tuples", "10,x"], "--tuples: '10,x' must be comma-separated integers"),
    (["--tuples", "0"], "--tuples: 0 is out of range [1, 4294967296]"),
    (["--rates", "0"], "--rates: 0.0 is out of range [0.001, 1e+07]"),
    (["--rate", "nan"], "--rate: nan is out of range"),
    (["--pool", "0"], "--pool: 0 is out of range [1, 4294967296]"),
    (["--duration", "2", "--warmup", "2"], "--warmup: 2.0 is out of range [0, 2.0) s"),
    (["--plot", "x.gif"], "--plot: 'x.gif' must end in .png, .pdf or .svg"),
    (["--scenario", os.path.join(SCEN, "fpq-fpq.toml")], "has no [[floods]] group"),
])
def test_attack_arguments_are_checked_before_anything_runs(tmp_path, capsys, args, needle):
    out = tmp_path / "t.md"
    assert main(["attack", "--out", str(out), *args]) == 2
    assert needle in capsys.readouterr().err
    assert not out.exists()


def test_attack_output_folder_must_exist(tmp_path, capsys):
    assert main(["attack", "--out", str(tmp_path / "missing" / "t.md")]) == 2
    assert "--out: the folder of" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--plot", "PLOT"]])
def test_attack_writes_its_table(tmp_path, capsys, extra):
    """A tiny sweep: no attack and one flood, four queues, two seeds; every row is there,
    the capped FPQ decides with n_cap, the uncapped one with the inflated count."""
    out = tmp_path / "attack.md"
    plot = [str(tmp_path / "attack.png") if x == "PLOT" else x for x in extra]
    assert main(["attack", "--out", str(out), "--seeds", "2", "--duration", "3",
                 "--warmup", "1", "--tuples", "1000000", "--rates", "1250",
                 "--no-progress", *plot]) == 0
    rows = [line.split(" | ") for line in out.read_text().splitlines()
            if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 8
    assert [r[1] for r in rows[:4]] == ["FPQ", "FPQ, n_cap 50", "RED", "drop-tail"]
    assert rows[0][0] == "| none" and rows[4][0].startswith("| 1250 pkt/s (0.64 Mbit/s)")
    n = {r[1]: float(r[5].split(" [")[0]) for r in rows[4:]}
    assert n["FPQ, n_cap 50"] == 50 and n["FPQ"] > 1000
    assert "_Generated by `fpq attack --out" in out.read_text()
    # where it comes from: the version, commit, the scenarios' digest and the seeds, in the
    # table and the plot
    import re
    made = re.search(r"_Made by fpq-aqm \S+, commit \S+.*; scenarios' digest ([0-9a-f]{64}); "
                     r"seeds 1 2\._", out.read_text())
    assert made
    if "--plot" in extra:
        assert made.group(1).encode() in (tmp_path / "attack.png").read_bytes()
