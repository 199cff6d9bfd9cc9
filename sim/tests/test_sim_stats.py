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


# ---- censored transfer times (Kaplan-Meier, lower-bound mean) ------------------------------

def test_kaplan_meier_worked_by_hand():
    # times 1..5, the 2nd and 5th still running: at t = 1, 5 at risk, 1 ends: S = 4/5;
    # t = 2 censored (leaves the risk set); t = 3: 3 at risk, 1 ends: S = 4/5 x 2/3 = 8/15;
    # t = 4: 2 at risk, 1 ends: S = 8/15 x 1/2 = 4/15. Median: first S <= 0.5, at t = 4.
    from fpq_sim.stats import kaplan_meier, km_median
    steps = kaplan_meier([1, 2, 3, 4, 5], [True, False, True, True, False])
    assert [t for t, _ in steps] == [1, 3, 4]
    assert [s for _, s in steps] == pytest.approx([4 / 5, 8 / 15, 4 / 15])
    assert km_median([1, 2, 3, 4, 5], [True, False, True, True, False]) == 4
    # ties: a time censored at an event time is still at risk then. t = 2: 1 of 5 ends
    # (S = 0.8), the censored 2 leaves; t = 3: 2 of 3 end (S = 0.8 / 3); t = 5: the last
    steps = kaplan_meier([2, 2, 3, 3, 5], [True, False, True, True, True])
    assert [t for t, _ in steps] == [2, 3, 5]
    assert [s for _, s in steps] == pytest.approx([0.8, 0.8 / 3, 0.0])
    assert km_median([5, 3, 3, 2, 2], [True, True, True, True, False]) == 3


def test_kaplan_meier_without_censoring_is_the_empirical_distribution():
    from fpq_sim.stats import kaplan_meier, km_median
    steps = kaplan_meier([4, 1, 3, 2], [True] * 4)
    assert [t for t, _ in steps] == [1, 2, 3, 4]
    assert [s for _, s in steps] == pytest.approx([0.75, 0.5, 0.25, 0.0])
    assert km_median([4, 1, 3, 2], [True] * 4) == 2          # first S <= 1/2
    # over half still running: the median is beyond the longest time seen (a lower bound)
    assert km_median([1, 5, 6], [True, False, False]) == 6
    assert km_median([], []) is None
    with pytest.raises(ValueError, match="2 times but 1 flags"):
        kaplan_meier([1, 2], [True])


def test_mean_lower_bound_counts_the_unfinished_at_their_elapsed_time():
    from fpq_sim.stats import mean_lower_bound
    assert mean_lower_bound([1.0, 3.0], [10.0]) == pytest.approx(14 / 3)
    assert mean_lower_bound([1.0, 3.0], []) == 2.0
    assert mean_lower_bound([], []) is None


# ---- zero counts -----------------------------------------------------------------------------

def test_zero_counts_get_the_exact_upper_bounds_of_the_tables():
    from fpq_sim.stats import zero_fraction, zero_rate
    # Clopper-Pearson 95 % for 0 of n (published tables): n = 10: 0.3085, n = 100: 0.0362
    assert zero_fraction(10) == pytest.approx(0.3085, abs=5e-5)
    assert zero_fraction(100) == pytest.approx(0.0362, abs=5e-5)
    # between the one-sided rule of three (3 / n) and 3.69 / n for large n
    assert 3 / 1000 < zero_fraction(1000) < 3.7 / 1000
    assert zero_fraction(0) == 1.0
    # Garwood's Poisson bound for 0 events: 3.689 events (tables), per unit of exposure
    assert zero_rate(1) == pytest.approx(3.689, abs=5e-4)
    assert zero_rate(200) == pytest.approx(3.689 / 200, rel=2e-4)
    with pytest.raises(ValueError, match="trials"):
        zero_fraction(-1)


def test_est_counts_uses_the_bound_only_when_every_run_saw_nothing():
    from fpq_sim.stats import est_counts, zero_fraction, zero_rate
    e = est_counts([0, 0, 0], [10, 20, 70])
    assert (e.mean, e.lo) == (0.0, 0.0) and e.hi == pytest.approx(zero_fraction(100))
    assert f"{e:.4f}" == "0.0000 [0.0000, 0.0362]"
    r = est_counts([0.0, 0.0], [50, 50], rate=True)
    assert r.hi == pytest.approx(zero_rate(100))
    one = est_counts([1.0, 1.0], [60, 40])                # no transfer over the limit
    assert (one.mean, one.hi) == (1.0, 1.0) and one.lo == pytest.approx(1 - 0.0362, abs=5e-5)
    some = est_counts([0.0, 0.1], [10, 10])
    assert (some.mean, some.lo, some.hi) == (est([0.0, 0.1]).mean, est([0.0, 0.1]).lo,
                                             est([0.0, 0.1]).hi)
    with pytest.raises(ValueError, match="2 values but 1"):
        est_counts([0, 0], [1])


# ---- equivalence -----------------------------------------------------------------------------

def test_equivalence_within_a_margin_worked_by_hand():
    from fpq_sim.stats import equivalence, t95
    # a: 1, 2 five times each: mean 1.5, s^2 = 10 x 0.25 / 9; b the same plus 0.1.
    # Welch: se^2 = 2 x s^2 / 10, df = 18; t(0.95, 18) = 1.734 (tables)
    a, b = [1.0, 2.0] * 5, [1.1, 2.1] * 5
    h = 1.734 * math.sqrt(2 * (2.5 / 9) / 10)
    e = equivalence(a, b, 0.6)
    assert e.diff == pytest.approx(-0.1)
    assert (e.lo, e.hi) == pytest.approx((-0.1 - h, -0.1 + h))
    assert e.equivalent                          # [-0.509, 0.309] within +-0.6
    assert not equivalence(a, b, 0.5).equivalent  # -0.509 is outside -0.5
    assert t95(18) == 1.734 and t95(10**9) == pytest.approx(1.645, abs=1e-6)


def test_equivalence_needs_ten_runs_a_side():
    from fpq_sim.stats import equivalence
    with pytest.raises(ValueError, match="needs at least 10"):
        equivalence([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 1.0)
    with pytest.raises(ValueError, match="margin"):
        equivalence([1.0] * 10, [1.0] * 10, 0)
    assert equivalence([1.0] * 10, [1.0] * 10, 0.01).equivalent
