"""The configuration source: paper reference values, ranges, errors that name the field."""
import pytest

from fpq import Config, ConfigError, Build
from fpq.fields import FIELDS
from fpq.drop_probability import lt_qt_float
from fpq.float_model import float_wq
from fpq.formats import RATE


@pytest.mark.parametrize("n, lt_percent", [(10, 1.13), (25, 1.60), (75, 1.91), (100, 1.96)])
def test_reference_lt_values(n, lt_percent):
    # FPQ_NOTES reference values for P = 21.7, no +1; q_t = 6N for N >= 2
    q_t, l_t = lt_qt_float(n, 21.7)
    assert q_t == 6 * n
    assert round(100 * l_t, 2) == lt_percent


def test_lt_caps_at_paper_maximum_and_n_below_one_is_one():
    assert lt_qt_float(10_000, 21.7)[1] == 0.021
    assert lt_qt_float(0, 21.7) == lt_qt_float(1, 21.7)


def test_plus_one_lowers_lt():
    assert lt_qt_float(10, 21.7, plus_one=True)[1] < lt_qt_float(10, 21.7)[1]


@pytest.mark.parametrize("field, value, fragment", [
    ("v_max", 0, "v_max: 0 is out of range [1, 8192]"),
    ("v_max", 8193, "v_max: 8193 is out of range [1, 8192]"),
    ("avg_tau_s", -1.0, "avg_tau_s: -1.0 is out of range [0.0, 10000.0] s"),
    ("pkt_time_s", 0.0, "pkt_time_s: 0.0 is out of range"),
    ("red_max_p", 1.5, "red_max_p: 1.5 is out of range [0.0, 1.0]"),
    ("mode", "blue", "mode: 'blue' must be one of droptail, red, fpq"),
    ("n_cap", 8192, "n_cap: 8192 is out of range [1, 8191]"),
    ("v_max", 10.5, "v_max: 10.5 must be an integer"),
    ("hash_key", b"short", "hash_key: must be exactly 20 bytes"),
    ("ecn", 2, "ecn: 2 must be true or false"),
    ("limit_pkts", float("nan"), "limit_pkts: nan is out of range"),
])
def test_bad_values_name_field_and_range(field, value, fragment):
    with pytest.raises(ConfigError) as exc:
        Config(**{field: value})
    assert fragment in str(exc.value)


def test_unknown_field_is_named():
    with pytest.raises(ConfigError, match="unknown configuration field.*bogus"):
        Config(bogus=1)


def test_relations_are_checked():
    with pytest.raises(ConfigError, match="red_max_th: 5.5 must be >= red_min_th \\+ 1"):
        Config(red_min_th=5, red_max_th=5.5)
    with pytest.raises(ConfigError, match="t_clear_s: .* more than one bit per clock"):
        Config(tick_hz=1e3, t_clear_s=1.0, v_max=5000)
    # the longest avg_tau_s at the fastest clock still fits the averager's registers
    assert Config(tick_hz=1e10, avg_tau_s=1e4).avg_tau_actual_s() == pytest.approx(1e4, 1e-6)


@pytest.mark.parametrize("tau_clocks", [0.0, 3.0, 5.0, 6.0, 15.0, 40.0, 1e3, 2047.9, 1e6, 1e9,
                                        2.2e12, 1e14, 2.8e14])
def test_avg_tau_becomes_a_weight_and_a_sample_period(tau_clocks):
    from fpq.queue_averager import avg_parameters, ewma_time_constant, AVG_WQ_SHIFT
    from fpq.formats import MIN_SAMPLE_PERIOD
    k, period = avg_parameters(tau_clocks)
    assert 0 <= k <= 16 and MIN_SAMPLE_PERIOD <= period < 2 ** 32
    got = ewma_time_constant(k, period)
    if tau_clocks < 5.77:                         # below 2^-1 every 4 clocks: no averaging
        assert (k, got) == (0, 0.0)
    elif tau_clocks < 2047:                       # 2^-9 would need samples under 4 clocks
        assert k < AVG_WQ_SHIFT and period >= MIN_SAMPLE_PERIOD
        assert got == pytest.approx(tau_clocks, rel=0.6)
    else:                                         # the whole number of clocks nearest
        assert k >= AVG_WQ_SHIFT
        assert abs(got - tau_clocks) <= ewma_time_constant(k, 0.5) + 1e-6 * tau_clocks
    if tau_clocks >= 2.2e12:                      # 2^32 samples of 2^-9 do not reach it
        assert k > AVG_WQ_SHIFT


def test_avg_tau_beyond_the_registers_is_refused():
    from fpq.queue_averager import avg_parameters
    with pytest.raises(ValueError, match="outside"):
        avg_parameters(3e14)
    with pytest.raises(ValueError, match="outside"):
        avg_parameters(float("nan"))


def test_float_model_weight_is_adaptive_red_s_rule():
    c = Config(avg_tau_s=2.0, pkt_time_s=0.004)
    assert float_wq(c) == pytest.approx(1 - 2.718281828 ** (-0.002), rel=1e-9)
    assert float_wq(Config(avg_tau_s=0.0)) == 1.0


