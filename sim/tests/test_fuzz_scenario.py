"""Fuzzing of scenario files (hypothesis): random keys, types and values on a real scenario,
broken TOML, random ``--set`` strings. Every failure is a ScenarioError (a ValueError the CLI
reports with exit 2) whose message starts with the key path it is about; out-of-range
numbers name the allowed range. Case counts: docs/RELIABILITY.md."""

import copy
import math
import os
import re
import tomllib

from hypothesis import given, settings, strategies as st, HealthCheck
import pytest

from fpq import Build
from fpq.fields import FIELD_BY_NAME, SECRET_FIELDS
from fpq.register_specs import key_registers
from fpq_sim.scenario import validate, load, apply_set, queue_config, ScenarioError, SCHEMA
from bad_inputs import Tried

TRIED = Tried("scenario files")
HERE = os.path.dirname(os.path.abspath(__file__))
BASE_PATH = os.path.join(HERE, "..", "scenarios", "fpq-fpq.toml")
with open(BASE_PATH, "rb") as _f:
    BASE = tomllib.load(_f)
QUEUE_FIELDS = ("p_pkts", "v_max", "t_clear_s", "hash_key", "hash_mix_key", "seed_decide",
                "n_cap", "avg_tau_s", "red_min_th", "red_max_th", "pkt_time_s", "mode",
                "limit_bytes", "ecn")
KEYS = [(sec, k.name) for sec, ks in SCHEMA.items() for k in ks] + \
    [("queue", n) for n in QUEUE_FIELDS] + [("run", "nonsense"), ("", "extra"),
                                           ("flows", "cwnd")]
KEY_BY = {(sec, k.name): k for sec, ks in SCHEMA.items() for k in ks}
#: a key path at the start of the message: "run.seed: ", "flows[0].count: ", "queue.v_max: "
KEY_PATH = re.compile(r"^(flows(\[\d+\])?|floods(\[\d+\])?|run|bottleneck|queue|scenario|"
                      r"[A-Za-z0-9_-]+)"
                      r"(\.([A-Za-z0-9_-]+|'[^']*'|\"[^\"]*\"))?(\[\d\])?: "
                      r"|^('[^']*'|\"[^\"]*\"): ")
VALUES = st.one_of(st.booleans(), st.integers(), st.integers(-3, 10**6),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
                   st.lists(st.floats(-5, 5), max_size=3),
                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
SMALL = settings(max_examples=400, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


def _where(sec, key):
    return {"": key, "flows": f"flows[0].{key}", "floods": f"floods[0].{key}"}.get(
        sec, f"{sec}.{key}")


def _apply(doc, sec, key, value):
    if sec == "":
        doc[key] = value
    elif sec == "flows":
        doc["flows"][0][key] = value
    elif sec == "floods":      # the base has no flood: a valid group to change
        doc.setdefault("floods", [{"rate_pps": 100.0, "tuples": 1000}])[0][key] = value
    else:
        doc.setdefault(sec, {})[key] = value


@SMALL
@given(st.lists(st.tuples(st.sampled_from(KEYS), VALUES), min_size=1, max_size=4))
def test_random_keys_and_values_are_accepted_or_named(changes):
    doc = copy.deepcopy(BASE)
    for (sec, key), value in changes:
        _apply(doc, sec, key, value)
    try:
        with TRIED("; ".join(f"{_where(s, k)} = {v!r}" for (s, k), v in changes)):
            out = validate(doc)
    except ScenarioError as exc:
        msg = str(exc)
        assert KEY_PATH.match(msg), msg
        assert "Traceback" not in msg
        return
    # accepted: every changed schema key holds the value given (numbers converted)
    for (sec, key), value in changes:
        if (sec, key) in KEY_BY and sec != "queue":
            got = out[key] if sec == "" else (out[sec][0][key] if sec in ("flows", "floods")
                                              else out[sec][key])
            last = [v for (s, k), v in changes if (s, k) == (sec, key)][-1]
            assert got == last or (isinstance(last, list) and got == [float(x) for x in last])


NUMERIC = [(sec, k) for (sec, _), k in ((s, KEY_BY[s]) for s in KEY_BY)
           if k.lo is not None and k.type in ("int", "float")]


@SMALL
@given(st.sampled_from(NUMERIC), st.data())
def test_out_of_range_number_names_key_and_range(key_sec, data):
    sec, key = key_sec
    lo, hi = key.lo, key.hi
    value = data.draw(st.one_of(
        st.floats(max_value=lo, exclude_max=True, allow_nan=False, allow_infinity=True),
        st.floats(min_value=hi, exclude_min=True, allow_nan=False, allow_infinity=True),
        st.just(math.nan)) if key.type == "float" else
        st.one_of(st.integers(max_value=lo - 1), st.integers(min_value=hi + 1)))
    doc = copy.deepcopy(BASE)
    _apply(doc, sec, key.name, value)
    with pytest.raises(ScenarioError) as info, TRIED(f"{_where(sec, key.name)} = {value!r}"):
        validate(doc)
    msg = str(info.value)
    assert msg.startswith(f"{_where(sec, key.name)}: "), msg
    assert f"[{lo}, {hi}]" in msg, msg


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2000), st.binary(min_size=1, max_size=3)),
                min_size=1, max_size=5), st.integers(0, 2000))
