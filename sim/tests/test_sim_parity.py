"""fpq parity's table: estimates over seeds and the models' agreement within margins, on
made-up runs (the runs themselves are fpq parity's, minutes long)."""

import pytest

from fpq_sim import parity


def _results(seeds, exact_loss, float_loss):
    """``{key: metrics}`` of every case of ``parity.cases``, the loss of the bit-exact model
    and of the float model alternating between two values around the given means."""
    out = {}
    for key, _ in parity.cases(seeds):
        model, seed = key[3], key[4]
        loss = exact_loss if model.startswith("exact") else float_loss
        out[key] = {"utilisation": 0.95 + 0.002 * (seed % 2),
                    "loss_rate": loss * (1 + 0.01 * (seed % 2)),
                    "avg_queue_pkts": 20.0 + 0.2 * (seed % 2)}
    return out


def test_the_models_agree_within_the_margins_with_ten_seeds():
    s = parity.summarise(_results(10, 0.0200, 0.0205))
    e, f = s[("red", 1e6, 10, "exact")], s[("red", 1e6, 10, "float")]
    assert e["loss_rate"].mean == pytest.approx(0.0201) and e["loss_rate"].n == 10
    assert parity.agree(e, f) == "yes / yes / yes"
    # 20 % more loss in the float model: outside 10 % of its loss
    s = parity.summarise(_results(10, 0.0200, 0.0250))
    assert parity.agree(s[("fpq", 1e7, 30, "exact")], s[("fpq", 1e7, 30, "float")]) == \
        "yes / no / yes"
    text = parity.markdown(s, 10, 1.0)
    assert "| agree |" in text and "| yes / no / yes |" in text


def test_fewer_than_ten_seeds_are_not_judged():
    s = parity.summarise(_results(3, 0.02, 0.02))
    assert parity.agree(s[("red", 1e6, 10, "exact")], s[("red", 1e6, 10, "float")]) == "-"
    assert "3 seeds" in parity.markdown(s, 3, 1.0)
