"""Fuzzing of ``fpq.Config`` (the one configuration source behind scenario files, the CLI and
the register map): random field names, types and values. Either the configuration is
accepted and every field lies in its documented range (and its registers pass the hardware's
commit check), or one ConfigError names the field. Case counts: docs/RELIABILITY.md."""

import math

from hypothesis import given, settings, strategies as st

from fpq import Config, ConfigError
from fpq.config import FIELDS, Build
from fpq.regmap import check_registers

NAMES = [f.name for f in FIELDS] + ["v_maxx", "", "mode "]
VALUES = st.one_of(st.booleans(), st.integers(), st.integers(-2, 70_000),
                   st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 100),
                   st.sampled_from(["fpq", "red", "droptail", "FPQ", ""]), st.text(max_size=4),
                   st.binary(min_size=19, max_size=21), st.none())


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), VALUES, min_size=1, max_size=4))
def test_random_fields(values):
    try:
        cfg = Config(**values)
    except ConfigError as exc:
        msg = str(exc)
        named = [n for n in values if msg.startswith(f"{n}:")]
        related = msg.startswith(("red_max_th:", "t_clear_s:", "unknown configuration field"))
        assert named or related, (values, msg)
        return
    build = Build()
    for f in FIELDS:
        v = cfg.values[f.name]
        lo, hi = f.bounds(build)
        if f.type in ("int", "float"):
            assert lo <= v <= hi and math.isfinite(v), (f.name, v)
    # a configuration the driver accepts is one the hardware's commit accepts
    assert check_registers(cfg.registers()) is None


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([f for f in FIELDS if f.type in ("int", "float")]), st.data())
def test_out_of_range_numbers_name_field_and_range(field, data):
    lo, hi = field.bounds(Build())
    if field.type == "int":
        value = data.draw(st.one_of(st.integers(max_value=lo - 1), st.integers(min_value=hi + 1),
                                    st.just(math.nan)))
    else:
        value = data.draw(st.one_of(st.floats(max_value=lo, exclude_max=True, allow_nan=False),
                                    st.floats(min_value=hi, exclude_min=True, allow_nan=False),
                                    st.just(math.nan)))
    try:
        Config(**{field.name: value})
    except ConfigError as exc:
        assert str(exc).startswith(f"{field.name}: "), exc
        assert f"[{lo}, {hi}]" in str(exc), exc
    else:
        raise AssertionError(f"{field.name}={value!r} accepted")


def test_flush_threshold_must_fit_its_register():
    """Found by checking accepted configurations against the commit check: with a 65536-bit
    vector, t_clear x tick_hz >= 2^45 made flush_after (8 t_clear in UQ48.16 ticks) exceed
    64 bits, which the hardware cannot hold. Now a ConfigError naming t_clear_s."""
    from fpq.config import ConfigError as Error
    build = Build(vec_bits=65536)
    try:
        Config(build=build, v_max=65536, t_clear_s=1e6, tick_hz=1.4e8)
    except Error as exc:
        assert str(exc).startswith("t_clear_s: ") and "allowed range" in str(exc)
    else:
        raise AssertionError("accepted")
    ok = Config(build=build, v_max=65536, t_clear_s=2e5, tick_hz=1.4e8)
    assert check_registers(ok.registers(), build) is None


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([64, 1024, 8192, 65536]), st.floats(1e-9, 1e6), st.floats(1e3, 1e10),
       st.data())
def test_accepted_clear_settings_fit_the_registers(vec_bits, t_clear, tick_hz, data):
    build = Build(vec_bits=vec_bits)
    v_max = data.draw(st.integers(1, vec_bits))
    try:
        cfg = Config(build=build, v_max=v_max, t_clear_s=t_clear, tick_hz=tick_hz)
    except ConfigError as exc:
        assert str(exc).startswith("t_clear_s: ") and "allowed range" in str(exc), exc
        return
    assert check_registers(cfg.registers(), build) is None