def test_override_replaces_derived_registers_within_their_range():
    c = Config().override(wq_shift=3, avg_sample_period=10)
    r = c.registers()
    assert (r["wq_shift"], r["avg_sample_period"]) == (3, 10)
    assert c.replace(mode="red").registers()["wq_shift"] == 3       # kept by replace
    assert c != Config() and Config().override() == Config()
    with pytest.raises(ConfigError, match=r"override: avg_sample_period: 3 is out of range "
                                          r"\[4, 4294967295\]"):
        Config().override(avg_sample_period=3)
    with pytest.raises(ConfigError, match="override: 'wq' is not a configuration register"):
        Config().override(wq=3)
    with pytest.raises(ConfigError, match="override: red_max_th: the registers fail"):
        Config().override(red_max_th=Config().registers()["red_min_th"])
    fixed = Build(fixed={"avg_tau_s": 1.0, "tick_hz": 1e6})
    with pytest.raises(ConfigError, match="override: wq_shift is fixed in this build"):
        Config(build=fixed).override(wq_shift=2)


def test_build_parameters_are_checked():
    with pytest.raises(ConfigError, match="vec_bits: 1000 must be a power of two"):
        Build(vec_bits=1000)
    assert Config(build=Build(vec_bits=65536), v_max=65536).v_max == 65536


def test_every_field_default_is_valid_and_documented():
    c = Config()
    for f in FIELDS:
        assert f.doc and f.unit
        assert f.name in c.values


def test_rate_format_relative_error():
    # normalised 16-bit mantissa: relative error <= 2^-16 across the range used
    for k in range(-60, 1):
        for frac in (1.0, 1.2345, 1.5, 1.99):
            v = frac * 2.0 ** k
            m, s = RATE.encode(v)
            assert abs(RATE.decode(m, s) - v) / v <= 2 ** -16


# ---- fixed fields (Build.fixed) ------------------------------------------------------------
@pytest.mark.parametrize("fixed, fragment", [
    ({"wq": 1}, "fixed: wq is not allowed"),
    ({"avg_tau_s": -2.0}, "fixed: avg_tau_s: -2.0 is out of range [0.0, 10000.0] s"),
    ({"mode": "codel"}, "fixed: mode: 'codel' must be one of droptail, red, fpq"),
    ({"hash_key": b"short"}, "fixed: hash_key: must be exactly 20 bytes"),
    ((("avg_tau_s", 9), ("avg_tau_s", 9)), "fixed: a repeated field"),
    (5, "fixed: 5 must be (field, value) pairs"),
])
def test_bad_fixed_fields_are_named(fixed, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        Build(fixed=fixed)


def test_fixed_fields_are_every_config_s_values_and_nothing_else_is_accepted():
    b = Build(fixed={"avg_tau_s": 5, "mode": "red", "red_min_th": 3})
    assert b.fixed == (("avg_tau_s", 5.0), ("mode", "red"), ("red_min_th", 3.0))
    assert b == Build(fixed=(("avg_tau_s", 5), ("red_min_th", 3.0), ("mode", "red")))
    cfg = Config(build=b, red_max_p=0.1)
    assert (cfg.avg_tau_s, cfg.mode, cfg.red_min_th, cfg.red_max_p) == (5.0, "red", 3.0, 0.1)
    assert Config(build=b, avg_tau_s=5).registers() == cfg.replace(red_max_p=0.02).registers()
    for field, other in (("avg_tau_s", 9), ("mode", "fpq"), ("red_min_th", 3.5)):
        with pytest.raises(ConfigError, match=f"{field}: .* this build fixes it to"):
            Config(build=b, **{field: other})
        with pytest.raises(ConfigError, match=f"{field}: .* this build fixes it to"):
            cfg.replace(**{field: other})


def test_fixed_fields_from_the_command_line_are_typed_by_their_field():
    from fpq.cli_options import parse_fixed
    got = parse_fixed(["v_max=0x100", "ecn=true", "red_min_th=2.5", "mode=red",
                       "hash_key=" + "01" * 20])
    assert got == {"v_max": 256, "ecn": True, "red_min_th": 2.5, "mode": "red",
                   "hash_key": b"\x01" * 20}
    assert Build(fixed=got).fixed_fields == got
    with pytest.raises(ConfigError, match="--fix v_max: given twice"):
        parse_fixed(["v_max=1", "v_max=2"])
    with pytest.raises(ConfigError, match="--fix: 'v_max' must be FIELD=VALUE"):
        parse_fixed(["v_max"])


def test_the_count_widths_hold_the_largest_build():
    """``FLOW_COUNT_BITS`` holds N of a full vector of the largest ``vec_bits`` (and
    ``v_max``), ``CAPPED_COUNT_BITS`` the largest ``n_cap`` of the largest ``table_depth``,
    each with no bit to spare."""
    from fpq.config import BUILD_SIZES
    from fpq.formats import FLOW_COUNT_BITS, CAPPED_COUNT_BITS
    assert FLOW_COUNT_BITS == BUILD_SIZES["vec_bits"][1].bit_length()
    assert CAPPED_COUNT_BITS == (BUILD_SIZES["table_depth"][1] - 1).bit_length()
