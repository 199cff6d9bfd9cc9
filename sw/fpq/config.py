"""The one configuration source: every runtime parameter, its unit, format, range and default.

``FIELDS`` declares the fields, ``CONFIG_REGISTERS`` the configuration registers (each once:
width, range, format, the fields it is computed from and how, whether it is a key, which
builds have it). From them come:

* :class:`Config`, the validated user-level configuration (errors name the field and range);
* :meth:`Config.registers` and the r(N) table, i.e. the raw values the hardware holds, which the
  bit-exact model (``fpq.queue_manager``) runs on, so model and RTL see the same numbers;
* the register map (``fpq.regmap``): addresses, the RTL register file, JSON, C header, docs.

A field is ``reg`` (a hardware register with the same meaning), ``host`` (the driver folds it
into derived registers or the table: the hardware never sees it directly), or ``float`` (a
parameter of the paper's floating-point model only, ``fpq.float_model``; no register).
"""

from dataclasses import dataclass, field as dc_field
import math
import secrets

from .formats import (QAVG, PROB, PROB_ONE, CLEAR_PERIOD, RATE, QPKTS_BITS, QBYTES_BITS,
                      HOLD_BITS, SAMPLE_PERIOD_BITS, MIN_SAMPLE_PERIOD, WQ_SHIFT_MAX)
from .flow_hash import HASH_INPUTS, MIX_KEY_BITS, FLOW_KEYS, FLOW_KEY_BITS, HASH_KEY_BYTES
from .queue_averager import avg_parameters, ewma_time_constant

__all__ = ["Field", "FIELDS", "RegisterSpec", "CONFIG_REGISTERS", "key_registers",
           "register_fields", "Build", "Config", "ConfigError", "MODES", "RSS_KEY",
           "RSS_KEY6", "SECRET_FIELDS", "SECRET_SHOWN", "KEY_WINDOW_MIN_BITS", "key_weakness",
           "check_key", "parse_key", "hardware_keys", "random_key",
           "expand_seed", "REKEY_HOLD_LIMIT", "parse_fixed", "AVG_DELAY", "BUILD_SIZES",
           "MIX_KEY_DEFAULT"]

MODES = {"droptail": 0, "red": 1, "fpq": 2}
#: The Microsoft RSS verification key (first 20 bytes are used): ``Config``'s default key, so
#: that the golden model's and the simulator's runs are reproducible and match NIC test
#: vectors. Public: an attacker who knows the key can make flows collide
#: (docs/RELIABILITY.md, "Key handling"), so the commands that configure hardware never use
#: it (``fpq config``, ``fpq board monitor --configure`` and ``fpq board build`` draw a key
#: with :func:`random_key` unless given one, and refuse this one: :func:`check_key`).
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
#: The re-key hold is a 48-bit register of clocks; below 2**47 (10.9 days at 150 MHz) it also
#: fits the hardware's signed down-counter.
REKEY_HOLD_LIMIT = 1 << 47
#: ``Build.avg_delay`` by default: the clocks the RTL needs from a sample of the queue to the
#: average it publishes, as seen by an arrival (``fpq_hdl.queue_manager.MIN_AVG_DELAY``).
AVG_DELAY = 14
#: The build-time sizes the RTL supports, each a power of two in ``[lo, hi]``.
BUILD_SIZES = {"vec_bits": (64, 65536), "table_depth": (16, 65536)}


class ConfigError(ValueError):
    """A configuration value is out of range; the message names the field and the range."""


