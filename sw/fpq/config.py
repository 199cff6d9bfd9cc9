"""The configuration: :class:`Build`, the synthesis-time parameters the RTL is elaborated
for, and :class:`Config`, a validated runtime configuration (errors name the field and its
range) with the raw values the hardware holds (:meth:`Config.registers` and the r(N) table),
which the bit-exact model (``fpq.queue_manager``) runs on, so model and RTL see the same
numbers.

The one configuration source, by trade: the fields (``fpq.fields``), the registers'
declarations (``fpq.register_specs``), key handling (``fpq.keys``) and the commands' build
options (``fpq.cli_options``); the register map (``fpq.regmap``) derives from them.
"""

from dataclasses import dataclass, field as dc_field
import math

from .drop_probability import rate_table
from .fields import (ConfigError, FIELDS, FIELD_BY_NAME, SECRET_FIELDS, SECRET_SHOWN,
                     check_value)
from .flow_hash import HASH_INPUTS, FLOW_KEYS
from .formats import CLEAR_PERIOD
from .keys import check_key
from .messages import brief, QUOTED_CHARS
from .queue_averager import avg_parameters, ewma_time_constant
from .register_specs import (CONFIG_REGISTERS, REKEY_HOLD_LIMIT, commit_check,
                             in_placement_order, register_fields)

__all__ = ["Build", "Config", "AVG_DELAY", "BUILD_SIZES"]

#: ``Build.avg_delay`` by default: the clocks the RTL needs from a sample of the queue to the
#: average it publishes, as seen by an arrival (``fpq_hdl.queue_manager.MIN_AVG_DELAY``).
AVG_DELAY = 14
#: The build-time sizes the RTL supports, each a power of two in ``[lo, hi]``.
BUILD_SIZES = {"vec_bits": (64, 65536), "table_depth": (16, 65536)}


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
    flow_key: str = FLOW_KEYS[0]
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
            pairs = sorted((name, check_value(FIELD_BY_NAME[name], value, self))
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
            # a name quoted only when it is long or not plain text (a 5 MB key in --config)
            shown = ", ".join(name if len(name) <= QUOTED_CHARS and name.isprintable()
                              else brief(name) for name in unknown[:3])
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            raise ConfigError(f"unknown configuration field(s): {shown}{more}; "
                              f"known: {', '.join(FIELD_BY_NAME)}")
        full = {}
        fixed, power_on = build.fixed_fields, dict(build.power_on_keys)
        for f in FIELDS:
            default = f.default(build) if callable(f.default) else f.default
            # the build's value, else its power-on key (the hardware's state out of reset)
            default = fixed.get(f.name, power_on.get(f.name, default))
            full[f.name] = check_value(f, values.get(f.name, default), build)
            if f.name in fixed and full[f.name] != fixed[f.name]:
                raise ConfigError(f"{f.name}: {brief(values[f.name])} is not allowed: this build "
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
        Each value is checked against the register's range, as a commit would
        (``fpq.register_specs.commit_check``); the registers a build fixes cannot be
        overridden."""
        specs = {s.name: s for s in in_placement_order(CONFIG_REGISTERS, self.build)}
        raw = dict(self.raw)
        for name, value in registers.items():
            s = specs.get(name)
            if s is None:
                names = ", ".join(n for n, x in specs.items() if not x.fixed_in(self.build))
                raise ConfigError(f"override: {brief(name)} is not a configuration register; "
                                  f"registers: {names}")
            if s.fixed_in(self.build):
                raise ConfigError(f"override: {name} is fixed in this build (Build.fixed)")
            lo, hi = s.bounds(self.build)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ConfigError(f"override: {name}: {brief(value)} is out of range [{lo}, {hi}]")
            raw[name] = value
        out = Config.__new__(Config)
        object.__setattr__(out, "values", self.values)
        object.__setattr__(out, "build", self.build)
        object.__setattr__(out, "raw", tuple(sorted(raw.items())))
        bad = commit_check(out.registers(), self.build)
        if bad is not None:
            raise ConfigError(f"override: {bad}: the registers fail the commit check "
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
        """``r(n) = l_t / q_t`` for n = 0..table_depth-1, as packed RATE words
        (``fpq.drop_probability.rate_table``)."""
        return rate_table(self)

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
                    raise ConfigError(f"{f.name}: {brief(key)} is not hex bytes (allowed: exactly "
                                      f"{f.bounds(build or Build())[0]} bytes)") from None
        return cls(build=build, **values)
