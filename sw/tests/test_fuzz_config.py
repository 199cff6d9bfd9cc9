"""Fuzzing of ``fpq.Config`` (the one configuration source behind scenario files, the CLI and
the register map): random field names, types and values. Either the configuration is
accepted and every field lies in its documented range (and its registers pass the hardware's
commit check), or one ConfigError names the field. Case counts: docs/RELIABILITY.md."""

import math

from hypothesis import given, settings, strategies as st
import pytest

from fpq import Config, ConfigError
from fpq.fields import FIELDS
from fpq.config import Build
from fpq.regmap import check_registers
from bad_inputs import Tried

TRIED = Tried("`fpq.Config`")
NAMES = [f.name for f in FIELDS] + ["v_maxx", "", "mode "]
VALUES = st.one_of(st.booleans(), st.integers(), st.integers(-2, 70_000),
                   st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 100),
                   st.sampled_from(["fpq", "red", "droptail", "FPQ", ""]), st.text(max_size=4),
                   st.binary(min_size=19, max_size=21), st.none())


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), VALUES, min_size=1, max_size=4))
def test_random_fields(values):
    try:
        with TRIED(values):
            cfg = Config(**values)
    except ConfigError as exc:
        msg = str(exc)
        named = [n for n in values if msg.startswith(f"{n}:")]
        # relations between fields name the field the message is about (the hold is
        # rekey_hold_t_clear x t_clear_s x tick_hz clocks)
        related = msg.startswith(("red_max_th:", "t_clear_s:", "rekey_hold_t_clear:",
                                  "unknown configuration field"))
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
        with TRIED({field.name: value}):
            Config(**{field.name: value})
    except ConfigError as exc:
        assert str(exc).startswith(f"{field.name}: "), exc
        assert f"[{lo}, {hi}]" in str(exc), exc
    else:
        raise AssertionError(f"{field.name}={value!r} accepted")


@pytest.mark.parametrize("tick_hz, v_max, longest_s", [
    (1e6, 1, 4294.967295), (150e6, 5000, 143165.5765), (1e10, 8192, 3518.437208)])
def test_clear_period_must_fit_its_register(tick_hz, v_max, longest_s):
    """clear_period = t_clear x tick_hz / v_max clocks is a UQ32.16 register: the longest
    t_clear is (2**32 - 2**-16) v_max / tick_hz (worked out by hand: 2**32 clocks at 1 MHz
    are 4294.967296 s). Just under it is accepted and passes the commit check, just over it
    is a ConfigError naming t_clear_s and the range. (The hold, 3 t_clear by default, must
    fit too; it is set to 0 here.)"""
    under, over = longest_s * (1 - 1e-9), longest_s * (1 + 1e-9)
    with TRIED(dict(tick_hz=tick_hz, v_max=v_max, t_clear_s=under)):
        ok = Config(tick_hz=tick_hz, v_max=v_max, t_clear_s=under, rekey_hold_t_clear=0.0)
    assert check_registers(ok.registers()) is None
    with pytest.raises(ConfigError, match=r"^t_clear_s: .* is longer than the clear-period "
                                          r"register holds; allowed range \[\.\.\., "), \
            TRIED(dict(tick_hz=tick_hz, v_max=v_max, t_clear_s=over)):
        Config(tick_hz=tick_hz, v_max=v_max, t_clear_s=over, rekey_hold_t_clear=0.0)


def test_the_re_key_hold_must_fit_its_register():
    """Found by checking accepted configurations against the commit check (then for the
    flush threshold, a register the clock-driven clears no longer need): t_clear_s 1e6 s at
    140 MHz is a hold of 3 t_clear = 4.2e14 clocks, beyond the 48-bit register's 2**47.
    A ConfigError names rekey_hold_t_clear and the range that fits (2**47 / 1.4e14 =
    1.005 t_clear)."""
    build = Build(vec_bits=65536)
    with pytest.raises(ConfigError, match=r"^rekey_hold_t_clear: 3.0 t_clear is longer .*"
                                          r"allowed range \[0, 1.00527\] t_clear"), \
            TRIED("vec_bits=65536, v_max=65536, t_clear_s=1e6, tick_hz=1.4e8"):
        Config(build=build, v_max=65536, t_clear_s=1e6, tick_hz=1.4e8)
    with TRIED("the same, rekey_hold_t_clear=1.0"):
        ok = Config(build=build, v_max=65536, t_clear_s=1e6, tick_hz=1.4e8,
                    rekey_hold_t_clear=1.0)             # 1.4e14 clocks
    assert check_registers(ok.registers(), build) is None
    with pytest.raises(ConfigError, match=r"^rekey_hold_t_clear: 1.01 t_clear is longer"), \
            TRIED("the same, rekey_hold_t_clear=1.01"):
        Config(build=build, v_max=65536, t_clear_s=1e6, tick_hz=1.4e8,
               rekey_hold_t_clear=1.01)                # 1.414e14 clocks


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([64, 1024, 8192, 65536]), st.floats(1e-9, 1e6), st.floats(1e3, 1e10),
       st.data())
def test_accepted_clear_settings_fit_the_registers(vec_bits, t_clear, tick_hz, data):
    build = Build(vec_bits=vec_bits)
    v_max = data.draw(st.integers(1, vec_bits))
    try:
        with TRIED(dict(vec_bits=vec_bits, v_max=v_max, t_clear_s=t_clear, tick_hz=tick_hz)):
            cfg = Config(build=build, v_max=v_max, t_clear_s=t_clear, tick_hz=tick_hz,
                         rekey_hold_t_clear=0.0)
    except ConfigError as exc:
        assert str(exc).startswith("t_clear_s: ") and "allowed range" in str(exc), exc
        return
    assert check_registers(cfg.registers(), build) is None
