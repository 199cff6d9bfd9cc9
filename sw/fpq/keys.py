"""Key handling: the strength of a key (:func:`key_weakness`), the check of every key the
commands that configure hardware take (:func:`check_key`, :func:`parse_key`), keys drawn from
the operating system (:func:`random_key`), and the keys of a configuration for hardware
(:func:`hardware_keys`). "Key" here is every secret field (``fpq.fields.SECRET_FIELDS``): the
hash's keys (bytes) and the random generators' seeds (integers). ``Config`` itself takes any
value of the right length; its public defaults are the fields' (``fpq.fields.RSS_KEY``,
``RSS_KEY6``, ``MIX_KEY_DEFAULT``, seeds 1 and 2). docs/RELIABILITY.md, "Key handling".
"""

import secrets

from .messages import brief
from .fields import (ConfigError, FIELD_BY_NAME, SECRET_FIELDS, RSS_KEY, RSS_KEY6,
                     MIX_KEY_DEFAULT)
from .flow_hash import FLOW_KEY_BITS, HASH_KEY_BYTES
from .formats import HASH_BITS
from .register_specs import register_fields

__all__ = ["KEY_WINDOW_MIN_BITS", "MIX_ROUND_KEY_BITS", "SEED_MIN", "key_weakness",
           "check_key", "parse_key", "hardware_keys", "random_key"]

#: Toeplitz key rule: fewest set bits in each 32-bit key window an input bit selects.
KEY_WINDOW_MIN_BITS = 8
#: Mix key rule: the set bits each 32-bit round key of ``hash_mix_key`` must have, from
#: ``KEY_WINDOW_MIN_BITS`` to 32 minus it (a quarter to three quarters).
MIX_ROUND_KEY_BITS = (KEY_WINDOW_MIN_BITS, 32 - KEY_WINDOW_MIN_BITS)
#: Seed rule: the smallest seed taken for hardware (a seed below it has at most 32
#: significant bits: every candidate can be tried offline against observed decisions).
SEED_MIN = 1 << 32


def _key_input_bits(key):
    """The input bits of the flow key whose ``hash_key`` has ``key``'s length
    (``fpq.flow_hash.HASH_KEY_BYTES``; the IPv4 key's for any other length)."""
    return next((FLOW_KEY_BITS[k] for k, n in HASH_KEY_BYTES.items() if n == len(key)),
                FLOW_KEY_BITS["ipv4"])


def _toeplitz_windows(key):
    """The 32-bit key windows the input bits of the 5-tuple select (``fpq.flow_hash``; 104
    for the IPv4 key, 296 for the IPv6 one): window ``i`` starts at key bit ``i`` (bit 0 =
    the MSB of byte 0)."""
    k = int.from_bytes(key, "big")
    top = 8 * len(key) - HASH_BITS
    return [(k >> (top - i)) & ((1 << HASH_BITS) - 1) for i in range(_key_input_bits(key))]


def _gf2_rank(rows):
    """The rank over GF(2) of the bit vectors ``rows`` (integers)."""
    basis = []
    for r in rows:
        for b in basis:
            r = min(r, r ^ b)
        if r:
            basis.append(r)
    return len(basis)


