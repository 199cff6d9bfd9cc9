"""Goals as data: each measurable goal of the project, judged from the measurement records.

The goals are declared in ``goals.toml`` beside the records (docs/benchmarks/): what is
measured, the issue that set it, the records it is judged from, a metric (how the figure is
computed from those records, ``METRICS``) and a threshold. ``fpq benchmarks`` renders them
into the Goals table of docs/BENCHMARKS.md and the status block of README.md, so whether a
goal is met is computed from the records, never typed; adding a goal is one entry in the
file (and, for a new kind of figure, one metric here).
"""

import os
import statistics
import tomllib
from dataclasses import dataclass

__all__ = ["Goal", "METRICS", "GOALS_FILE", "read_goals", "judge", "goals_markdown",
           "status_markdown"]

#: the goals' file, in the records' folder
GOALS_FILE = "goals.toml"


@dataclass(frozen=True)
class Goal:
    """One goal: ``text`` (what is measured), ``source`` (the issue), ``records`` (names of
    records), ``metric`` (a key of ``METRICS``), ``at_least`` / ``at_most`` (the threshold
    in the metric's unit; neither: the figure is reported), ``seeds`` (the nextpnr seeds of
    an Fmax metric), ``rows`` (the model prefix of a bench metric)."""
    text: str
    source: str
    records: tuple
    metric: str
    at_least: float = None
    at_most: float = None
    seeds: tuple = ()
    rows: str = ""


@dataclass(frozen=True)
class Figure:
    """A metric's result: ``value`` (None if the records do not give one, e.g. a seed that
    did not route) and ``detail``, the figures behind it as a reader wants them."""
    value: float
    detail: str


@dataclass(frozen=True)
class Metric:
    """How a goal's figure is computed: ``label`` (what the threshold bounds, formatted with
    the goal's fields), ``unit``, and ``compute(goal, [(name, record), ...]) -> Figure``."""
    label: str
    unit: str
    compute: object


def _mhz(v):
    return f"{v:.1f}"


