"""Metamorphic tests of the bit-exact queue manager: two configurations on the same traffic,
and a relation between their outcomes that must hold whatever the individual verdicts are
(as ns-3's traffic-control tests compare queue discs on one packet sequence).

Where a relation holds exactly and where only in expectation:

* The early decision of an arrival depends on its flow count ``n``, on the average ``A`` and
  on the random number ``u`` drawn for it (every arrival draws one, in every mode). ``n`` does
  not depend on the decisions; ``A`` does, through the queue: a configuration that drops more
  keeps a shorter queue, so its later probabilities are lower. With ``A`` frozen (a sample
  period longer than the run; ``frozen_average``) the early decisions are a function of the
  configuration and the trace alone, and the relations on limits, P and ECN hold event by
  event. With a live average they hold for the expected drop count only: those tests run the
  two configurations on the same Poisson arrivals and the same fixed-rate link
  (``fpq.synthetic.serve_link``, the same random numbers), over seeds, and require the 95 %
  confidence interval of the paired difference to lie on the stated side of zero.
* The flow count is a function of the arrivals (their clocks and flows) and the clear
  schedule alone, so "more flows never lower N" holds at every clock when the clears and the
  common flows' arrivals are the same; over independent clears and traffic it is a relation of
  means, checked with the spread measured over seeds and against the bitmap's expectation.

Traces are sequences of accept clocks: in each clock at most one departure (a service
opportunity of the link: it removes a packet if there is one, else it counts a
``dep_error``), then at most one arrival.
"""

import math
import random
import statistics

from hypothesis import given, settings, strategies as st
import pytest

from fpq import (Config, Build, QueueManager, Arrival, Departure, MARK, DROP_EARLY, DROP_FORCED,
                 pack_flow)
from fpq.flow_hash import toeplitz, mix, FLOW_BITS
from fpq.formats import QAVG
from fpq.synthetic import flow_keys, poisson_arrivals, serve_link

TICK = 1e6
#: a small build for the many short runs: its tables are computed in a fraction of the time
SMALL = Build(vec_bits=256, table_depth=256)
FILL_FLOW = pack_flow(0x0B000001, 0x0B000002, 7, 7, 17)
LONGEST_PERIOD = (1 << 32) - 1
DROPS = (DROP_EARLY, DROP_FORCED)
#: Student's t, 97.5 % quantile, for the seeds these tests use (df = seeds - 1)
T975 = {9: 2.262, 11: 2.201, 19: 2.093}
EXAMPLES = settings(max_examples=20, deadline=None)


# ---- helpers -----------------------------------------------------------------------------------
def frozen_average(cfg, queue):
    """A model under ``cfg`` whose average stays at exactly ``queue`` packets, with an empty
    queue, and the first clock free for traffic. The queue is filled under drop-tail with the
    average equal to the latest sample (``wq_shift`` 0), then ``cfg`` is committed with a
    sample period of 2^32 - 1 clocks (the one sample already scheduled still sees the full
    queue), and the queue is drained after that sample: no later sample falls in the run."""
    fill = cfg.replace(mode="droptail", limit_pkts=(1 << 20) - 1, limit_bytes=(1 << 32) - 1)
    qm = QueueManager(fill.override(wq_shift=0, avg_sample_period=4))
    t = 1
    for _ in range(queue):
        qm.arrive(Arrival(t, FILL_FLOW, 100))
        t += 1
    qm.configure(cfg.override(wq_shift=0, avg_sample_period=LONGEST_PERIOD), t + 8)
    t += 20
    for _ in range(queue):
        qm.depart(Departure(t, 100))
        t += 1
    t += 20                                   # past the publication delay of that sample
    qm.advance(t)
    assert qm.snapshot()["avg"] == queue << QAVG.frac_bits and qm.occ_pkts == 0
    return qm, t + 1


