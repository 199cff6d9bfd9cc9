"""The configuration fields: every runtime parameter, its unit, format, range and default
(``FIELDS``, the one declaration of each), and the check of a value (:func:`check_value`).
``fpq.config.Config`` holds a value of each; the configuration registers
(``fpq.register_specs``) are computed from them.

A field is ``reg`` (a hardware register with the same meaning), ``host`` (the driver folds it
into derived registers or the table: the hardware never sees it directly), or ``float`` (a
parameter of the paper's floating-point model only, ``fpq.float_model``; no register).
"""

from dataclasses import dataclass
import math

from .drop_probability import Mode
from .formats import QAVG, QPKTS_BITS, QBYTES_BITS, FLOW_COUNT_BITS
from .flow_hash import FLOW_KEYS, HASH_KEY_BYTES, MIX_KEY_BITS
from .messages import brief

__all__ = ["ConfigError", "Field", "FIELDS", "FIELD_BY_NAME", "SECRET_FIELDS", "SECRET_SHOWN",
           "RSS_KEY", "RSS_KEY6", "MIX_KEY_DEFAULT", "hash_key_bytes", "check_value"]

#: The Microsoft RSS verification key (first 20 bytes are used): ``Config``'s default key, so
#: that the golden model's and the simulator's runs are reproducible and match NIC test
#: vectors. Public: an attacker who knows the key can make flows collide
#: (docs/RELIABILITY.md, "Key handling"), so the commands that configure hardware never use
#: it (``fpq config``, ``fpq board monitor --configure`` and ``fpq board build`` draw a key
#: with ``fpq.keys.random_key`` unless given one, and refuse this one:
#: ``fpq.keys.check_key``).
RSS_KEY = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c"
                        "6a42b73bbeac01fa")[:20]
#: ``Config``'s default key in a build with ``Build.flow_key`` "ipv6" (41 bytes,
#: ``fpq.flow_hash.HASH_KEY_BYTES``): the whole 40-byte Microsoft RSS verification key, whose
#: RSS IPv6 test vectors it reproduces with ``hash_input`` "rss", and a zero byte for the
#: windows of the protocol's bits, which RSS leaves out. Public, as ``RSS_KEY``.
RSS_KEY6 = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c"
                         "6a42b73bbeac01fa") + bytes(1)
#: The default key of the hash's non-linear stage (``hash_mix_key``): the first 96 bits of
#: pi's fraction, public like ``RSS_KEY``: set a secret one in deployment.
MIX_KEY_DEFAULT = bytes.fromhex("243f6a8885a308d313198a2e")


