"""Confidence intervals (fpq_sim.stats) and the per-run quantities of fpq figures, worked by
hand."""

import math

import pytest

from fpq_sim.stats import est, t975
from fpq_sim.figures import jain, group


def test_t_interval_of_a_small_sample():
    # 1..5: mean 3, s = sqrt(2.5), se = sqrt(0.5), t(0.975, 4) = 2.776 (tables):
    # half-width 2.776 x 0.70711 = 1.96293
    e = est([1, 2, 3, 4, 5])
    assert e.mean == 3.0 and e.n == 5
    assert e.lo == pytest.approx(3 - 2.776 * math.sqrt(0.5))
    assert e.hi == pytest.approx(3 + 2.776 * math.sqrt(0.5))
    assert f"{e:.2f}" == "3.00 [1.04, 4.96]"


def test_ten_seeds_use_nine_degrees_of_freedom():
    xs = [0.0] * 5 + [1.0] * 5          # mean 0.5, s^2 = 10 x 0.25 / 9
    e = est(xs)
    assert e.half == pytest.approx(2.262 * math.sqrt(2.5 / 9 / 10))


def test_t_quantiles_from_the_tables():
    assert t975(1) == 12.706 and t975(9) == 2.262 and t975(30) == 2.042
    assert t975(60) == pytest.approx(2.000) and t975(10**9) == pytest.approx(1.960, abs=1e-6)
    assert 2.000 < t975(50) < 2.021
    with pytest.raises(ValueError, match="df"):
        t975(0)


def test_one_value_has_no_spread_and_estimates_scale():
    e = est([2.5])
    assert (e.lo, e.hi) == (2.5, 2.5)
    f = est([1.0, 3.0]) * 100
    assert f.mean == 200.0 and f.lo < 200 < f.hi
    assert (est([1.0, 3.0]) / 2).mean == 1.0
    assert est([1, 2]) < 2 and est([1, 2]) > 1


def test_jain_index():
    assert jain([1, 1, 1, 1]) == 1.0
    assert jain([1, 0, 0, 0]) == 0.25                 # one flow takes everything: 1/n
    assert jain([3, 1]) == pytest.approx(16 / (2 * 10))


def test_group_collects_seeds_under_the_key_without_them():
    res = {("sweep", "fpq", 20, 2): "b", ("sweep", "fpq", 20, 1): "a",
           ("sweep", "fpq", 30, 1): "c"}
    assert group(res) == {("sweep", "fpq", 20): ["a", "b"], ("sweep", "fpq", 30): ["c"]}


def test_clip_cuts_the_interval_to_the_possible_range_not_the_mean():
    e = est([0.0, 0.0, 0.3])                 # interval below 0
    c = e.clip(0.0, 1.0)
    assert c.mean == e.mean and c.lo == 0.0 and c.hi == e.hi
    g = est([1.004, 1.006]).clip(0.0, 1.0)   # a measured mean above the bound stays
    assert g.mean == pytest.approx(1.005) and g.lo <= g.mean <= g.hi
