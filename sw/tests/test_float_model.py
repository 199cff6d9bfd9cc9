"""The float model follows the FPQ paper's Figs. 4-7 literally."""
import math

import pytest

from fpq import Config, Arrival, Departure, pack_flow, DROP_EARLY
from fpq.drop_probability import lt_qt_float
from fpq.float_model import FloatQueueManager

TICK = 1e6   # 1 tick = 1 us, so seconds are easy to read below


def flow(i):
    return pack_flow(i, 2, 3, 4, 6)


def model(**kw):
    return FloatQueueManager(Config(tick_hz=TICK, **kw))


def test_fig4_sets_first_then_clears_floor_of_elapsed_bits():
    # v_max 100, t_clear 1 s: one bit owed per 10 ms. The arrival at 25 ms owes floor(2.5) = 2
    m = model(v_max=100, t_clear_s=1.0, clear_literal=True)
    m.arrive(Arrival(0, flow(1), 100))
    assert m.n == 1
    cleared = []
    orig = m.clear_rnd.randrange
    m.clear_rnd.randrange = lambda n: cleared.append(orig(n)) or cleared[-1]
    m.arrive(Arrival(25_000, flow(2), 100))
    assert len(cleared) == 2
    # literal: t_last jumps to the arrival, the half bit owed is lost
    assert m.t_last == pytest.approx(0.025)


def test_carry_mode_keeps_the_remainder():
    lit, carry = model(v_max=100, t_clear_s=1.0, clear_literal=True), \
        model(v_max=100, t_clear_s=1.0, clear_literal=False)
    counts = {}
    for name, m in (("literal", lit), ("carry", carry)):
        n = 0
        orig = m.clear_rnd.randrange

        def counting(k, orig=orig):
            nonlocal n
            n += 1
            return orig(k)
        m.clear_rnd.randrange = counting
        for i in range(1, 401):            # an arrival every 25 ms for 10 s
            m.arrive(Arrival(25_000 * i, flow(i % 7), 100))
        counts[name] = n
    assert counts["carry"] == 1000          # exactly v_max * 10 s / t_clear
    assert counts["literal"] == 800         # floor(2.5) = 2 per arrival


def test_fpq_probability_is_fig5_fig6():
    m = model(p_pkts=21.7)
    m.avg = 37.0
    for n in (1, 10, 75):
        q_t, l_t = lt_qt_float(n, 21.7)
        assert m.probability(n) == pytest.approx(min(1.0, l_t * 37.0 / q_t))


def test_red_floyd_count_drops_at_least_every_one_over_p():
    m = model(mode="red", red_min_th=0, red_max_th=100, red_max_p=0.1, avg_tau_s=0.0)
    assert m.w == 1.0                                # no averaging: avg is the queue
    t = 0
    for _ in range(50):
        t += 1000
        m.arrive(Arrival(t, flow(1), 100))
    assert m.occ_pkts <= 50
    acts = []
    for _ in range(5000):
        t += 1000
        v = m.arrive(Arrival(t, flow(1), 100))
        acts.append(v.action)
        if v.action != DROP_EARLY:
            m.depart(Departure(t, 100))
    drops = [i for i, a in enumerate(acts) if a == DROP_EARLY]
    gaps = [b - a for a, b in zip(drops, drops[1:])]
    p_b = m.probability(0)
    assert max(gaps) <= int(1 / p_b) + 1


def test_weight_is_adaptive_red_s_rule_for_the_time_constant():
    # w_q = 1 - exp(-pkt_time_s / avg_tau_s) (fpq.float_model.float_wq): a time constant of
    # 1 / ln(16/15) packet times is a weight of exactly 1/16 per arrival
    m = model(avg_tau_s=0.001 / math.log(16 / 15), pkt_time_s=0.001)
    assert m.w == pytest.approx(1 / 16, rel=1e-12)
    for i in range(5):                             # a queue of 3 seen by every arrival
        m.occ_pkts = 3
        m.arrive(Arrival(1000 * (i + 1), flow(1), 100))
    assert m.avg == pytest.approx(3 * (1 - (15 / 16) ** 5), rel=1e-12)


def test_idle_decay_is_one_minus_w_to_the_idle_packets():
    # weight 1/16 (as above); 10 ms idle at 1 ms per packet time = 10 empty samples, then the
    # arrival's own sample of the empty queue: 16 (15/16)^11
    m = model(avg_tau_s=0.001 / math.log(16 / 15), pkt_time_s=0.001)
    m.avg = 16.0
    m.occ_pkts = 1
    m.occ_bytes = 100
    m.depart(Departure(0, 100))
    m.arrive(Arrival(10_000, flow(1), 100))     # 10 ms idle = 10 packet times, then q = 0
    assert m.avg == pytest.approx(16.0 * (1 - 1 / 16) ** 11)
