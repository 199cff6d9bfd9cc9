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
    row = {"per_seed": [(0.01, 0.011), (0.012, 0.013)],
           "ours_loss": est([0.01, 0.012]), "ns3_loss": est([0.011, 0.013]),
           "ours_util": est([0.99, 0.98]), "ns3_util": est([0.97, 0.98]),
           "ours_speed": 60000.0, "ns3_speed": 12000.0}
    far = dict(row, ns3_loss=est([0.05, 0.0501]), per_seed=[(0.01, 0.05), (0.012, 0.0501)])
    text = crosscheck.markdown([(("red", 30), row), (("droptail", 100), far)], 1.0, "_x_")
    lines = [l for l in text.splitlines() if l.startswith("| 30 |") or l.startswith("| 100 |")]
    assert "| yes |" in lines[0] and lines[0].endswith("| 5.00 |")
    assert "| no |" in lines[1]
    # the disagreeing row is spelled out seed by seed
    assert "droptail N = 100: 1.0 / 5.0 %, 1.2 / 5.0 %" in text and "red N = 30:" not in text
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