def random_trace(seed, t0, arrivals, p_depart, flows=40, ecn_share=0.5,
                 lengths=(576,), dep_lengths=None):
    """Arrivals (one per clock, from ``flows`` flows, random lengths and ECN bits) and, before
    each with probability ``p_depart``, a departure (a service opportunity)."""
    rnd = random.Random(seed)
    pool = [pack_flow(0x0A000000 + i, 0x0A010000 + i, 1024 + i, 80, 6) for i in range(flows)]
    out, t = [], t0
    for _ in range(arrivals):
        if rnd.random() < p_depart:
            out.append(Departure(t, rnd.choice(dep_lengths or lengths)))
        out.append(Arrival(t, rnd.choice(pool), rnd.choice(lengths),
                           rnd.random() < ecn_share))
        t += rnd.choice((1, 2, 3))
    return out


def replay(qm, events):
    """Feed ``events``; after each event: ``(verdict or None, drops so far, dropped bytes so
    far, occ_pkts, occ_bytes)``."""
    out, drops, dropped_bytes = [], 0, 0
    for e in events:
        v = None
        if type(e) is Departure:
            qm.depart(e)
        else:
            v = qm.arrive(e)
            if v.action in DROPS:
                drops += 1
                dropped_bytes += e.length
        out.append((v, drops, dropped_bytes, qm.occ_pkts, qm.occ_bytes))
    return out


def early(v):
    return v.action in (DROP_EARLY, MARK)


def paired_ci(diffs):
    """``(mean, half-width of its 95 % confidence interval)`` of paired differences."""
    m = statistics.fmean(diffs)
    return m, T975[len(diffs) - 1] * statistics.stdev(diffs) / math.sqrt(len(diffs))


# ---- exact relations: the average frozen -----------------------------------------------------
@EXAMPLES
@given(mode=st.sampled_from(("droptail", "red", "fpq")), seed=st.integers(0, 2**32),
       small=st.integers(1, 40), extra=st.integers(1, 60), queue=st.integers(0, 25))
def test_a_smaller_packet_limit_never_drops_fewer_packets(mode, seed, small, extra, queue):
    """Limits ``small`` < ``small + extra``; arrivals faster than the service opportunities,
    so the small buffer overflows. The early decisions are the same in both runs (frozen
    average), so the smaller buffer's queue is never longer and, after every event, it has
    dropped at least as many packets: drops = arrivals - packets served - queue, and a link
    whose queue is never longer serves no more."""
    base = Config(build=SMALL, mode=mode, tick_hz=TICK, red_min_th=5.0, red_max_th=30.0,
                  red_max_p=0.1, p_pkts=10.0, t_clear_s=0.01, v_max=256,
                  seed_decide=seed % 2**64 + 1)
    runs = []
    for limit in (small, small + extra):
        qm, t0 = frozen_average(base.replace(limit_pkts=limit), queue)
        runs.append(replay(qm, random_trace(seed, t0, 1000, p_depart=0.7)))
    forced_small = 0
    for (vs, ds, _, qs, _), (vb, db, _, qb, _) in zip(*runs):
        assert ds >= db and qs <= qb
        if vs is not None:
            assert early(vs) == early(vb) and vs.prob == vb.prob and vs.n == vb.n
            forced_small += vs.action == DROP_FORCED
    assert forced_small > 0                   # the limit was reached: not a vacuous run


@EXAMPLES
@given(seed=st.integers(0, 2**32), length=st.sampled_from((40, 576, 1500)),
       small=st.integers(1, 40), extra=st.integers(1, 40), slack=st.integers(0, 39))
