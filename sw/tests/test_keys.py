"""Key handling: the weak-key rule (``fpq.keys.key_weakness``), keys drawn from the operating
system, and ``fpq config``'s ``--key`` and default key (docs/RELIABILITY.md, "Key handling")."""

import json
import os
import re

import pytest

from fpq.config import Config
from fpq.fields import ConfigError, RSS_KEY
from fpq.fields import MIX_KEY_DEFAULT
from fpq.keys import KEY_WINDOW_MIN_BITS, check_key, key_weakness, random_key
from fpq.flow_hash import ToeplitzHash, pack_flow, reduce_index

from cli_run import run

#: A key that passes the rule (not derived from the code under test: typed once).
GOOD = bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9")
#: One set bit, at key bit 60: every hash bit is one input bit (rank 32), most windows are 0.
ONE_BIT = (1 << (159 - 60)).to_bytes(20, "big")


def distinct_indices(key, flows=2000, v_max=1024):
    """How many vector indices ``flows`` distinct 5-tuples reach under ``key``."""
    h = ToeplitzHash(key)
    return len({reduce_index(h(pack_flow(0x0A000000 + i, 0x0B000001, 1024 + i % 7, 80, 6)),
                             v_max) for i in range(flows)})


@pytest.mark.parametrize("key, fragment", [
    (bytes(20), "window at key bit 0 has 0 set bits"),
    (ONE_BIT, f"must have at least {KEY_WINDOW_MIN_BITS}"),
    (bytes([0xAA] * 20), "rank 2 of 32: at most 2**2 hash values"),
    (bytes([0xFF] * 20), "rank 1 of 32"),
    (RSS_KEY, "public Microsoft RSS key"),
], ids=["zeros", "one-bit", "0xaa", "ones", "rss"])
def test_weak_keys_are_named_with_their_rule(key, fragment):
    """Each weak key is refused for its own reason: the sparse-window rule, the rank rule
    (keys of repeated 0xAA or 0xFF bytes pass the window rule: every window has 16 or 32 set
    bits), the public key."""
    why = key_weakness(key)
    assert why is not None and fragment in why, why
    with pytest.raises(ConfigError, match=r"^--key: [0-9a-f]{40} is a weak key: .*leave the "
                                          r"key out to draw a random one$"):
        check_key(key, what="--key")


def test_weak_keys_do_spread_flows_badly_and_the_good_one_does_not():
    """What the rule protects against, measured on the hash: 2000 flows that differ in
    source address and port reach 4 of 1024 indices under the 0xAA key and one under the
    all-zero key, while the good key reaches 938 (a random function: about 879)."""
    assert distinct_indices(bytes(20)) == 1
    assert distinct_indices(bytes([0xAA] * 20)) <= 4
    assert distinct_indices(GOOD) > 800


def test_a_key_of_the_wrong_length_is_refused_naming_the_option():
    with pytest.raises(ConfigError, match=r"--key: must be exactly 20 bytes \(40 hex digits\)"):
        check_key(b"\x01" * 19, what="--key")


def test_random_keys_come_from_the_os_and_are_drawn_again_when_weak(monkeypatch):
    """``random_key`` takes ``secrets.token_bytes`` and draws again while the draw is weak."""
    import fpq.keys as keys
    draws = iter([bytes(20), RSS_KEY, GOOD])
    monkeypatch.setattr(keys.secrets, "token_bytes", lambda n: next(draws))
    assert random_key() == GOOD
    monkeypatch.undo()
    keys = {random_key() for _ in range(50)}
    assert len(keys) == 50 and all(key_weakness(k) is None for k in keys)


def test_config_keeps_its_documented_default_for_models():
    """The golden model and the simulator keep ``RSS_KEY`` as their default (reproducible
    runs); only the commands that configure hardware refuse it."""
    assert Config().hash_key == RSS_KEY
    assert Config(hash_key=bytes(20)).hash_key == bytes(20)


# ---- fpq config -----------------------------------------------------------------------------
def config_key(tmp_path, *argv, name="c.json", small=True):
    """``fpq config --format json`` with ``argv`` (for a small build unless not ``small``):
    (exit status, stderr, the key written)."""
    out = tmp_path / name
    build = ["--vec-bits", "64", "--table-depth", "16"] if small else []
    code, _, err = run(["config", "--format", "json", "-o", str(out), *build, *argv])
    key = bytes.fromhex(json.loads(out.read_text())["config"]["hash_key"]) if code == 0 \
        else None
    return code, err, key