@dataclass(frozen=True)
class Build:
    """Build-time (synthesis) parameters. The RTL is elaborated for one of these."""
    vec_bits: int = 8192       # flow vector size in bits (power of two, 64..65536)
    table_depth: int = 8192    # entries in the r(N) table (power of two, 16..65536)
    #: An arrival accepted at clock c decides with the average of every sample taken at or
    #: before clock ``c - avg_delay``: the clocks from a sample to the average it publishes.
    #: The RTL supports any value from its pipeline's own (``AVG_DELAY``) up.
    avg_delay: int = AVG_DELAY
    #: Configuration fields fixed at build time, as ``(name, value)`` pairs of ``FIELDS``
    #: (``Build(fixed=(("avg_tau_s", 1e-3), ("mode", "fpq")))``; a dict is accepted and stored as
    #: sorted pairs). Every ``Config`` of this build has these values (another value is a
    #: ``ConfigError``), and a register whose value depends on fixed fields only is a constant
    #: in the hardware (``fpq.regmap``: kind "fixed", read-only): no shadow, no range check,
    #: and the logic it feeds is simplified by synthesis (docs/BENCHMARKS.md, "Fixed
    #: registers").
    fixed: tuple = ()
    #: Where the flow hash comes from, one of ``fpq.flow_hash.HASH_INPUTS``: "5-tuple"
    #: (Toeplitz of the IPv4 5-tuple), "rss" (Microsoft RSS as a NIC computes it: the
    #: 4-tuple for TCP and UDP, the 2-tuple otherwise) or "descriptor" (the arrival's ``flow``
    #: carries a 32-bit hash made outside, such as a NIC's RSS hash; the queue manager's own
    #: Toeplitz is skipped).
    hash_input: str = "5-tuple"
    #: The keyed non-linear stage after the hash (``fpq.flow_hash.mix``, key ``hash_mix_key``),
    #: which makes colliding flows expensive to find (docs/RELIABILITY.md); False: the plain
    #: hash, a NIC's RSS hash with ``hash_input`` "rss".
    hash_mix: bool = True
    #: The flow key of the arrivals, one of ``fpq.flow_hash.FLOW_KEYS``: "ipv4" (the 104-bit
    #: IPv4 5-tuple, ``fpq.pack_flow``) or "ipv6" (the 296-bit IPv6 5-tuple,
    #: ``fpq.pack_flow6``; ``hash_key`` is then 41 bytes, ``fpq.flow_hash.HASH_KEY_BYTES``).
    #: Not with ``hash_input`` "descriptor", whose ``flow`` is a 32-bit hash.
    flow_key: str = "ipv4"
    #: The power-on (reset) values of the runtime key registers, as ``(name, value)`` pairs
    #: of key fields (``SECRET_FIELDS``) that a register of the build holds and the build does
    #: not fix (a dict is accepted and stored as sorted pairs); each is checked with
    #: :func:`check_key` (a weak or public key is refused). The register map's reset values
    #: (``fpq.regmap``), the RTL register file's shadows and active configuration out of
    #: reset, and ``Config(build=...)``'s defaults all take them, so that a core is never
    #: keyed with the public default until a host writes a key (``fpq verilog`` and ``fpq
    #: board build`` draw them from the operating system: :func:`random_key`). Secret: the
    #: generated map and the build's reports leave them out (``secret_values``).
    power_on_keys: tuple = ()

    def __post_init__(self):
        if self.hash_input not in HASH_INPUTS:
            raise ConfigError(f"hash_input: {self.hash_input!r} is not one of "
                              f"{', '.join(HASH_INPUTS)}")
        if self.flow_key not in FLOW_KEYS:
            raise ConfigError(f"flow_key: {self.flow_key!r} is not one of "
                              f"{', '.join(FLOW_KEYS)}")
        if self.flow_key != "ipv4" and self.hash_input == "descriptor":
            raise ConfigError(f"flow_key: {self.flow_key!r} is not allowed with hash_input "
                              f"'descriptor' (the descriptor carries a 32-bit hash, not a "
                              f"flow key); allowed: ipv4")
        if not isinstance(self.hash_mix, bool):
            raise ConfigError(f"hash_mix: {self.hash_mix!r} must be True or False")
        for name, (lo, hi) in BUILD_SIZES.items():
            v = getattr(self, name)
            if not isinstance(v, int) or v < lo or v > hi or v & (v - 1):
                raise ConfigError(f"{name}: {v!r} must be a power of two in [{lo}, {hi}]")
        if not isinstance(self.avg_delay, int) or isinstance(self.avg_delay, bool) or \
                not 1 <= self.avg_delay <= 127:
            raise ConfigError(f"avg_delay: {self.avg_delay!r} must be an integer in [1, 127] "
                              f"clocks")
        fixed = self.fixed.items() if isinstance(self.fixed, dict) else self.fixed
        try:
            pairs = [(name, value) for name, value in fixed]
        except (TypeError, ValueError):
            raise ConfigError(f"fixed: {self.fixed!r} must be (field, value) pairs") from None
        names = [name for name, _ in pairs]
        unknown = sorted(set(map(str, names)) - set(FIELD_BY_NAME))
        if unknown or len(set(names)) != len(names):
            raise ConfigError(f"fixed: {', '.join(unknown) or 'a repeated field'} is not "
                              f"allowed; fields: {', '.join(FIELD_BY_NAME)}")
        try:
            pairs = sorted((name, _check_number(FIELD_BY_NAME[name], value, self))
                           for name, value in pairs)
        except ConfigError as e:
            raise ConfigError(f"fixed: {e}") from None
        object.__setattr__(self, "fixed", tuple(pairs))
        object.__setattr__(self, "power_on_keys", self._checked_power_on_keys())

    def _checked_power_on_keys(self):
        """``power_on_keys`` as sorted ``(name, bytes)`` pairs, each checked; errors name the
        field and what is allowed."""
        given = self.power_on_keys
        given = given.items() if isinstance(given, dict) else given
        try:
            pairs = [(name, value) for name, value in given]
        except (TypeError, ValueError):
            raise ConfigError(f"power_on_keys: {self.power_on_keys!r} must be (field, key) "
                              f"pairs") from None
        allowed = [name for name in SECRET_FIELDS if name in register_fields(self)
                   and name not in self.fixed_fields]
        names = [name for name, _ in pairs]
        for name in names:
            if name not in allowed or names.count(name) > 1:
                why = "given twice" if name in allowed else \
                    "fixed by this build (Build.fixed)" if name in self.fixed_fields else \
                    "not a key field of a register of this build"
                raise ConfigError(f"power_on_keys: {name}: {why}; allowed: the runtime key "
                                  f"fields of this build, {', '.join(allowed) or 'none'}")
        return tuple(sorted((name, check_key(value, name, f"power_on_keys {name}", self))
                            for name, value in pairs))

    @property
    def fixed_fields(self):
        """The fixed fields as a dict."""
        return dict(self.fixed)

    def secret_values(self):
        """The key fields (``SECRET_FIELDS``) whose value the build sets, fixed
        (``fixed``) or at power-on (``power_on_keys``), as a dict: the build's secret, which
        its reports and the generated map leave out. In ``SECRET_FIELDS`` order."""
        values = dict(self.fixed, **dict(self.power_on_keys))
        return {name: values[name] for name in SECRET_FIELDS if name in values}

    def to_json(self):
        """The build as a dict of JSON values, for reports and generated maps: sizes,
        ``avg_delay``, the hash's choices and the fixed fields (``fixed_json``)."""
        return {"vec_bits": self.vec_bits, "table_depth": self.table_depth,
                "avg_delay": self.avg_delay, "hash_input": self.hash_input,
                "hash_mix": self.hash_mix, "flow_key": self.flow_key,
                "fixed": self.fixed_json()}

    def fixed_json(self, reveal_secrets=False):
        """The fixed fields as a dict of JSON values (bytes as hex), for reports: a key field
        (``Field.secret``) shows as ``SECRET_SHOWN`` unless ``reveal_secrets``."""
        return {k: SECRET_SHOWN if FIELD_BY_NAME[k].secret and not reveal_secrets else
                v.hex() if isinstance(v, bytes) else v for k, v in self.fixed}


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
    #: Key material: every register computed from it is write-only (``fpq.regmap``: access
    #: "secret", reads return 0 on every bus), build reports leave its value out, and the
    #: commands that configure hardware draw it from the operating system unless given it.
    secret: bool = False

    def bounds(self, build):
        lo = self.lo(build) if callable(self.lo) else self.lo
        hi = self.hi(build) if callable(self.hi) else self.hi
        return lo, hi