def test_a_smaller_byte_limit_never_drops_fewer_packets_of_one_size(seed, length, small,
                                                                    extra, slack):
    """The same with byte limits (``small`` and ``small + extra`` packets' worth, plus up to
    ``slack`` bytes) for packets and service opportunities of one size: the smaller buffer
    never holds more bytes and has never dropped fewer packets."""
    base = Config(build=SMALL, mode="fpq", tick_hz=TICK, p_pkts=10.0, t_clear_s=0.01,
                  v_max=256, seed_decide=seed % 2**64 + 1)
    runs = []
    for packets in (small, small + extra):
        qm, t0 = frozen_average(base.replace(limit_bytes=packets * length + slack), 20)
        runs.append(replay(qm, random_trace(seed, t0, 1000, p_depart=0.7, lengths=(length,))))
    for (_, ds, _, _, qs), (_, db, _, _, qb) in zip(*runs):
        assert ds >= db and qs <= qb
    assert runs[0][-1][1] > runs[1][-1][1]


@pytest.mark.parametrize("limits,events,dropped_packets,dropped_bytes", [
    # the smaller buffer refuses the big packet and takes two small ones
    ((1000, 1500), [(1, 1500), (2, 500), (3, 500)], (1, 2), (1500, 1000)),
    # the larger buffer takes a second 1000-byte packet and then has no room for 1500 bytes
    ((1500, 2000), [(1, 1000), (2, 1000), ("d", 1000), (4, 1500)], (1, 1), (1000, 1500)),
])
def test_with_mixed_sizes_a_smaller_byte_limit_can_drop_fewer(limits, events, dropped_packets,
                                                              dropped_bytes):
    """Why the byte relation above is restricted to one packet size: with mixed sizes a
    smaller byte limit can drop fewer packets, or fewer bytes, than a larger one on the same
    trace (the relation then holds neither event by event nor in packets)."""
    packets, octets = [], []
    for limit in limits:
        qm = QueueManager(Config(mode="droptail", limit_bytes=limit))
        drops = dropped = 0
        for t, (when, length) in enumerate(events, 1):
            if when == "d":
                qm.depart(Departure(t, length))
                continue
            if qm.arrive(Arrival(t, FILL_FLOW, length)).action == DROP_FORCED:
                drops += 1
                dropped += length
        packets.append(drops)
        octets.append(dropped)
    assert tuple(packets) == dropped_packets and tuple(octets) == dropped_bytes


@EXAMPLES
@given(seed=st.integers(0, 2**32), p_small=st.floats(1.0, 300.0),
       factor=st.floats(1.01, 50.0), queue=st.integers(5, 60))
def test_a_smaller_fpq_p_never_drops_fewer(seed, p_small, factor, queue):
    """FPQ's target queue q_t = max(P / (2N - 1), 6N) and loss l_t fall and rise with the
    delay-bandwidth product P, so r(N) = l_t / q_t is never smaller for a smaller P. With the
    average frozen every arrival's probability is at least as high, the same random number
    makes it early whenever the larger P's run is early, and the smaller P's run has dropped
    at least as many packets after every event (a limit of 40 packets keeps forced drops in
    play)."""
    base = Config(build=SMALL, mode="fpq", tick_hz=TICK, t_clear_s=0.01, v_max=256,
                  limit_pkts=40, seed_decide=seed % 2**64 + 1)
    runs = []
    for p in (p_small, p_small * factor):
        qm, t0 = frozen_average(base.replace(p_pkts=min(p, 65535.0)), queue)
        runs.append(replay(qm, random_trace(seed, t0, 1000, p_depart=0.8, flows=8)))
    higher = 0
    for (vs, ds, _, qs, _), (vb, db, _, qb, _) in zip(*runs):
        assert ds >= db and qs <= qb
        if vs is not None:
            assert vs.n == vb.n and vs.avg == vb.avg and vs.prob >= vb.prob
            assert early(vs) or not early(vb)
            higher += vs.prob > vb.prob
    assert higher > 0                          # the two P really decide differently