def test_fpq_config_draws_a_key_unless_given_one(tmp_path):
    """Without ``--key`` each run draws a new key from the OS, never the public default, and
    says so; ``--key`` writes exactly that key, and so does a key in ``--config``."""
    code1, err, key1 = config_key(tmp_path, name="a.json")
    code2, _, key2 = config_key(tmp_path, name="b.json")
    assert code1 == code2 == 0
    assert "hash_key: drawn from the operating system's random source" in err
    assert key1 != key2 and RSS_KEY not in (key1, key2)
    assert key_weakness(key1) is None and key_weakness(key2) is None
    code, err, key = config_key(tmp_path, "--key", GOOD.hex())
    assert (code, key) == (0, GOOD) and "hash_key: drawn" not in err
    (tmp_path / "fields.json").write_text(json.dumps({"hash_key": GOOD.hex(), "v_max": 40}))
    assert config_key(tmp_path, "--config", str(tmp_path / "fields.json"))[::2] == (0, GOOD)


def test_a_scenario_without_a_key_gets_a_drawn_one(tmp_path):
    """A simulator scenario runs with the public default key; its hardware configuration
    does not."""
    code, err, key = config_key(tmp_path, "--scenario", "fpq-fpq", small=False)
    assert code == 0 and key != RSS_KEY and key_weakness(key) is None


@pytest.mark.parametrize("argv, message", [
    (["--key", "00" * 20], r"--key: 0{40} is a weak key: the 32-bit key window at key bit 0 "
                           r"has 0 set bits"),
    (["--key", "aa" * 20], r"--key: a{40} is a weak key: its 32 hash bits are not "
                           r"independent"),
    (["--key", RSS_KEY.hex()], r"--key: 6d5a.* is a weak key: it is the public Microsoft "
                               r"RSS key"),
    (["--key", "zz"], r"--key: 'zz' is not hex bytes \(allowed: exactly 20 bytes, 40 hex "
                      r"digits\)"),
    (["--key", "01" * 19], r"--key: must be exactly 20 bytes \(40 hex digits\)"),
    (["--set", "hash_key=" + "00" * 20], r"--set hash_key: 0{40} is a weak key"),
    (["--key", GOOD.hex(), "--set", "hash_key=" + GOOD.hex()],
     r"--key: give the key once, with --key or --set hash_key=\.\.\., not both"),
    (["--fix", "hash_key=" + RSS_KEY.hex()], r"--fix hash_key: 6d5a.* is a weak key"),
])
def test_fpq_config_refuses_weak_keys_and_writes_nothing(tmp_path, argv, message):
    import re
    code, err, _ = config_key(tmp_path, *argv)
    assert code == 2 and re.search(message, err), err
    assert os.listdir(tmp_path) == []


def test_fpq_config_refuses_a_weak_key_from_its_files(tmp_path):
    """A key read from ``--config`` or from a scenario is checked as one given with
    ``--key``, and the error names where it came from."""
    (tmp_path / "fields.json").write_text(json.dumps({"hash_key": RSS_KEY.hex()}))
    code, err, _ = config_key(tmp_path, "--config", str(tmp_path / "fields.json"))
    assert code == 2 and f"--config {tmp_path / 'fields.json'}: hash_key: " in err
    scenario = tmp_path / "s.toml"
    from fpq_sim.scenario import SCENARIO_DIR
    with open(os.path.join(SCENARIO_DIR, "fpq-fpq.toml")) as f:
        text = f.read()
    scenario.write_text(text.replace("[queue]", "[queue]\nhash_key = \"" + "00" * 20 + "\"",
                                     1))
    code, err, _ = config_key(tmp_path, "--scenario", str(scenario), small=False)
    assert code == 2 and f"--scenario {scenario}: queue.hash_key: " in err, err


def test_ipv6_keys_are_41_bytes_and_checked_over_the_296_bit_windows():
    """In an IPv6 build (``Build.flow_key`` "ipv6") ``hash_key`` is 41 bytes: the commands'
    check and the drawn keys take that length, and the window rule covers the key bits the
    296 input bits read (0..326): a key that is good but for zeros after key bit 295, so
    that the window only the protocol's last bit reads has one set bit, is weak; the public
    RSS key is refused."""
    from fpq import Build
    from fpq.fields import RSS_KEY6
    build = Build(flow_key="ipv6")
    good = GOOD * 2 + b"\x5b"
    assert key_weakness(good) is None and check_key(good, build=build) == good
    with pytest.raises(ConfigError, match=r"--key: must be exactly 41 bytes \(82 hex digits\)"):
        check_key(GOOD, what="--key", build=build)
    late = good[:36] + b"\xff" + bytes(4)          # key bits 288..295 set, 296..327 zero
    assert "window at key bit 295 has 1 set bits" in key_weakness(late)
    assert "public Microsoft RSS key" in key_weakness(RSS_KEY6)
    keys = {random_key(build=build) for _ in range(10)}
    assert len(keys) == 10 and all(len(k) == 41 and key_weakness(k) is None for k in keys)


