"""The ns-3 cross-check driver, without ns-3: our side of the runs and the table."""

import pytest

from fpq_sim import crosscheck
from fpq_sim.stats import est


@pytest.mark.parametrize("disc", ["droptail", "red"])
def test_our_side_of_the_cross_check(disc):
    p = crosscheck.params(disc, 10, 1, duration=12.0, warmup=4.0)
    r = crosscheck.our_run(p)
    assert r["arrivals"] > 1000 and 0 <= r["drops"] < r["arrivals"]
    assert r["loss_rate"] == pytest.approx(r["drops"] / r["arrivals"])
    # a saturated 1 Mbit/s link carries at most 217 packets/s
    assert 0.8 < r["utilisation"] <= 1.0 + 1e-9
    assert r["bottleneck_packets"] >= r["arrivals"] and r["wall_seconds"] > 0
    sc = crosscheck._scenario(p)
    g = sc["flows"][0]
    assert (g["tcp"], g["limited_transmit"], g["tick_s"]) == ("newreno", False, 0.001)
    assert sc["queue"]["model"] == "float"


def test_cross_check_table(tmp_path):
    # ten seeds a side: ours 1.0 / 1.2 % alternating (mean 1.1 %), ns-3 0.05 point higher:
    # the difference's 90 % interval, -0.05 +- 1.734 x 0.047 = +-0.082 points (Welch, df
    # 18), is within 15 % of ns-3's 1.15 % (0.17 points)
    ours, ns3 = [0.010, 0.012] * 5, [0.0105, 0.0125] * 5
    row = {"per_seed": list(zip(ours, ns3)),
           "ours_loss": est(ours), "ns3_loss": est(ns3),
           "ours_util": est([0.99, 0.98] * 5), "ns3_util": est([0.97, 0.98] * 5),
           "ours_speed": 60000.0, "ns3_speed": 12000.0}
    far = dict(row, ns3_loss=est([0.05, 0.0501] * 5), per_seed=[(0.01, 0.05), (0.012, 0.0501)])
    # overlapping intervals of three seeds are not agreement: not judged
    few = dict(row, ours_loss=est([0.01, 0.012, 0.011]), ns3_loss=est([0.011, 0.013, 0.012]))
    text = crosscheck.markdown([(("red", 30), row), (("droptail", 100), far),
                                (("red", 10), few)], 1.0, "_x_")
    lines = [l for l in text.splitlines() if l.startswith(("| 30 |", "| 100 |", "| 10 |"))]
    assert "| yes |" in lines[0] and lines[0].endswith("| 5.00 |")
    assert "| no |" in lines[1] and "| - (3 seeds) |" in lines[2]
    # the disagreeing row is spelled out seed by seed
    assert "droptail N = 100: 1.0 / 5.0 %, 1.2 / 5.0 %" in text and "red N = 30:" not in text
    assert "within +-15 % of ns-3's mean drop rate" in text and "3 seeds of" in text
    md = tmp_path / "R.md"
    md.write_text("# R\n\nkeep\n")
    crosscheck.update_results_md(str(md), text)
    crosscheck.update_results_md(str(md), text)
    t = md.read_text()
    assert t.startswith("# R\n\nkeep\n") and t.count(crosscheck.BEGIN) == 1
    # a section whose bounds are unknown is not guessed at: one marker, or the two swapped
    for broken in (f"# R\n{crosscheck.BEGIN}\nhalf\n",
                   f"# R\n{crosscheck.END}\nx\n{crosscheck.BEGIN}\n"):
        md.write_text(broken)
        with pytest.raises(ValueError, match="R.md: the markers .* must stand both"):
            crosscheck.update_results_md(str(md), text)
        assert md.read_text() == broken


def test_agreement_margin_is_relative_with_a_floor():
    assert crosscheck.loss_margin(0.10) == pytest.approx(0.015)
    assert crosscheck.loss_margin(0.001) == crosscheck.LOSS_MARGIN_MIN == 0.001
    # 10 % off with tight seeds: within 15 %; 25 % off: not
    base = [0.100, 0.102] * 5
    assert crosscheck.agreement(est([x * 1.10 for x in base]), est(base)) == "yes"
    assert crosscheck.agreement(est([x * 1.25 for x in base]), est(base)) == "no"