@pytest.mark.parametrize("relation", ["max_th", "max_p"])
@pytest.mark.parametrize("queue", [0, 4, 5, 6, 10, 14, 15, 16, 30, 44, 45, 46, 90])
def test_a_lower_red_max_th_or_a_higher_max_p_never_lowers_the_probability(relation, queue):
    """RED (5 / 15 against 5 / 45 packets, or max_p 0.2 against 0.05) with the average frozen
    at ``queue`` packets (every region of both curves and their edges): every arrival's
    probability is at least as high with the lower max_th (the higher max_p), and strictly
    higher where the average lies between min_th and 45; with the average at or above the
    lower max_th that run drops every arrival early and the other does not, unless its own
    max_th is reached too; below min_th neither drops early. (Drop counts under RED's
    uniform spacing follow the probability only in expectation: the last test.)"""
    base = Config(build=SMALL, mode="red", tick_hz=TICK, red_min_th=5.0, red_max_th=45.0,
                  red_max_p=0.05, t_clear_s=0.01, v_max=256, seed_decide=queue + 1)
    more = base.replace(red_max_th=15.0) if relation == "max_th" else base.replace(red_max_p=0.2)
    strict = 5 < queue < 45
    runs = []
    for cfg in (more, base):
        qm, t0 = frozen_average(cfg, queue)
        runs.append([v for v, *_ in replay(qm, random_trace(queue, t0, 400, p_depart=0.7))
                     if v is not None])
    for vm, vf in zip(*runs):
        assert vm.prob >= vf.prob
        assert vm.prob > vf.prob or not strict
    early_more = sum(v.action == DROP_EARLY for v in runs[0])
    early_fewer = sum(v.action == DROP_EARLY for v in runs[1])
    if queue < 5:
        assert early_more == early_fewer == 0
    if relation == "max_th" and queue >= 15:
        assert early_more == len(runs[0]) and (early_fewer < len(runs[1]) or queue >= 45)


@pytest.mark.parametrize("mode", ["fpq", "red"])
def test_ecn_turns_early_drops_of_ecn_capable_packets_into_marks_one_for_one(mode):
    """With the average frozen and no queue limit (so no forced drop), ECN on gives every
    arrival the verdict it gets with ECN off, except that an early drop of an ECN-capable
    packet becomes a mark: the same n, average, probability and random number (the marked
    packets join the queue, which moves no later decision here: it only grows, no departure
    in the trace). Both kinds of packet are in the trace; the non-ECN-capable ones are still
    dropped."""
    base = Config(build=SMALL, mode=mode, tick_hz=TICK, red_min_th=5.0, red_max_th=300.0,
                  red_max_p=0.2, p_pkts=5.0, t_clear_s=0.01, v_max=256, seed_decide=9)
    events = random_trace(4, 0, 6000, p_depart=0.0, flows=6)
    runs = {}
    for ecn in (False, True):
        qm, t0 = frozen_average(base.replace(ecn=ecn), 200)
        shifted = [e._replace(ts=e.ts + t0) for e in events]
        runs[ecn] = (qm, [(e, qm.depart(e) if type(e) is Departure else qm.arrive(e))
                          for e in shifted])
    converted = still_dropped = 0
    for (e, off), (_, on) in zip(runs[False][1], runs[True][1]):
        if type(e) is Departure:
            continue
        assert (on.seq, on.n, on.avg, on.prob) == (off.seq, off.n, off.avg, off.prob)
        if off.action == DROP_EARLY and e.ecn:
            assert on.action == MARK
            converted += 1
        else:
            assert on.action == off.action
            still_dropped += on.action == DROP_EARLY
    c_off, c_on = runs[False][0].counters, runs[True][0].counters
    assert c_on["marked"] == converted > 50 and c_off["marked"] == 0
    assert c_on["early_drops"] == c_off["early_drops"] - converted == still_dropped > 50
    assert c_on["enqueued"] == c_off["enqueued"] + converted
    assert runs[True][0].occ_pkts == runs[False][0].occ_pkts + converted
    assert c_on["forced_drops"] == c_off["forced_drops"] == 0