class ConfigError(ValueError):
    """A configuration value is out of range; the message names the field and the range."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str          # "reg" or "host"
    type: str          # "int", "float", "bool", "enum", "bytes"
    unit: str
    fmt: object        # storage format in hardware (or "host"), or callable(Build) -> it
    lo: object         # number, or callable(Build) -> number
    hi: object
    default: object
    doc: str
    #: Key material (the hash's keys, the random generators' seeds): every register computed
    #: from it is write-only (``fpq.regmap``: access "secret", reads return 0 on every bus),
    #: build reports leave its value out, the commands that configure hardware draw it from
    #: the operating system unless given it and write it only to files of mode 0600.
    secret: bool = False

    def bounds(self, build):
        lo = self.lo(build) if callable(self.lo) else self.lo
        hi = self.hi(build) if callable(self.hi) else self.hi
        return lo, hi


def hash_key_bytes(build):
    """The bytes of ``hash_key`` in ``build`` (``fpq.flow_hash.HASH_KEY_BYTES``; None: a
    build of the default flow key, ``Build()``'s)."""
    return HASH_KEY_BYTES[FLOW_KEYS[0] if build is None else build.flow_key]


FIELDS = [
    Field("mode", "reg", "enum", "-",
          f"{max(Mode).bit_length()} bits: " + " ".join(f"{m.name}={m.value}" for m in Mode),
          int(min(Mode)), int(max(Mode)), Mode.fpq.name, "Queue discipline."),
    Field("ecn", "reg", "bool", "-", "1 bit", 0, 1, False,
          "Mark ECN-capable packets instead of dropping them early (forced drops still drop)."),
    Field("tick_hz", "host", "float", "Hz", "host", 1e3, 1e10, 150e6,
          "Clock rate of the queue manager, whose clock is its time base (descriptors carry "
          "the clock they are accepted in); converts seconds to clocks."),
    Field("p_pkts", "host", "float", "packets", "host", 0.0, 65535.0, 21.7,
          "P, the delay-bandwidth product (FPQ paper Fig. 5). Folded into the r(N) table."),
    Field("v_max", "reg", "int", "bits", f"{FLOW_COUNT_BITS} bits", 1, lambda b: b.vec_bits,
          lambda b: min(5000, b.vec_bits),
          "Bits of the flow vector in use (hash range); <= the build-time vector size. "
          "Default: the paper's 5000, or the whole vector if it is smaller."),
    Field("t_clear_s", "host", "float", "s", "host -> clear_period (UQ32.16 clocks)", 1e-9,
          1e6, 4.0, "Time to clear as many bits as the vector has (FPQ paper Fig. 4): a "
          "random bit is cleared every t_clear / v_max, at least a clock apart."),
    Field("lt_plus_one", "host", "bool", "-", "host", 0, 1, False,
          "Add the OCR's `+1` to the window in l_t = (0.87 / ((q_t+P)/N [+1]))^2."),
    Field("lc_correction", "host", "bool", "-", "host", 0, 1, False,
          "Linear-counting correction N' = -v_max ln(1 - N/v_max) for hash collisions."),
    Field("n_cap", "reg", "int", "flows", "log2(table_depth) bits", 1,
          lambda b: b.table_depth - 1, lambda b: b.table_depth - 1,
          "Cap on the flow count used for decisions (raw popcount units)."),
    Field("avg_tau_s", "host", "float", "s", "host -> wq_shift, avg_sample_period", 0.0, 1e4,
          2.36, "Time constant of the average queue: a sample of the queue every "
          "avg_sample_period clocks, weighted 2^-wq_shift. The default is RED's w_q = 2^-9 "
          "per packet at the FPQ paper's 217 packets/s; 0: no averaging."),
    Field("red_min_th", "reg", "float", "packets", "QAVG UQ20.16", 0.0, QAVG.max_value - 1, 5.0,
          "RED min_th."),
    Field("red_max_th", "reg", "float", "packets", "QAVG UQ20.16", 1.0, QAVG.max_value, 45.0,
          "RED max_th (>= min_th + 1)."),
    Field("red_max_p", "reg", "float", "-", "PROB UQ1.32", 0.0, 1.0, 0.02, "RED max_p."),
    Field("red_gentle", "reg", "bool", "-", "1 bit", 0, 1, False,
          "Gentle RED: p rises from max_p to 1 between max_th and 2 max_th."),
    Field("limit_pkts", "reg", "int", "packets", f"{QPKTS_BITS} bits", 1, (1 << QPKTS_BITS) - 1,
          (1 << QPKTS_BITS) - 1, "Hard queue limit in packets (forced drop above it)."),
    Field("limit_bytes", "reg", "int", "bytes", f"{QBYTES_BITS} bits", 1, (1 << QBYTES_BITS) - 1,
          (1 << QBYTES_BITS) - 1, "Hard queue limit in bytes (forced drop above it)."),
    Field("hash_key", "reg", "bytes", "-",
          lambda b: "328 bits (first 327 used)" if b.flow_key == "ipv6" else
          "160 bits (first 136 used)", hash_key_bytes,
          hash_key_bytes, lambda b: RSS_KEY6 if b.flow_key == "ipv6" else RSS_KEY,
          "Toeplitz hash key. Secret in deployment. A commit that changes it re-keys live: "
          "the vector is wiped and rebuilt under the new key while decisions use the count "
          "held from before (see rekey_hold_t_clear). Write-only: reads return 0.",
          secret=True),
    Field("hash_mix_key", "reg", "bytes", "-", f"{MIX_KEY_BITS} bits (3 round keys)",
          MIX_KEY_BITS // 8, MIX_KEY_BITS // 8, MIX_KEY_DEFAULT,
          "Key of the hash's keyed non-linear stage (builds with Build.hash_mix). Secret in "
          "deployment. A commit that changes it re-keys live, as hash_key does. Write-only: "
          "reads return 0.", secret=True),
    Field("rekey_hold_t_clear", "host", "float", "t_clear",
          "host -> rekey_hold (48-bit clocks)",
          0.0, 64.0, 3.0,
          "After a re-key, decisions use the flow count held from before the re-key for this "
          "many t_clear (from the first arrival after it) while the wiped vector refills "
          "under the new key; 0 uses the rebuilding count at once."),
    Field("seed_decide", "host", "int", "-", "host -> rng_decide_state (128 bits)", 0,
          (1 << 64) - 1, 1, "Seed of the per-arrival random numbers. Secret in deployment "
          "(whoever knows it predicts every drop decision): the default is public, for "
          "reproducible model and simulator runs; the commands that configure hardware draw "
          "one. rng_decide_state is write-only: reads return 0.", secret=True),
    Field("seed_clear", "host", "int", "-", "host -> rng_clear_state (128 bits)", 0,
          (1 << 64) - 1, 2, "Seed of the random indices of cleared bits. Secret as "
          "seed_decide; rng_clear_state is write-only: reads return 0.", secret=True),
    Field("clear_literal", "float", "bool", "-", "float model only", 0, 1, False,
          "Float model: clear as the paper's Fig. 4 code does, restarting the schedule at each "
          "arrival that clears (the effective t_clear grows; 4.6 s instead of 4 s at 217 "
          "packets/s). The hardware clears at exactly v_max / t_clear per second."),
    Field("pkt_time_s", "float", "float", "s", "float model only", 1e-12, 10.0,
          576 * 8 / 1e6,
          "Float model: transmission time of a typical packet. Its per-arrival EWMA weight is "
          "w_q = 1 - exp(-pkt_time_s / avg_tau_s) (Adaptive RED's rule), and while the queue "
          "is idle the average decays as if one empty-queue sample arrived per pkt_time_s "
          "(RED's idle-time rule)."),
]
FIELD_BY_NAME = {f.name: f for f in FIELDS}
#: What reports show instead of the value of a key field (``Build.fixed_json``).
SECRET_SHOWN = "(secret)"
#: The names of the key fields (``Field.secret``).
SECRET_FIELDS = tuple(f.name for f in FIELDS if f.secret)


def check_value(f, value, build):
    """``value`` of field ``f`` in ``build``, checked and of the field's type (bool, int,
    float, bytes, or the name of a ``fpq.drop_probability.Mode``); ``ConfigError`` names the field and what is
    allowed."""
    lo, hi = f.bounds(build)
    if f.type == "bool":
        if not isinstance(value, (bool, int)) or value not in (0, 1, True, False):
            raise ConfigError(f"{f.name}: {brief(value)} must be true or false")
        return bool(value)
    if f.type == "enum":
        if not isinstance(value, str) or value not in Mode.__members__:
            raise ConfigError(f"{f.name}: {brief(value)} must be one of "
                              f"{', '.join(Mode.__members__)}")
        return value
    if f.type == "bytes":
        if not isinstance(value, (bytes, bytearray)) or len(value) != lo:
            raise ConfigError(f"{f.name}: must be exactly {lo} bytes, got {brief(value)}")
        return bytes(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{f.name}: {brief(value)} is not a number (allowed range "
                          f"[{lo}, {hi}] {f.unit})")
    # an integer is compared exactly: one beyond a float's range cannot be converted
    if (isinstance(value, float) and not math.isfinite(value)) or not lo <= value <= hi:
        raise ConfigError(f"{f.name}: {brief(value)} is out of range [{lo}, {hi}] {f.unit}")
    if f.type == "int" and isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"{f.name}: {brief(value)} must be an integer in [{lo}, {hi}]")
    return int(value) if f.type == "int" else float(value)
