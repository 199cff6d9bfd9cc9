"""Fixed-point probability against the float formulas of the paper and of RED."""
from hypothesis import given, settings, strategies as st
import pytest

from fpq import Config
from fpq.drop_probability import Mode, probability, lt_qt_float
from fpq.formats import QAVG, PROB_ONE

#: documented bound (sw/README.md): relative error of p for p >= 1e-4
REL_BOUND = 1e-3


def rel_err(fixed_raw, exact):
    return abs(fixed_raw / PROB_ONE - exact) / exact


@settings(max_examples=60, deadline=None)
@given(p_pkts=st.floats(0.0, 5000.0), plus_one=st.booleans(), lc=st.booleans(),
       v_max=st.integers(100, 8192), data=st.data())
def test_fpq_fixed_vs_float(p_pkts, plus_one, lc, v_max, data):
    cfg = Config(p_pkts=p_pkts, lt_plus_one=plus_one, lc_correction=lc, v_max=v_max)
    table = cfg.rate_table()
    regs = cfg.registers()
    for _ in range(40):
        n = data.draw(st.integers(0, min(v_max, 8191)))
        avg = data.draw(st.integers(0, QAVG.max_raw))
        q_t, l_t = lt_qt_float(cfg.n_effective(n), p_pkts, plus_one)
        exact = min(1.0, l_t * (avg / (1 << QAVG.frac_bits)) / q_t)
        fixed = probability(Mode.fpq, avg, table[n], regs)
        if exact >= 1e-4:
            assert rel_err(fixed, exact) <= REL_BOUND
        assert 0 <= fixed <= PROB_ONE


def red_float(avg, lo, hi, max_p, gentle):
    if avg < lo:
        return 0.0
    if avg < hi:
        return max_p * (avg - lo) / (hi - lo)
    if gentle and avg < 2 * hi:
        return max_p + (1 - max_p) * (avg - hi) / hi
    return 1.0


@settings(max_examples=60, deadline=None)
@given(lo=st.floats(0, 1000), width=st.floats(1, 1000), max_p=st.floats(0.001, 1.0),
       gentle=st.booleans(), data=st.data())
def test_red_fixed_vs_float(lo, width, max_p, gentle, data):
    cfg = Config(mode="red", red_min_th=lo, red_max_th=lo + width, red_max_p=max_p,
                 red_gentle=gentle)
    regs = cfg.registers()
    for _ in range(40):
        avg = data.draw(st.integers(0, int(3 * (lo + width) * 65536) + 10))
        a = avg / 65536
        # thresholds as the registers hold them (rounded to QAVG)
        exact = red_float(a, regs["red_min_th"] / 65536, regs["red_max_th"] / 65536,
                          regs["red_max_p"] / PROB_ONE, gentle)
        fixed = probability(Mode.red, avg, 0, regs)
        if exact in (0.0, 1.0):
            assert fixed == exact * PROB_ONE
        elif exact >= 1e-4:
            assert rel_err(fixed, exact) <= REL_BOUND


def test_droptail_never_drops_early():
    assert probability(Mode.droptail, QAVG.max_raw, 0xFFFFFF, Config().registers()) == 0


def test_saturates_at_one():
    cfg = Config()
    assert probability(Mode.fpq, QAVG.max_raw, cfg.rate_table()[1], cfg.registers()) == PROB_ONE


def test_fpq_equals_lt_at_target_queue():
    # at q_a = q_t the adjusted loss equals the target loss l_t (paper Fig. 6)
    cfg = Config()
    for n in (10, 25, 75, 100):
        q_t, l_t = lt_qt_float(n, 21.7)
        p = probability(Mode.fpq, int(q_t * 65536), cfg.rate_table()[n], cfg.registers())
        assert p / PROB_ONE == pytest.approx(l_t, rel=1e-4)