# ---- exact relation: the flow count ----------------------------------------------------------
def test_more_flows_never_lower_n_at_any_clock():
    """Flows ``A`` and ``A + B``: the second run gets every arrival of the first at the same
    clock plus B's arrivals at other clocks, and the same clear schedule (seed, period). Its
    vector holds every bit the first one holds at every clock (the same sets, more of them,
    and the same bits cleared), so N is never lower: at every common arrival and at
    telemetry reads between them."""
    cfg = Config(mode="fpq", tick_hz=TICK, v_max=300, t_clear_s=0.05, seed_clear=5)
    rnd = random.Random(3)
    flows_a, flows_b = flow_keys(120, seed=1), flow_keys(400, seed=2)
    events, t = [], 0
    for _ in range(12_000):
        t += rnd.choice((1, 2, 5, 20))
        events.append((t, rnd.choice(flows_a) if rnd.random() < 0.4 else rnd.choice(flows_b)))
    few, many = QueueManager(cfg), QueueManager(cfg)
    higher = reads = 0
    set_a = set(flows_a)
    for i, (t, flow) in enumerate(events):
        v_many = many.arrive(Arrival(t, flow, 576))
        if flow in set_a:
            v_few = few.arrive(Arrival(t, flow, 576))
            assert v_many.n >= v_few.n
            higher += v_many.n > v_few.n
        if i % 50 == 49:                     # a telemetry read between arrivals
            few.advance(t)
            many.advance(t)
            assert many.n_raw >= few.n_raw
            reads += 1
    assert higher > 1000 and reads == 240
    assert few.fc.clears == many.fc.clears > 400


# ---- relations of means: the flow count ------------------------------------------------------
def bitmap_expectation(flows, rate, t_clear_s, v_max, cfg):
    """E[N] of the bit vector in steady state, for ``flows`` each sending Poisson at ``rate``
    per second: bit b, hit by k_b flows (the contract's index of the hash of ``cfg``'s build:
    Toeplitz, mixed by default), is set
    unless no arrival of its flows came since its last clear. Clears come every
    Δ = t_clear / v_max and pick b with probability 1/v_max, so the time since b's last clear
    is Δ (G + U), G geometric from 0, U uniform, and
    P(clear) = E[exp(-λ Δ U)] E[exp(-λ Δ G)] with λ = k_b rate."""
    hits = {}
    for f in flows:
        h = toeplitz(cfg.hash_key, f, FLOW_BITS)
        if cfg.build.hash_mix:
            h = mix(h, int.from_bytes(cfg.hash_mix_key, "big"))
        b = (h * v_max) >> 32
        hits[b] = hits.get(b, 0) + 1
    delta, q = t_clear_s / v_max, 1 / v_max
    total = 0.0
    for k in hits.values():
        x = k * rate * delta
        total += 1 - (-math.expm1(-x) / x) * q / (1 - (1 - q) * math.exp(-x))
    return total


def time_average_n(cfg, flows, rate, duration_s, warmup_s, seed, reads_per_s=200):
    """The time average of N over ``[warmup_s, duration_s)`` (telemetry read
    ``reads_per_s`` times a second) with each flow sending Poisson at ``rate``."""
    rnd = random.Random(seed)
    arrivals = poisson_arrivals(flows, rate, 0.0, duration_s, cfg.tick_hz, rnd)
    reads = [int(warmup_s * cfg.tick_hz) + int(i * cfg.tick_hz / reads_per_s)
             for i in range(int((duration_s - warmup_s) * reads_per_s))]
    qm = QueueManager(cfg)
    total, j, last = 0, 0, -1
    for clock, key in arrivals:
        while j < len(reads) and reads[j] < clock:
            qm.advance(max(reads[j], last))
            total += qm.n_raw
            last = max(reads[j], last) + 1
            j += 1
        clock = max(clock, last)
        qm.arrive(Arrival(clock, key, 576))
        last = clock + 1
    for r in reads[j:]:
        qm.advance(max(r, last))
        total += qm.n_raw
        last = max(r, last) + 1
    return total / len(reads)