# ---- power-on keys of a runtime-keyed build (Build.power_on_keys) ---------------------------
#: A mix key typed once (not all bits equal), beside ``GOOD``.
GOOD_MIX = bytes.fromhex("5e0c93a1d27b48f6a9e3b170")


def test_power_on_keys_are_the_build_s_defaults_and_reset_values():
    """The power-on keys are the register map's reset values of the key registers and
    ``Config(build=...)``'s defaults (the golden model's state out of reset), not the
    public defaults; a build without them keeps the documented defaults."""
    from fpq.config import Build
    from fpq.fields import MIX_KEY_DEFAULT
    from fpq.regmap import registers
    build = Build(vec_bits=64, table_depth=16,
                  power_on_keys={"hash_mix_key": GOOD_MIX, "hash_key": GOOD})
    assert build.power_on_keys == (("hash_key", GOOD), ("hash_mix_key", GOOD_MIX))
    config = Config(build=build)
    assert (config.hash_key, config.hash_mix_key) == (GOOD, GOOD_MIX)
    reset = {r.name: r.reset for r in registers(build)}
    assert reset["hash_key"] == int(GOOD.hex(), 16)
    assert reset["hash_mix_key"] == int(GOOD_MIX.hex(), 16)
    plain = {r.name: r.reset for r in registers(Build(vec_bits=64, table_depth=16))}
    assert plain["hash_key"] == int(RSS_KEY.hex(), 16)
    assert plain["hash_mix_key"] == int(MIX_KEY_DEFAULT.hex(), 16)
    # a key given to the configuration still wins over the power-on one
    assert Config(build=build, hash_key=ONE_BIT).hash_key == ONE_BIT


@pytest.mark.parametrize("kw, message", [
    (dict(power_on_keys={"mode": "fpq"}), "power_on_keys: mode: not a key field of a "
     "register of this build; allowed: the runtime key fields of this build, hash_key, "
     "hash_mix_key"),
    (dict(hash_mix=False, power_on_keys={"hash_mix_key": GOOD_MIX}),
     "power_on_keys: hash_mix_key: not a key field of a register of this build; allowed: "
     "the runtime key fields of this build, hash_key"),
    (dict(fixed={"hash_key": GOOD}, power_on_keys={"hash_key": GOOD}),
     "power_on_keys: hash_key: fixed by this build (Build.fixed); allowed: the runtime key "
     "fields of this build, hash_mix_key, seed_decide, seed_clear"),
    (dict(power_on_keys=(("hash_key", GOOD), ("hash_key", GOOD))),
     "power_on_keys: hash_key: given twice"),
    (dict(power_on_keys={"hash_key": RSS_KEY}),
     "power_on_keys hash_key: 6d5a56da255b0ec24167253d43a38fb0d0ca2bcb is a weak key: it is "
     "the public Microsoft RSS key"),
    (dict(power_on_keys={"hash_mix_key": bytes(12)}),
     "power_on_keys hash_mix_key: 000000000000000000000000 is a weak key: round key k0 has "
     "0 set bits; each 32-bit round key must have 8 to 24"),
    (dict(power_on_keys={"seed_clear": 2}),
     "power_on_keys seed_clear: 2 is a weak seed: it is below 0x100000000"),
    (dict(power_on_keys={"hash_key": GOOD[:19]}),
     "power_on_keys hash_key: must be exactly 20 bytes (40 hex digits)"),
    (dict(power_on_keys=("hash_key",)), "power_on_keys: ('hash_key',) must be (field, key) "
     "pairs"),
], ids=["not-a-key", "no-register", "fixed", "twice", "weak", "weak-mix", "weak-seed", "length",
        "shape"])
def test_bad_power_on_keys_are_refused_naming_the_field(kw, message):
    from fpq.config import Build
    with pytest.raises(ConfigError) as e:
        Build(vec_bits=64, table_depth=16, **kw)
    assert message in str(e.value), e.value