def _hash_key_bytes(build):
    """The bytes of ``hash_key`` in ``build`` (``fpq.flow_hash.HASH_KEY_BYTES``)."""
    return HASH_KEY_BYTES[(build or Build()).flow_key]


FIELDS = [
    Field("mode", "reg", "enum", "-", "2 bits: droptail=0 red=1 fpq=2", 0, 2, "fpq",
          "Queue discipline."),
    Field("ecn", "reg", "bool", "-", "1 bit", 0, 1, False,
          "Mark ECN-capable packets instead of dropping them early (forced drops still drop)."),
    Field("tick_hz", "host", "float", "Hz", "host", 1e3, 1e10, 150e6,
          "Clock rate of the queue manager, whose clock is its time base (descriptors carry "
          "the clock they are accepted in); converts seconds to clocks."),
    Field("p_pkts", "host", "float", "packets", "host", 0.0, 65535.0, 21.7,
          "P, the delay-bandwidth product (FPQ paper Fig. 5). Folded into the r(N) table."),
    Field("v_max", "reg", "int", "bits", "17 bits", 1, lambda b: b.vec_bits,
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
          "160 bits (first 136 used)", _hash_key_bytes,
          _hash_key_bytes, lambda b: RSS_KEY6 if b.flow_key == "ipv6" else RSS_KEY,
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
          (1 << 64) - 1, 1, "Seed of the per-arrival random numbers."),
    Field("seed_clear", "host", "int", "-", "host -> rng_clear_state (128 bits)", 0,
          (1 << 64) - 1, 2, "Seed of the random indices of cleared bits."),
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


@dataclass(frozen=True)
class RegisterSpec:
    """The declaration of one register, for every build: ``fpq.regmap.place`` puts the
    registers of one build at their addresses (``fpq.regmap.Register``), and every consumer
    (the configuration's raw values, the commit check, the generated map, the RTL register
    file) reads them from there or from here.

    Parameters
    ----------
    name : str
    width : int or callable
        Bits (a callable takes the :class:`Build`); a register wider than 32 takes
        consecutive words (``fpq.regmap``).
    lo, hi : int or callable
        The allowed raw range (a callable takes the :class:`Build`): a configuration
        register's is checked at the commit, a traffic generator setting's at the write.
    fmt : str or callable
        The raw value's format, for the generated map (a callable takes the :class:`Build`).
    doc : str
    kind : str
        "config" (a shadowed configuration register, derived from the configuration: its
        access, reset and kind in a build follow from ``sources``, see ``fpq.regmap``), or the
        kind of any other register: "control", "setting" (read-write, applied at the write:
        the traffic generator's), "counter", "telemetry".
    access : str
        Of a register not of kind "config": "rw", "ro", "wo" or "rc" (``fpq.regmap.Register``).
    reset : int or callable
        Of a register not of kind "config" (a callable takes the :class:`Build`); a
        configuration register's is the default configuration's value.
    sources : tuple of str
        The configuration fields (``FIELDS``) the value is computed from: a register of a field
        declared ``secret`` is secret (write-only), one all of whose fields a build fixes
        (``Build.fixed``) is a constant of that build.
    derive : callable
        The raw value (an integer) of a :class:`Config`, as the hardware holds it.
    key : bool
        A key of the flow hash: a commit that changes it re-keys live (wipes the vector and
        holds the flow count, ``fpq.regmap``).
    exists : callable or None
        Whether a :class:`Build` has the register; None: every build has it.
    """
    name: str
    width: int
    lo: object
    hi: object
    fmt: str
    doc: str
    kind: str = "config"
    access: str = "rw"
    reset: int = 0
    sources: tuple = ()
    derive: object = None
    key: bool = False
    exists: object = None

    def bounds(self, build):
        """``(lo, hi)`` in ``build``."""
        lo = self.lo(build) if callable(self.lo) else self.lo
        hi = self.hi(build) if callable(self.hi) else self.hi
        return lo, hi

    def width_in(self, build):
        """The register's bits in ``build``."""
        return self.width(build) if callable(self.width) else self.width

    def words_in(self, build):
        """The 32-bit words the register takes in ``build``."""
        return (self.width_in(build) + 31) // 32

    def fmt_in(self, build):
        """The raw value's format in ``build``."""
        return self.fmt(build) if callable(self.fmt) else self.fmt

    def reset_in(self, build):
        """The reset value of a register not of kind "config" in ``build``."""
        return self.reset(build) if callable(self.reset) else self.reset

    def in_build(self, build):
        """Whether ``build`` has this register."""
        return self.exists is None or self.exists(build)

    @property
    def secret(self):
        """Key material (computed from a field declared ``secret``): write-only."""
        return any(FIELD_BY_NAME[f].secret for f in self.sources)

    def fixed_in(self, build):
        """Whether this configuration register is a constant of ``build`` (all its
        ``sources`` fixed, ``Build.fixed``)."""
        fixed = build.fixed_fields
        return self.kind == "config" and all(f in fixed for f in self.sources)


def _raw(fmt, name):
    """The raw value of :class:`Config` field ``name`` in format ``fmt``, as a function of
    the configuration."""
    return lambda c: fmt.to_raw(c.values[name], name)


_min_th, _max_th, _max_p = (_raw(QAVG, "red_min_th"), _raw(QAVG, "red_max_th"),
                            _raw(PROB, "red_max_p"))


def _red_slope1(c):
    min_th, max_th, max_p = _min_th(c), _max_th(c), _max_p(c)
    slope = (max_p / PROB_ONE) / ((max_th - min_th) / (1 << QAVG.frac_bits))
    return RATE.pack(*RATE.encode(slope, "red_slope1"))


def _red_slope2(c):
    max_th, max_p = _max_th(c), _max_p(c)
    slope = (1 - max_p / PROB_ONE) / (max_th / (1 << QAVG.frac_bits))
    return RATE.pack(*RATE.encode(slope, "red_slope2"))


def _field_register(name, width, lo, hi, fmt, derive, doc_more="", **kw):
    """The declaration of a register that holds field ``name`` (its doc, ``doc_more``
    appended)."""
    return RegisterSpec(name, width, lo, hi, fmt, FIELD_BY_NAME[name].doc + doc_more,
                        sources=(name,), derive=derive, **kw)


#: The configuration registers, the one declaration of each. ``Config.registers`` holds the
#: value of every one in this order; the register map (``fpq.regmap.registers``) places those
#: of a build in this order too, after those every build has the ones some builds lack, so
#: that the addresses of the others are the same in every build.
CONFIG_REGISTERS = [
    _field_register("mode", 2, 0, 2, "0 droptail, 1 red, 2 fpq", lambda c: MODES[c.mode]),
    _field_register("ecn", 1, 0, 1, "bool", lambda c: int(c.ecn)),
    _field_register("v_max", 17, 1, lambda b: b.vec_bits, "bits", lambda c: c.v_max),
    RegisterSpec("clear_period", CLEAR_PERIOD.width, 1 << CLEAR_PERIOD.frac_bits,
                 CLEAR_PERIOD.max_raw, str(CLEAR_PERIOD),
                 "Clocks between two clears (>= 1.0): t_clear * tick_hz / v_max.",
                 sources=("t_clear_s", "tick_hz", "v_max"),
                 derive=lambda c: c.clear_period_raw()),
    _field_register("n_cap", 16, 1, lambda b: b.table_depth - 1, "flows", lambda c: c.n_cap),
    RegisterSpec("wq_shift", 5, 0, WQ_SHIFT_MAX, "shift",
                 "Weight of a sample in the average queue, 2^-wq_shift (from avg_tau_s).",
                 sources=("avg_tau_s", "tick_hz"), derive=lambda c: c.avg_parameters()[0]),
    RegisterSpec("avg_sample_period", SAMPLE_PERIOD_BITS, MIN_SAMPLE_PERIOD,
                 (1 << SAMPLE_PERIOD_BITS) - 1, "clocks",
                 "Clocks between two samples of the queue into its average (from avg_tau_s).",
                 sources=("avg_tau_s", "tick_hz"), derive=lambda c: c.avg_parameters()[1]),
    _field_register("red_min_th", QAVG.width, 0, QAVG.max_raw, str(QAVG), _min_th),
    _field_register("red_max_th", QAVG.width, 1 << QAVG.frac_bits, QAVG.max_raw, str(QAVG),
                    _max_th, " Commit also rejects max_th < min_th + 1.0."),
    _field_register("red_max_p", PROB.width, 0, PROB_ONE, str(PROB), _max_p),
    RegisterSpec("red_slope1", RATE.width, 0, (1 << RATE.width) - 1, "RATE m16 s6",
                 "max_p / (max_th - min_th), per packet (driver computes).",
                 sources=("red_min_th", "red_max_th", "red_max_p"), derive=_red_slope1),
    RegisterSpec("red_slope2", RATE.width, 0, (1 << RATE.width) - 1, "RATE m16 s6",
                 "(1 - max_p) / max_th, per packet (driver computes; gentle RED).",
                 sources=("red_max_th", "red_max_p"), derive=_red_slope2),
    _field_register("red_gentle", 1, 0, 1, "bool", lambda c: int(c.red_gentle)),
    _field_register("limit_pkts", QPKTS_BITS, 1, (1 << QPKTS_BITS) - 1, "packets",
                    lambda c: c.limit_pkts),
    _field_register("limit_bytes", QBYTES_BITS, 1, (1 << QBYTES_BITS) - 1, "bytes",
                    lambda c: c.limit_bytes),
    _field_register("hash_key", lambda b: 8 * _hash_key_bytes(b), 0,
                    lambda b: (1 << 8 * _hash_key_bytes(b)) - 1,
                    lambda b: f"key bits 0..{8 * _hash_key_bytes(b) - 1}, bit 0 = MSB of byte "
                              f"0 at the top",
                    lambda c: int.from_bytes(c.hash_key, "big"), key=True),
    _field_register("hash_mix_key", MIX_KEY_BITS, 0, (1 << MIX_KEY_BITS) - 1,
                    "round keys k0 = bits 95..64 (byte 0 at the top), k1 = 63..32, k2 = 31..0",
                    lambda c: int.from_bytes(c.hash_mix_key, "big"),
                    " Only in builds with the keyed non-linear stage (Build.hash_mix).",
                    key=True, exists=lambda b: b.hash_mix),
    RegisterSpec("rng_decide_state", 128, 1, (1 << 128) - 1, "xorshift128 x|y|z|w (x low)",
                 "State loaded into the per-arrival generator (not all zero: the generator's "
                 "fixed point).", sources=("seed_decide",),
                 derive=lambda c: _words_to_int(expand_seed(c.seed_decide))),
    RegisterSpec("rng_clear_state", 128, 1, (1 << 128) - 1, "xorshift128 x|y|z|w (x low)",
                 "State loaded into the clear-index generator (not all zero: the generator's "
                 "fixed point).", sources=("seed_clear",),
                 derive=lambda c: _words_to_int(expand_seed(c.seed_clear))),
    RegisterSpec("rekey_hold", HOLD_BITS, 0, REKEY_HOLD_LIMIT - 1, "clocks",
                 "After a commit that changes hash_key: clocks, from the first arrival after it, "
                 "during which decisions use the flow count held from before the re-key (0: no "
                 "hold).", sources=("rekey_hold_t_clear", "t_clear_s", "tick_hz"),
                 derive=lambda c: c.rekey_hold_raw()),
]


def key_registers(build):
    """The names of the key registers (``RegisterSpec.key``) ``build`` has."""
    return [r.name for r in CONFIG_REGISTERS if r.key and r.in_build(build)]


def register_fields(build):
    """The names of the fields some configuration register of ``build`` is computed from,
    in ``FIELDS`` order (the others are host-only, the table's, or the float model's, or
    belong to a register the build does not have)."""
    used = {f for r in CONFIG_REGISTERS if r.in_build(build) for f in r.sources}
    return [f.name for f in FIELDS if f.name in used]

#: Toeplitz key rule: fewest set bits in each 32-bit key window an input bit selects.
KEY_WINDOW_MIN_BITS = 8


def _key_input_bits(key):
    """The input bits of the flow key whose ``hash_key`` has ``key``'s length
    (``fpq.flow_hash.HASH_KEY_BYTES``; the IPv4 key's for any other length)."""
    return next((FLOW_KEY_BITS[k] for k, n in HASH_KEY_BYTES.items() if n == len(key)),
                FLOW_KEY_BITS["ipv4"])


def _toeplitz_windows(key):
    """The 32-bit key windows the input bits of the 5-tuple select (``fpq.flow_hash``; 104
    for the IPv4 key, 296 for the IPv6 one): window ``i`` starts at key bit ``i`` (bit 0 =
    the MSB of byte 0)."""
    from .formats import HASH_BITS
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

    Any other key field: weak when all its bits are equal (all zeros or all ones)."""
    key = bytes(key)
    if name != "hash_key":
        if key in (bytes(len(key)), b"\xff" * len(key)):
            return "all its bits are equal"
        return None
    from .formats import HASH_BITS
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
    nbytes = FIELD_BY_NAME[name].bounds(build or Build())[0]
    if not isinstance(key, (bytes, bytearray)) or len(key) != nbytes:
        raise ConfigError(f"{what}: must be exactly {nbytes} bytes ({2 * nbytes} hex digits), "
                          f"got {key!r}")
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
        nbytes = FIELD_BY_NAME[name].bounds(build or Build())[0]
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
            if name in given and bytes(given[name][0]) != fixed[name]:
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


def random_key(name="hash_key", build=None):
    """A value of the key field ``name`` of ``build`` (default ``Build()``) from the
    operating system's random source (``secrets.token_bytes``), drawn again until
    :func:`key_weakness` finds nothing."""
    nbytes = FIELD_BY_NAME[name].bounds(build or Build())[0]
    while True:
        key = secrets.token_bytes(nbytes)
        if key_weakness(key, name) is None:
            return key


def parse_fixed(items, option="--fix"):
    """``["avg_tau_s=1e-3", "mode=fpq", "hash_key=6d5a..."]`` -> a dict for ``Build(fixed=...)``.
    Values are typed by their field (integers in any base, true/false, hex bytes); errors
    name the option, the field and what is allowed. Ranges are checked by ``Build``."""
    out = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        f = FIELD_BY_NAME.get(name)
        if not sep or f is None:
            raise ConfigError(f"{option}: {item!r} must be FIELD=VALUE with FIELD one of "
                              f"{', '.join(FIELD_BY_NAME)}")
        try:
            if f.type == "int":
                value = int(text, 0)
            elif f.type == "float":
                value = float(text)
            elif f.type == "bool":
                value = {"true": True, "1": True, "false": False, "0": False}[text.lower()]
            elif f.type == "bytes":
                value = bytes.fromhex(text)
            else:
                value = text
        except (ValueError, KeyError):
            kind = {"int": "an integer", "float": "a number", "bool": "true or false",
                    "bytes": "hex bytes"}[f.type]
            raise ConfigError(f"{option} {name}: {text!r} is not {kind}") from None
        if name in out:
            raise ConfigError(f"{option} {name}: given twice")
        out[name] = value
    return out


def expand_seed(seed):
    """128-bit xorshift128 state (four 32-bit words) from a 64-bit seed, with splitmix64."""
    words = []
    x = seed & 0xFFFFFFFFFFFFFFFF
    for _ in range(2):
        x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        z ^= z >> 31
        words += [z & 0xFFFFFFFF, z >> 32]
    if not any(words):
        words[3] = 1
    return tuple(words)


def _check_number(f, value, build):
    lo, hi = f.bounds(build)
    if f.type == "bool":
        if not isinstance(value, (bool, int)) or value not in (0, 1, True, False):
            raise ConfigError(f"{f.name}: {value!r} must be true or false")
        return bool(value)
    if f.type == "enum":
        if value not in MODES:
            raise ConfigError(f"{f.name}: {value!r} must be one of {', '.join(MODES)}")
        return value
    if f.type == "bytes":
        if not isinstance(value, (bytes, bytearray)) or len(value) != lo:
            raise ConfigError(f"{f.name}: must be exactly {lo} bytes, got {value!r}")
        return bytes(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{f.name}: {value!r} is not a number (allowed range [{lo}, {hi}] "
                          f"{f.unit})")
    if not math.isfinite(value) or value < lo or value > hi:
        raise ConfigError(f"{f.name}: {value!r} is out of range [{lo}, {hi}] {f.unit}")
    if f.type == "int" and (not float(value).is_integer()):
        raise ConfigError(f"{f.name}: {value!r} must be an integer in [{lo}, {hi}]")
    return int(value) if f.type == "int" else float(value)


@dataclass(frozen=True)
class Config:
    """A validated configuration. ``Config(mode="red", red_max_p=0.1)``; unknown keys and
    out-of-range values raise :class:`ConfigError` naming the field and its range."""
    values: dict = dc_field(default_factory=dict)
    build: Build = dc_field(default_factory=Build)
    #: Raw register values that replace the ones derived from ``values`` (``override``).
    raw: tuple = ()

    def __init__(self, build=None, **values):
        object.__setattr__(self, "raw", ())
        build = build or Build()
        unknown = sorted(set(values) - set(FIELD_BY_NAME))
        if unknown:
            raise ConfigError(f"unknown configuration field(s): {', '.join(unknown)}; "
                              f"known: {', '.join(FIELD_BY_NAME)}")
        full = {}
        fixed, power_on = build.fixed_fields, dict(build.power_on_keys)
        for f in FIELDS:
            default = f.default(build) if callable(f.default) else f.default
            # the build's value, else its power-on key (the hardware's state out of reset)
            default = fixed.get(f.name, power_on.get(f.name, default))
            full[f.name] = _check_number(f, values.get(f.name, default), build)
            if f.name in fixed and full[f.name] != fixed[f.name]:
                raise ConfigError(f"{f.name}: {values[f.name]!r} is not allowed: this build "
                                  f"fixes it to {build.fixed_json()[f.name]!r} (Build.fixed); "
                                  f"another value needs another build")
        object.__setattr__(self, "values", full)
        object.__setattr__(self, "build", build)
        self._check_relations()

    def __getattr__(self, name):
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def replace(self, **changes):
        """A copy with some fields changed (and the same ``override`` registers)."""
        v = dict(self.values)
        v.update(changes)
        return Config(build=self.build, **v).override(**dict(self.raw))

    def override(self, **registers):
        """A copy whose named registers hold these raw values instead of the ones derived
        from the fields: a model of hardware whose registers were written directly (say
        ``wq_shift`` and ``avg_sample_period``, which ``avg_tau_s`` otherwise chooses).
        Each value is checked against the register map's range, as a commit would; the
        registers a build fixes cannot be overridden."""
        from .regmap import registers as regmap, check_registers
        regs = {r.name: r for r in regmap(self.build)}
        raw = dict(self.raw)
        for name, value in registers.items():
            r = regs.get(name)
            if r is None or r.kind not in ("config", "fixed"):
                raise ConfigError(f"override: {name!r} is not a configuration register; "
                                  f"registers: {', '.join(n for n, x in regs.items() if x.kind == 'config')}")
            if r.kind == "fixed":
                raise ConfigError(f"override: {name} is fixed in this build (Build.fixed)")
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not r.lo <= value <= r.hi:
                raise ConfigError(f"override: {name}: {value!r} is out of range "
                                  f"[{r.lo}, {r.hi}]")
            raw[name] = value
        out = Config.__new__(Config)
        object.__setattr__(out, "values", self.values)
        object.__setattr__(out, "build", self.build)
        object.__setattr__(out, "raw", tuple(sorted(raw.items())))
        bad = check_registers(out.registers(), self.build)
        if bad is not None:
            name = regmap(self.build)[bad].name
            raise ConfigError(f"override: {name}: the registers fail the commit check "
                              f"(docs/REGISTERS.md)")
        return out

    def _check_relations(self):
        v = self.values
        if v["red_max_th"] < v["red_min_th"] + 1:
            raise ConfigError(f"red_max_th: {v['red_max_th']} must be >= red_min_th + 1 "
                              f"= {v['red_min_th'] + 1} packets")
        period = v["t_clear_s"] * v["tick_hz"] / v["v_max"]
        if period < 1.0:
            raise ConfigError(
                f"t_clear_s: {v['t_clear_s']} s clears more than one bit per clock with "
                f"v_max={v['v_max']} at tick_hz={v['tick_hz']:g}; allowed range "
                f"[{v['v_max'] / v['tick_hz']:.6g}, ...] s")
        if period * (1 << CLEAR_PERIOD.frac_bits) > CLEAR_PERIOD.max_raw:
            raise ConfigError(f"t_clear_s: {v['t_clear_s']} s is longer than the clear-period "
                              f"register holds; allowed range [..., "
                              f"{CLEAR_PERIOD.max_value * v['v_max'] / v['tick_hz']:.6g}] s")
        # (avg_tau_s: its range, up to 1e4 s, fits the averager's registers at any tick_hz)
        if self.rekey_hold_raw() >= REKEY_HOLD_LIMIT:
            longest = (REKEY_HOLD_LIMIT - 1) / (v["t_clear_s"] * v["tick_hz"])
            raise ConfigError(f"rekey_hold_t_clear: {v['rekey_hold_t_clear']} t_clear is "
                              f"longer than the hold register's signed 48-bit clock range "
                              f"with t_clear_s={v['t_clear_s']} at tick_hz="
                              f"{v['tick_hz']:g}; allowed range [0, {longest:.6g}] t_clear")

    # ---- derived raw values --------------------------------------------------------------
    def clear_period_raw(self):
        v = self.values
        return CLEAR_PERIOD.to_raw(v["t_clear_s"] * v["tick_hz"] / v["v_max"], "t_clear_s")

    def rekey_hold_raw(self):
        """The re-key hold in clocks (the ``rekey_hold`` register)."""
        v = self.values
        return int(round(v["rekey_hold_t_clear"] * v["t_clear_s"] * v["tick_hz"]))

    def avg_parameters(self):
        """``(wq_shift, avg_sample_period)``: the averager's registers for ``avg_tau_s``
        (``fpq.queue_averager.avg_parameters``)."""
        v = self.values
        return avg_parameters(v["avg_tau_s"] * v["tick_hz"])

    def avg_tau_actual_s(self):
        """The time constant the averager's registers give (``avg_tau_s`` rounded)."""
        k, period = self.avg_parameters()
        return ewma_time_constant(k, period) / self.values["tick_hz"]

    def n_effective(self, n):
        """The flow count the table uses for raw popcount ``n`` (correction, N < 1 -> 1)."""
        v = self.values
        if v["lc_correction"] and n > 0:
            m = v["v_max"]
            n = -m * math.log(1 - min(n, m - 0.5) / m)
        return max(float(n), 1.0)

    def rate_table(self):
        """``r(n) = l_t / q_t`` for n = 0..table_depth-1, as packed RATE words."""
        from .float_model import lt_qt_float
        v = self.values
        out = []
        for n in range(self.build.table_depth):
            q_t, l_t = lt_qt_float(self.n_effective(n), v["p_pkts"], v["lt_plus_one"])
            out.append(RATE.pack(*RATE.encode(l_t / q_t, "rate_table")))
        return out

    def registers(self):
        """Raw register values (integers) as the hardware holds them, derived ones included:
        one per ``CONFIG_REGISTERS``, in its order (a register the build does not have too,
        which no model reads), ``override`` values in place of the derived ones."""
        out = {r.name: r.derive(self) for r in CONFIG_REGISTERS}
        out.update(self.raw)
        return out

    def to_dict(self):
        d = dict(self.values)
        for f in FIELDS:
            if f.type == "bytes":
                d[f.name] = d[f.name].hex()
        return d

    @classmethod
    def from_dict(cls, values, build=None):
        """The configuration of a dict of field values in the form ``to_dict`` gives (JSON
        types: ``hash_key`` as hex text); fields left out take their defaults.

        Parameters
        ----------
        values : dict
        build : Build
            The build (default ``Build()``)."""
        if not isinstance(values, dict):
            raise ConfigError(f"configuration: must be an object of configuration fields, "
                              f"not {type(values).__name__}")
        values = dict(values)
        for f in FIELDS:
            key = values.get(f.name)
            if f.type == "bytes" and isinstance(key, str):
                try:
                    values[f.name] = bytes.fromhex(key)
                except ValueError:
                    raise ConfigError(f"{f.name}: {key!r} is not hex bytes (allowed: exactly "
                                      f"{f.bounds(build or Build())[0]} bytes)") from None
        return cls(build=build, **values)


def _words_to_int(words):
    """Four 32-bit words (x, y, z, w) as one 128-bit register value, x in the low word."""
    return sum(w << (32 * i) for i, w in enumerate(words))