def test_more_flows_raise_the_mean_n_as_the_bitmap_expects():
    """120 and 240 flows (the second set contains the first), 2 packets/s each, v_max 256,
    t_clear 1 s, over 12 seeds with independent traffic and clears: the mean of the time
    averages of N is higher for more flows, by more than four standard errors of the
    difference, and each mean lies within four standard errors (plus 0.5 % for the arrivals'
    integer clocks) of the bitmap's expectation for those flows' hash indices."""
    cfg = Config(mode="fpq", tick_hz=1e5, v_max=256, t_clear_s=1.0)
    keys = flow_keys(240, seed=11)
    means = {}
    for count in (120, 240):
        values = [time_average_n(cfg.replace(seed_clear=100 + s), keys[:count], 2.0, 10.0,
                                 3.0, seed=s) for s in range(12)]
        m, se = statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))
        want = bitmap_expectation(keys[:count], 2.0, 1.0, 256, cfg)
        assert abs(m - want) <= 4 * se + 0.005 * want, (count, m, se, want)
        means[count] = (m, se)
    (m1, se1), (m2, se2) = means[120], means[240]
    assert m2 - m1 > 4 * math.hypot(se1, se2)


# ---- relations of means: drops with a live average -------------------------------------------
def paired_drops(cfg_more, cfg_fewer, flows=50, load=1.1, seeds=10, duration_s=5.0):
    """Per seed, drops of ``cfg_more`` minus drops of ``cfg_fewer`` on the same Poisson
    arrivals (``load`` times a 1000 packet/s link, 500-byte packets) with the same random
    numbers; returns the paired mean and its 95 % half-width."""
    keys = flow_keys(flows, seed=1)
    diffs = []
    for s in range(seeds):
        arrivals = poisson_arrivals(keys, load * 1000 / flows, 0.0, duration_s, TICK,
                                    random.Random(s))
        counts = []
        for cfg in (cfg_more, cfg_fewer):
            run = serve_link(QueueManager(cfg.replace(seed_decide=s + 1, seed_clear=s + 7)),
                             arrivals, 1000, 500, TICK, keep_events=False)
            counts.append(sum(v.action in DROPS for v in run.verdicts))
        diffs.append(counts[0] - counts[1])
    return paired_ci(diffs)


RED = Config(mode="red", tick_hz=TICK, red_min_th=5.0, red_max_th=15.0, red_max_p=0.1,
             avg_tau_s=0.05, limit_pkts=200)
FPQ = Config(mode="fpq", tick_hz=TICK, p_pkts=20.0, avg_tau_s=0.05, limit_pkts=1000,
             t_clear_s=1.0, v_max=1000)


@pytest.mark.parametrize("name,more,fewer,flows", [
    ("RED max_th 15 < 60", RED, RED.replace(red_max_th=60.0), 50),
    ("RED max_p 0.2 > 0.05", RED.replace(red_max_p=0.2), RED.replace(red_max_p=0.05), 50),
    ("FPQ P 20 < 500", FPQ, FPQ.replace(p_pkts=500.0), 5),
    ("FPQ limit 30 < 200", FPQ.replace(limit_pkts=30), FPQ.replace(limit_pkts=200), 5),
])
def test_a_more_aggressive_setting_never_drops_fewer_on_average(name, more, fewer, flows):
    """With a live average the queue the two runs keep differs, so a single run may go
    either way; the expected drop count may not. On a 10 % overloaded link (Poisson
    arrivals, 5 s, 10 seeds, paired), the setting that drops more per average queue (a lower
    max_th, a higher max_p, a smaller P for few flows, a smaller buffer) has the 95 %
    confidence interval of its extra drops above zero. Drops = arrivals - packets sent -
    packets still queued: a run that keeps a shorter queue leaves the link idle more often
    and ends with fewer packets queued."""
    mean, half = paired_drops(more, fewer, flows=flows)
    assert mean - half > 0, (name, mean, half)