def test_generated_maps_leave_the_power_on_keys_out():
    """Every generated register map (JSON, C header, Markdown, SystemRDL) of a build with
    power-on keys has neither key in any form (hex of the bytes, a 32-bit word, the value in
    decimal); the JSON and Markdown say ``SECRET_SHOWN`` where the reset would be."""
    from fpq.config import Build
    from fpq.fields import SECRET_SHOWN
    from fpq.regmap import FORMATS
    build = Build(vec_bits=64, table_depth=16,
                  power_on_keys={"hash_key": GOOD, "hash_mix_key": GOOD_MIX})
    forms = set()
    for key in (GOOD, GOOD_MIX):
        value = int.from_bytes(key, "big")
        forms |= {key.hex(), str(value), f"{value:x}"}
        forms |= {f"{(value >> (32 * i)) & 0xFFFFFFFF:x}" for i in range(len(key) // 4)}
    for fmt, generate in FORMATS.items():
        text = generate(build).lower()
        assert not [f for f in forms if f in text], fmt
    regs = {r["name"]: r for r in json.loads(FORMATS["json"](build))["registers"]}
    assert regs["hash_key"]["reset"] == regs["hash_mix_key"]["reset"] == SECRET_SHOWN
    assert f"| {SECRET_SHOWN} |" in FORMATS["markdown"](build)


@pytest.mark.parametrize("key, fragment", [
    (MIX_KEY_DEFAULT, "it is Config's public default (the digits of pi)"),
    (bytes(11) + b"\x01", "round key k0 has 0 set bits"),
    (bytes.fromhex("00000001" "5e21c09a" "7db348f1"), "round key k0 has 1 set bits"),
    (bytes.fromhex("5e21c09a" "ffffffff" "7db348f1"), "round key k1 has 32 set bits"),
    (bytes.fromhex("5e21c09a" "7db348f1" "fffffeff"), "round key k2 has 31 set bits"),
], ids=["pi", "one-bit", "k0-one-bit", "k1-ones", "k2-heavy"])
def test_weak_mix_keys_are_named_with_their_rule(key, fragment):
    """The mix key's rule: not the public default, each 32-bit round key with 8 to 24 set
    bits; a key that passes it is taken."""
    why = key_weakness(key, "hash_mix_key")
    assert why is not None and fragment in why, why
    with pytest.raises(ConfigError, match=r"^--mix-key: [0-9a-f]{24} is a weak key: "):
        check_key(key, "hash_mix_key", "--mix-key")
    good = bytes.fromhex("5e21c09a7db348f1e6082b4c")
    assert key_weakness(good, "hash_mix_key") is None


def test_seeds_are_drawn_from_the_os_and_small_ones_are_weak():
    """A seed below 2**32 (the public defaults 1 and 2 among them) is weak; drawn seeds are
    64-bit draws that pass."""
    for seed in (0, 1, 2, (1 << 32) - 1):
        assert "below 0x100000000" in key_weakness(seed, "seed_decide")
        with pytest.raises(ConfigError, match=r"^--set seed_decide: \d+ is a weak seed"):
            check_key(seed, "seed_decide", "--set seed_decide")
    assert key_weakness(1 << 32, "seed_clear") is None
    seeds = {random_key("seed_clear") for _ in range(20)}
    assert len(seeds) == 20 and all(1 << 32 <= s < 1 << 64 for s in seeds)


def test_the_default_map_shows_per_export_resets_not_the_public_keys():
    """The committed docs/REGISTERS.md (the default build's map): the reset of every secret
    register (the keys, the generators' states) is "per export (NAME_keys.vh)", not
    ``Config``'s public default, which an exported core never holds; the public values are
    in no register row, and every row has the table's cell count (an escaped ``|`` in
    ``x|y|z|w`` does not split a cell)."""
    from pathlib import Path
    from fpq.config import Build, Config
    from fpq.regmap import PER_EXPORT_SHOWN, registers, to_markdown
    text = to_markdown(Build())
    committed = (Path(__file__).resolve().parents[2] / "docs" / "REGISTERS.md").read_text()
    assert text == committed
    rows = text.split("## Registers")[1].split("## Tables")[0].splitlines()[2:]
    cells = [re.split(r"(?<!\\)\|", row)[1:-1] for row in rows if row.startswith("|")]
    header = 9
    assert all(len(c) == header for c in cells), [c for c in cells if len(c) != header]
    by_name = {c[2].strip().strip("`"): c for c in cells}
    public = Config().registers()
    for r in registers(Build()):
        if r.secret:
            assert by_name[r.name][7].strip() == PER_EXPORT_SHOWN, r.name
            assert f"{public[r.name]:#x}" not in text, r.name
    assert "the marked ones included" in by_name["enqueued"][8]