def _seed_span(seeds):
    """``1-5`` for consecutive seeds, else ``1, 3, 4``."""
    seeds = sorted(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _seed_fmax(goal, name, record):
    """``{seed: Fmax or None}`` of ``goal.seeds`` in a synthesis record; a seed the record
    lacks raises ``LookupError`` naming it."""
    by_seed = record["results"]["seeds"]
    missing = [s for s in goal.seeds if str(s) not in by_seed]
    if missing:
        raise LookupError(f"seed {_seed_span(missing)} not in `{name}`")
    return {s: by_seed[str(s)] for s in goal.seeds}


def _unrouted(name, record, fmax, named=True):
    """The seeds of ``fmax`` that did not route, with the record's time limit."""
    limit = record["results"].get("time_limit_s")
    within = f" within {limit:g} s" if limit else ""
    of = f" of `{name}`" if named else ""
    return [f"seed {s}{of} not routed{within}" for s, v in fmax.items() if v is None]


def _fmax_spread(name, record, fmax):
    """One record's Fmax over the goal's seeds: minimum / median / maximum of the routed
    ones, and each seed that did not route."""
    routed = sorted(v for v in fmax.values() if v is not None)
    if not routed:
        return f"no seed of `{name}` routed"
    text = (f"{_mhz(routed[0])} / {_mhz(statistics.median(routed))} / {_mhz(routed[-1])} "
            f"MHz minimum / median / maximum (`{name}`)")
    unrouted = _unrouted(name, record, fmax, named=False)
    return text + ("; " + ", ".join(unrouted) if unrouted else ", every seed routed")


def _fmax(goal, recs, combine, what):
    """Fmax over ``goal.seeds`` in each record, combined per record by ``combine`` (a seed
    that did not route counts as 0 MHz; ``what`` names it) and over the records by their
    minimum."""
    try:
        per = [(name, rec, _seed_fmax(goal, name, rec)) for name, rec in recs]
    except LookupError as exc:
        return Figure(None, f"not measured: {exc}")
    values = [combine([v or 0.0 for v in fmax.values()]) for _, _, fmax in per]
    if len(per) == 1:
        detail = _fmax_spread(*per[0])
    else:
        detail = f"{what} per record: " + ", ".join(
            f"`{name}` {_mhz(value)}" for (name, _, _), value in zip(per, values)) + " MHz"
        unrouted = [u for p in per for u in _unrouted(*p)]
        detail += "; " + ", ".join(unrouted) if unrouted else ", every seed routed"
    value = min(values)
    return Figure(value if value > 0 else None, detail)


def _fmax_min(goal, recs):
    return _fmax(goal, recs, min, "minimum")


def _fmax_median(goal, recs):
    return _fmax(goal, recs, statistics.median, "median")


def _fullest(resources):
    """The resource a board build uses the largest share of, as ``LUT 11.8 % (9904 /
    83640)``."""
    key, r = max(resources.items(), key=lambda kv: kv[1]["used"] / kv[1]["available"])
    return f"{key} {100 * r['used'] / r['available']:.1f} % ({r['used']} / {r['available']})"


def _board_clock(goal, recs):
    (name, record), = recs
    res = record["results"]
    clock, fmax = res["clock_mhz"], res.get("fmax_mhz")
    nextpnr = res.get("nextpnr") or {}
    seed = f", nextpnr seed {nextpnr['seed']}" if "seed" in nextpnr else ""
    routed = "not routed" if fmax is None else f"routed at {_mhz(fmax)} MHz"
    detail = f"{routed} for a {clock:g} MHz clock{seed} (`{name}`)"
    if res.get("resources"):
        detail += f"; fullest resource: {_fullest(res['resources'])}"
    return Figure(None if fmax is None else min(clock, fmax), detail)


def _arrivals_min(goal, recs):
    (name, record), = recs
    rates = [row["arrivals_per_s"] for row in record["results"]["rows"]
             if row["model"].startswith(goal.rows)]
    if not rates:
        return Figure(None, f"not measured: no `{goal.rows}` row in `{name}`")
    return Figure(min(rates), f"{min(rates) / 1000:.0f}k-{max(rates) / 1000:.0f}k arrivals/s "
                              f"over {len(rates)} modes (`{name}`)")


def _sweep_wall(goal, recs):
    (name, record), = recs
    sweep = record["results"]["sweep"]
    return Figure(sweep["wall_s"], f"{sweep['wall_s']:.1f} s wall for {sweep['runs']} runs on "
                                   f"{sweep['jobs']} processes (`{name}`)")


#: the metrics a goal may name
METRICS = {
    "fmax_min": Metric("minimum Fmax over nextpnr seeds {seeds}", "MHz", _fmax_min),
    "fmax_median": Metric("median Fmax over nextpnr seeds {seeds}", "MHz", _fmax_median),
    "board_clock": Metric("the clock it closes timing at", "MHz", _board_clock),
    "arrivals_min": Metric("arrivals/s of every `{rows}` model", "arrivals/s", _arrivals_min),
    "sweep_wall": Metric("wall time", "s", _sweep_wall),
}

_FIELDS = {"text": str, "source": str, "records": list, "metric": str, "at_least": (int, float),
           "at_most": (int, float), "seeds": list, "rows": str}
_REQUIRED = ("text", "source", "records", "metric")


def _goal(i, entry):
    """A ``Goal`` from entry ``i`` of the file; a bad entry raises ``ValueError`` naming it
    and the field."""
    where = f"goal {i + 1} ({entry.get('text', 'no text')!r})"
    for key, value in entry.items():
        if key not in _FIELDS:
            raise ValueError(f"{where}: unknown field {key!r}; allowed: {', '.join(_FIELDS)}")
        if not isinstance(value, _FIELDS[key]) or isinstance(value, bool):
            raise ValueError(f"{where}: {key} = {value!r} is not a {_FIELDS[key]}")
    missing = [k for k in _REQUIRED if k not in entry]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    if entry["metric"] not in METRICS:
        raise ValueError(f"{where}: metric {entry['metric']!r} is not one of "
                         f"{', '.join(METRICS)}")
    if "at_least" in entry and "at_most" in entry:
        raise ValueError(f"{where}: at_least and at_most both given; one threshold")
    if not entry["records"]:
        raise ValueError(f"{where}: records is empty")
    if entry["metric"].startswith("fmax") and not entry.get("seeds"):
        raise ValueError(f"{where}: metric {entry['metric']} needs seeds")
    return Goal(**{**entry, "records": tuple(entry["records"]),
                   "seeds": tuple(entry.get("seeds", ()))})


def read_goals(folder):
    """The goals declared in ``folder``/goals.toml, in file order; ``[]`` if there is no
    such file."""
    path = os.path.join(folder, GOALS_FILE)
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: not TOML ({exc})") from None
    try:
        return [_goal(i, entry) for i, entry in enumerate(data.get("goal", []))]
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _number(v):
    return f"{v:,g}" if v < 1e6 else f"{v:,.0f}"


def goal_text(goal):
    """The goal as the tables state it: what, the metric and the threshold."""
    m = METRICS[goal.metric]
    label = m.label.format(seeds=_seed_span(goal.seeds), rows=goal.rows)
    for op, bound in ((">=", goal.at_least), ("<=", goal.at_most)):
        if bound is not None:
            return f"{goal.text}: {label} {op} {_number(bound)} {m.unit}"
    return f"{goal.text}: {label}"


def judge(goal, records):
    """``(status, detail)`` of ``goal`` against ``records`` (``{name: record}``): status is
    "met", "not met", "reported" (no threshold) or "not measured" (a record is missing)."""
    missing = [n for n in goal.records if n not in records]
    if missing:
        return "not measured", "no record " + ", ".join(f"`{n}`" for n in missing)
    fig = METRICS[goal.metric].compute(goal, [(n, records[n]) for n in goal.records])
    if goal.at_least is None and goal.at_most is None:
        return "reported", fig.detail
    if fig.value is None:
        return "not met", fig.detail
    met = fig.value >= goal.at_least if goal.at_least is not None else \
        fig.value <= goal.at_most
    return ("met" if met else "not met"), fig.detail


def _status_cell(goal, records):
    status, detail = judge(goal, records)
    shown = f"**{status}**" if status in ("met", "not met") else status
    return f"{shown}: {detail}"


def goals_markdown(goals, records):
    """The Goals table of docs/BENCHMARKS.md: goal, source, status with its figures."""
    out = ["| goal | from | status |", "|---|---|---|"]
    out += [f"| {goal_text(g)} | {g.source} | {_status_cell(g, records)} |" for g in goals]
    return "\n".join(out) + "\n"


def status_markdown(goals, records):
    """README.md's status block: each goal and its status, the figures' home named."""
    out = ["| goal | status |", "|---|---|"]
    out += [f"| {goal_text(g)} | {_status_cell(g, records)} |" for g in goals]
    out += ["", "Generated by `fpq benchmarks --readme` from the records in docs/benchmarks/; "
                "the tables, the commands that measure each figure and the method are in "
                "[docs/BENCHMARKS.md](docs/BENCHMARKS.md)."]
    return "\n".join(out) + "\n"