def test_broken_toml_files_give_one_clear_error(tmp_path, edits, cut):
    data = bytearray(open(BASE_PATH, "rb").read())
    for pos, chunk in edits:
        pos %= len(data)
        data[pos:pos + len(chunk)] = chunk
    if cut % 4 == 0:
        data = data[:cut]
    path = tmp_path / "s.toml"
    path.write_bytes(bytes(data))
    shown = ", ".join(f"{chunk!r} at {pos % len(data) if data else pos}" for pos, chunk in edits)
    try:
        with TRIED(shown + (f", cut at {cut}" if cut % 4 == 0 else ""), path):
            load(path)
    except ScenarioError as exc:
        assert str(exc).startswith(f"{path}: "), exc
        assert KEY_PATH.match(str(exc)[len(str(path)) + 2:]) or "not valid TOML" in str(exc), exc


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("flows.0[]runseedqueu_=\"1,e-x ") , max_size=30))
def test_random_set_strings(assignment):
    doc = copy.deepcopy(BASE)
    try:
        with TRIED(f"--set {assignment!r}"):
            apply_set(doc, assignment)
            validate(doc)
    except ScenarioError as exc:
        msg = str(exc)
        assert msg.startswith("--set ") or KEY_PATH.match(msg), msg


#: Every key: the key registers of a build that has them all, and the secret fields.
KEY_FIELDS = sorted(set(key_registers(Build(hash_mix=True))) |
                    {f for f in SECRET_FIELDS if FIELD_BY_NAME[f].type == "bytes"})


def test_key_fields_cover_both_hash_keys():
    assert {"hash_key", "hash_mix_key"} <= set(KEY_FIELDS)


@pytest.mark.parametrize("name", KEY_FIELDS)
def test_hash_keys_are_hex_text_and_bad_ones_named(name):
    text = bytes(range(7, 7 + FIELD_BY_NAME[name].bounds(Build())[0])).hex()
    doc = copy.deepcopy(BASE)
    doc.setdefault("queue", {})[name] = text
    sc = validate(doc)
    assert sc["queue"]["params"][name] == bytes.fromhex(text)
    assert queue_config(sc).values[name] == bytes.fromhex(text)
    for value in ("zz", "0g"):
        bad = copy.deepcopy(BASE)
        bad.setdefault("queue", {})[name] = value
        with pytest.raises(ScenarioError, match=rf"queue\.{name}: '{value}' is not hex"), \
                TRIED(f"queue.{name} = {value!r}"):
            validate(bad)