def key_weakness(key, name="hash_key"):
    """Why ``key`` is a weak value of the key field ``name``, or None if it is not.

    ``hash_key`` (the Toeplitz hash's, 20 bytes, or 41 in an IPv6 build whose windows are
    those of its 296 input bits): the hash XORs, for every set input bit
    ``i``, the 32-bit key window ``W_i`` that starts at key bit ``i``; two flows that differ
    in input bits ``S`` collide when the XOR of their windows is 0. The key is weak when

    * a window has fewer than ``KEY_WINDOW_MIN_BITS`` (8, a quarter) set bits: the input bit
      it belongs to changes few hash bits, none when the window is 0 (flows that differ
      only there always collide, as with the all-zero key). A key drawn at random fails
      this with probability about 2.3 % (2.24 % and 2.42 % in two runs of 20000 draws;
      :func:`random_key` draws again);
    * the 32 hash bits are not independent (the 32 x 104 matrix of windows has rank below
      32 over GF(2)): the hash then takes at most half of its 2**32 values, 4 for a key of
      repeated 0xAA bytes, 2 for all ones, although every window of those has 16 or more
      set bits; or
    * it is ``RSS_KEY`` or ``RSS_KEY6``, which are public.

    ``hash_mix_key`` (96 bits, the round keys ``k0``, ``k1``, ``k2`` of 32 bits each that the
    non-linear stage XORs in, ``fpq.flow_hash.mix``): weak when it is ``MIX_KEY_DEFAULT``
    (pi's digits, public) or a round key has fewer than 8 or more than 24 set bits
    (``MIX_ROUND_KEY_BITS``): such a round key leaves most of its round's bits as an
    unkeyed (or complemented) function of the hash, and one-bit keys, all-zero and all-one
    keys fail it. A key drawn at random fails with probability about 0.65 % (0.6465 % of
    200,000 draws)
    (:func:`random_key` draws again).

    ``seed_decide``, ``seed_clear`` (integers): weak below ``SEED_MIN`` (2**32; the public
    defaults 1 and 2 among them): so few candidates are tried offline against the drop
    decisions one observes. A draw of 64 bits fails with probability 2**-32.

    Any other key field: weak when all its bits are equal (all zeros or all ones)."""
    if FIELD_BY_NAME[name].type == "int":
        if key < SEED_MIN:
            return (f"it is below {SEED_MIN:#x} (2**32): at most 32 significant bits, "
                    f"every candidate can be tried")
        return None
    key = bytes(key)
    if name == "hash_mix_key":
        if key == MIX_KEY_DEFAULT:
            return "it is Config's public default (the digits of pi)"
        k = int.from_bytes(key, "big")
        lo, hi = MIX_ROUND_KEY_BITS
        for i in range(len(key) // 4):
            bits = bin((k >> (8 * len(key) - 32 * (i + 1))) & 0xFFFFFFFF).count("1")
            if not lo <= bits <= hi:
                return (f"round key k{i} has {bits} set bits; each 32-bit round key must "
                        f"have {lo} to {hi}")
        return None
    if name != "hash_key":
        if key in (bytes(len(key)), b"\xff" * len(key)):
            return "all its bits are equal"
        return None
    nbits = _key_input_bits(key)
    if key in (RSS_KEY, RSS_KEY6):
        return "it is the public Microsoft RSS key (anyone can compute colliding flows)"
    windows = _toeplitz_windows(key)
    fewest = min(range(len(windows)), key=lambda i: bin(windows[i]).count("1"))
    bits = bin(windows[fewest]).count("1")
    if bits < KEY_WINDOW_MIN_BITS:
        return (f"the 32-bit key window at key bit {fewest} has {bits} set bits; every "
                f"window of key bits 0..{nbits + HASH_BITS - 2} must have at least "
                f"{KEY_WINDOW_MIN_BITS}")
    k = int.from_bytes(key, "big")
    rows = [(k >> (8 * len(key) - nbits - j)) & ((1 << nbits) - 1)
            for j in range(HASH_BITS)]
    rank = _gf2_rank(rows)
    if rank < HASH_BITS:
        return (f"its {HASH_BITS} hash bits are not independent (the key's Toeplitz matrix "
                f"has rank {rank} of {HASH_BITS}: at most 2**{rank} hash values)")
    return None


def check_key(key, name="hash_key", what=None, build=None):
    """``key`` as bytes, checked as a value of the key field ``name`` in ``build`` (default
    ``Build()``: the length of ``hash_key`` depends on ``Build.flow_key``): raises
    ``ConfigError`` naming ``what`` (default ``name``; a command passes its option) and the
    rule if the key has the wrong length or is weak (:func:`key_weakness`). The check of
    every key the commands that configure hardware take; ``Config`` itself takes any key of
    the right length (models and tests use structured ones)."""
    what = what or name
    field = FIELD_BY_NAME[name]
    if field.type == "int":
        lo, hi = field.bounds(build)
        if isinstance(key, bool) or not isinstance(key, int) or not lo <= key <= hi:
            raise ConfigError(f"{what}: must be an integer in [{lo}, {hi}], got "
                              f"{brief(key)}")
        why = key_weakness(key, name)
        if why is not None:
            raise ConfigError(f"{what}: {key} is a weak seed: {why}; leave it out to draw a "
                              f"random one")
        return key
    nbytes = field.bounds(build)[0]
    if not isinstance(key, (bytes, bytearray)) or len(key) != nbytes:
        raise ConfigError(f"{what}: must be exactly {nbytes} bytes ({2 * nbytes} hex digits), "
                          f"got {brief(key)}")
    why = key_weakness(key, name)
    if why is not None:
        raise ConfigError(f"{what}: {bytes(key).hex()} is a weak key: {why}; leave the key "
                          f"out to draw a random one")
    return bytes(key)


def parse_key(text, option="--key", name="hash_key", build=None):
    """The bytes of hex text ``text`` given as key field ``name`` (``--key HEX``) of
    ``build`` (default ``Build()``); errors name ``option``. Its length and strength are
    :func:`check_key`'s."""
    try:
        return bytes.fromhex(text)
    except (TypeError, ValueError):
        nbytes = FIELD_BY_NAME[name].bounds(build)[0]
        raise ConfigError(f"{option}: {text!r} is not hex bytes (allowed: exactly {nbytes} "
                          f"bytes, {2 * nbytes} hex digits)") from None


def hardware_keys(build, given=None, check_fixed=True):
    """The key fields (``SECRET_FIELDS``) of a configuration for hardware: the values in
    ``given`` (``{name: (value, what)}``, ``what`` the option that gave it, for errors)
    checked with :func:`check_key`, and a key from the operating system
    (:func:`random_key`) for every other one the build does not fix (a key field no register
    of the build holds, ``register_fields``, is left out). A key the build fixes
    is checked too (``check_fixed``; off for a board's own build, whose fixed key the host
    does not know); a given value must be that key. Returns ``(keys, drawn)``: the values for
    ``Config`` and the names of those drawn."""
    given = dict(given or {})
    fixed = build.fixed_fields
    keys, drawn = {}, []
    used = register_fields(build)
    for name in SECRET_FIELDS:
        if name not in used:
            continue                                  # no register of this build holds it
        if name in fixed:
            if name in given and _normal(given[name][0]) != fixed[name]:
                raise ConfigError(f"{given[name][1]}: this build fixes {name} (Build.fixed, "
                                  f"--fix) to another key")
            if check_fixed:
                check_key(fixed[name], name, f"--fix {name}", build)
        elif name in given:
            value, what = given[name]
            keys[name] = check_key(value, name, what, build)
        else:
            keys[name] = random_key(name, build)
            drawn.append(name)
    return keys, drawn


def _normal(value):
    """A key field's value as ``Config`` holds it: bytes for a key, the integer for a seed."""
    return value if isinstance(value, int) else bytes(value)


def random_key(name="hash_key", build=None):
    """A value of the key field ``name`` of ``build`` (default ``Build()``) from the
    operating system's random source (``secrets.token_bytes``, ``secrets.randbits`` for a
    seed), drawn again until
    :func:`key_weakness` finds nothing."""
    field = FIELD_BY_NAME[name]
    if field.type == "int":
        bits = field.bounds(build)[1].bit_length()
        while True:
            key = secrets.randbits(bits)
            if key_weakness(key, name) is None:
                return key
    nbytes = field.bounds(build)[0]
    while True:
        key = secrets.token_bytes(nbytes)
        if key_weakness(key, name) is None:
            return key
