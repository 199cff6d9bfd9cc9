"""The declaration of every register (:class:`RegisterSpec`), and the configuration
registers' (``CONFIG_REGISTERS``, each once: width, range, format, the fields of
``fpq.fields`` it is computed from and how, whether it is a key, which builds have it).

From them come the raw values the hardware holds (``fpq.config.Config.registers``), the
commit's range check (:func:`commit_check`, which ``Config.override`` and the register map
share), and the register map (``fpq.regmap``): addresses, the RTL register file, JSON, C
header, docs.
"""

from dataclasses import dataclass

from .drop_probability import Mode
from .fields import FIELDS, FIELD_BY_NAME, hash_key_bytes
from .flow_hash import MIX_KEY_BITS
from .formats import (QAVG, PROB, PROB_ONE, CLEAR_PERIOD, RATE, QPKTS_BITS, QBYTES_BITS,
                      HOLD_BITS, SAMPLE_PERIOD_BITS, MIN_SAMPLE_PERIOD, WQ_SHIFT_MAX,
                      FLOW_COUNT_BITS, CAPPED_COUNT_BITS)
from .random_source import expand_seed

__all__ = ["RegisterSpec", "CONFIG_REGISTERS", "REKEY_HOLD_LIMIT", "key_registers",
           "register_fields", "in_placement_order", "commit_check"]

#: The re-key hold is a 48-bit register of clocks; below 2**47 (10.9 days at 150 MHz) it also
#: fits the hardware's signed down-counter.
REKEY_HOLD_LIMIT = 1 << 47


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
    _field_register("mode", max(Mode).bit_length(), int(min(Mode)), int(max(Mode)),
                    ", ".join(f"{m.value} {m.name}" for m in Mode), lambda c: int(Mode[c.mode])),
    _field_register("ecn", 1, 0, 1, "bool", lambda c: int(c.ecn)),
    _field_register("v_max", FLOW_COUNT_BITS, 1, lambda b: b.vec_bits, "bits", lambda c: c.v_max),
    RegisterSpec("clear_period", CLEAR_PERIOD.width, 1 << CLEAR_PERIOD.frac_bits,
                 CLEAR_PERIOD.max_raw, str(CLEAR_PERIOD),
                 "Clocks between two clears (>= 1.0): t_clear * tick_hz / v_max.",
                 sources=("t_clear_s", "tick_hz", "v_max"),
                 derive=lambda c: c.clear_period_raw()),
    _field_register("n_cap", CAPPED_COUNT_BITS, 1, lambda b: b.table_depth - 1, "flows", lambda c: c.n_cap),
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
    _field_register("hash_key", lambda b: 8 * hash_key_bytes(b), 0,
                    lambda b: (1 << 8 * hash_key_bytes(b)) - 1,
                    lambda b: f"key bits 0..{8 * hash_key_bytes(b) - 1}, bit 0 = MSB of byte "
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


def in_placement_order(specs, build):
    """The declarations of ``specs`` that ``build`` has, in the order the register map places
    them (``fpq.regmap.place``): those every build has, in declaration order, then those some
    builds lack (``RegisterSpec.exists``), so that the addresses of the others do not depend
    on the build."""
    specs = [s for s in specs if s.in_build(build)]
    return [s for s in specs if s.exists is None] + [s for s in specs if s.exists is not None]


def commit_check(values, build):
    """The commit check the hardware does (``fpq.regmap``). ``values`` are the raw values last
    written to each configuration register (a value wider than the register counts as out of
    range: the hardware keeps the old shadow and flags the register). Returns the name of the
    first configuration register of ``build`` (in placement order; the registers ``build``
    fixes are not checked) whose value is out of range, or None if the commit is accepted."""
    for s in in_placement_order(CONFIG_REGISTERS, build):
        if s.fixed_in(build):
            continue
        lo, hi = s.bounds(build)
        v = values[s.name]
        if not lo <= v <= hi:
            return s.name
        if s.name == "red_max_th" and v < values["red_min_th"] + (1 << QAVG.frac_bits):
            return s.name
    return None


def _words_to_int(words):
    """Four 32-bit words (x, y, z, w) as one 128-bit register value, x in the low word."""
    return sum(w << (32 * i) for i, w in enumerate(words))
