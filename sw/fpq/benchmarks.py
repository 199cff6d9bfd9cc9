"""``fpq benchmarks``: the current-figures tables and the goals of docs/BENCHMARKS.md and the
status block of README.md, from the measurement records in docs/benchmarks/
(``fpq.records``) and the goals declared beside them (``fpq.goals``).

Each table row is one record; the row names the record, a line under each table gives the
dates, and the list under the tables links each record's file (which holds the commit it was
measured at) and gives the command that measured it, so every figure can be measured again.
``--write`` replaces the text between ``<!-- BEGIN fpq benchmarks -->`` and ``<!-- END fpq
benchmarks -->`` (the tables) and between ``<!-- BEGIN fpq goals -->`` and ``<!-- END fpq
goals -->`` (the goals, each judged from its records); ``--readme`` the text between
``<!-- BEGIN fpq status -->`` and ``<!-- END fpq status -->``. The prose around them
(method, what limits each figure, decisions) is written by hand and names no figure.
"""

import os

from .goals import read_goals, goals_markdown, status_markdown
from .marked_section import markers, write_section
from .records import read_records

__all__ = ["markdown", "main", "BEGIN", "END", "GOALS", "STATUS"]

BEGIN, END = markers("benchmarks")
#: the markers of the goals table (BENCHMARKS.md) and of the status block (README.md)
GOALS = markers("goals")
STATUS = markers("status")


def _mhz(v):
    return "not routed" if v is None else f"{v:.1f}"


def _synth_rows(recs):
    rows = []
    for name, r in recs:
        res = r["results"]
        s = res.get("fmax_mhz") or {}
        u = res.get("utilization") or {}
        seeds = ", ".join(f"{_mhz(v)}" for _, v in sorted(res["seeds"].items(),
                                                             key=lambda kv: int(kv[0])))
        fixed = ", ".join(f"{k}={v}" for k, v in sorted((res.get("fixed") or {}).items()))
        rows.append(
            f"| `{name}` | {res['component']} | {res['vec_bits']} / {res['table_depth']}"
            f"{' (fixed: ' + fixed + ')' if fixed else ''} | {res['speed']} | "
            f"{res['router']} | {seeds} | **{_mhz(s.get('min'))}** / {_mhz(s.get('median'))}"
            f" / {_mhz(s.get('max'))} | {u.get('TRELLIS_COMB', '-')} | "
            f"{u.get('TRELLIS_FF', '-')} | {u.get('DP16KD', '-')} | "
            f"{u.get('MULT18X18D', '-')} |")
    return rows


def _dated(recs):
    """The line under a table: when its records were measured (one date, or the first and
    the last). The commits are the records' to say (a document that repeated them would
    gather a hash per measurement)."""
    dates = sorted({r["date"][:10] for _, r in recs})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    return f"_Measured {when}._"



_SYNTH_HEAD = ("| record | design | vec_bits / table_depth | speed | router | Fmax by seed (MHz) | "
               "min / median / max (MHz) | LUT | FF | DP16KD | DSP |",
               "|---|---|---|---|---|---|---|---|---|---|---|")


def _of_kind(records, kind):
    return sorted((n, r) for n, r in records.items() if r["kind"] == kind)


def _table(title, head, rows, recs):
    """A table under its title, with the line of its records' dates; nothing if no record."""
    return [title, "", *head, *rows, "", _dated(recs), ""] if recs else []


def _synth_tables(records):
    synth = sorted(_of_kind(records, "synth"),
                   key=lambda nr: (nr[1]["results"]["component"] != "queue_manager",
                                   nr[1]["results"]["component"], nr[0]))
    top = [(n, r) for n, r in synth if r["results"]["component"] == "queue_manager"]
    rest = [(n, r) for n, r in synth if r["results"]["component"] != "queue_manager"]
    return (_table("### The queue manager on ECP5-85F (`python -m fpq_hdl.synth`)",
                   _SYNTH_HEAD, _synth_rows(top), top)
            + _table("### Components and one-clock loops alone (`--component NAME`)",
                     _SYNTH_HEAD, _synth_rows(rest), rest))


#: The resource kinds of a vendor-flow record (``fpq_hdl.vendor_flow``), in column order;
#: a family counts logic as LUTs or as logic cells (iCE40).
_VENDOR_RESOURCES = ("LUT", "LC", "FF", "LUTRAM", "BRAM", "DSP")


def _vendor_build(build):
    """A vendor-flow record's build, as the cell shows it: the sizes, and the options that
    differ from the default build (the iCE40's hash without its keyed stage)."""
    text = f"{build['vec_bits']} / {build['table_depth']}"
    if build.get("hash_mix") is False:
        text += ", no keyed mix"
    return text


def vendor_rows(recs):
    """The rows of ``vendor-flow`` records ``[(name, record)]``, under :data:`VENDOR_HEAD`."""
    rows = []
    for name, r in recs:
        res = r["results"]
        s = res.get("fmax_mhz") or {}
        counted = res.get("resources") or {}
        seeds = ", ".join(_mhz(v) for _, v in sorted(res.get("seeds", {}).items(),
                                                      key=lambda kv: int(kv[0])))
        resources = ", ".join(f"{counted[k]} {k}" for k in _VENDOR_RESOURCES if k in counted)
        fits = {True: "yes", False: "**no**", None: "-"}[res.get("fits")]
        rows.append(
            f"| `{name}` | {res['family']} ({res['device']}) | {res['speed']} | {res['bus']} | "
            f"{res['target']} | {_vendor_build(res['build'])} | {seeds or '-'} | "
            f"**{_mhz(s.get('min'))}** / {_mhz(s.get('median'))} / {_mhz(s.get('max'))} | "
            f"{resources or '-'} | {fits} | `{res['rtl_digest'][:12]}` |")
    return rows


#: The head of the vendor-flow table (BENCHMARKS.md and the datasheet).
VENDOR_HEAD = ("| record | family (device) | speed | bus | export target | vec_bits / table_depth "
               "| Fmax by seed (MHz) | min / median / max (MHz) | resources | fits | RTL digest |",
               "|---|---|---|---|---|---|---|---|---|---|---|")


def vendor_records(records):
    """The ``vendor-flow`` records, ECP5 first, then by family, speed and bus."""
    return sorted(_of_kind(records, "vendor-flow"),
                  key=lambda nr: (nr[1]["results"]["family"] != "ecp5",
                                  nr[1]["results"]["family"], nr[1]["results"]["speed"],
                                  nr[1]["results"]["bus"]))


def _vendor_table(records):
    recs = vendor_records(records)
    return _table("### The exported core in a plain vendor flow (`python -m "
                  "fpq_hdl.vendor_flow`: the file `fpq verilog` writes, Yosys's default "
                  "script, nextpnr)", VENDOR_HEAD, vendor_rows(recs), recs)


def _board_table(records):
    boards = _of_kind(records, "board")
    rows = []
    for n, r in boards:
        res = r["results"]
        b = res.get("build", {})
        rows.append(f"| `{n}` | {res['board']} | {b.get('vec_bits', '-')} / "
                    f"{b.get('table_depth', '-')} | {res['clock_mhz']:g} | "
                    f"{_mhz(res.get('fmax_mhz'))} | {'yes' if res.get('met') else 'no'} | "
                    f"{board_seeds(res)} | {board_logic(res)} | {board_used(res, 'FF')} | "
                    f"{board_used(res, 'BRAM')} | {board_used(res, 'DSP')} |")
    head = ("| record | board | vec_bits / table_depth | design clock (MHz) | "
            "routed Fmax (MHz) | met | nextpnr seeds tried: Fmax (MHz) | logic | FF | "
            "block RAM | DSP |", "|---|---|---|---|---|---|---|---|---|---|---|")
    return _table("### Boards (`fpq board build BOARD`, the self-test design)", head, rows,
                  boards)


def _bench_table(records):
    bench = _of_kind(records, "bench")
    rows = [f"| `{n}` | {row['model']} | {row['arrivals']} | {row['arrivals_per_s']:,} |"
            for n, r in bench for row in r["results"]["rows"]]
    return _table("### The golden model's speed (`fpq bench`, one core)",
                  ("| record | model | arrivals | arrivals/s |", "|---|---|---|---|"),
                  rows, bench)


def _sweep_line(name, sweep):
    return (f"`{name}`, Figs. 10-13 sweep: {sweep['runs']} runs (N = "
            f"{', '.join(map(str, sweep['n']))}; traditional and FPQ; {sweep['seeds']} seeds "
            f"of {sweep['duration_s']:.0f} s each): **{sweep['wall_s']:.1f} s wall** on "
            f"{sweep['jobs']} local processes ({sweep['events']:,} events, "
            f"{sweep['worker_s']:.1f} s of simulation in the workers, "
            f"{sweep['events'] / sweep['worker_s']:,.0f} events/s per process).")


def _sim_table(records):
    sim = _of_kind(records, "sim")
    rows = [f"| `{n}` | {row['run']} | {row['simulated_s']:.0f} | {row['events']:,} | "
            f"{row['wall_s']:.2f} | {row['events_per_s']:,.0f} | "
            f"{row['arrivals_per_wall_s']:,.0f} |"
            for n, r in sim for row in r["results"]["rows"]]
    head = ("| record | run | simulated s | events | wall s | events/s | bottleneck arrivals "
            "(after warm-up) per wall second |", "|---|---|---|---|---|---|---|")
    out = _table("### The TCP simulator's speed (`python -m fpq_sim.bench`, one process per "
                 "run)", head, rows, sim)
    sweeps = [_sweep_line(n, r["results"]["sweep"]) for n, r in sim]
    return out[:-2] + [*sweeps, ""] + out[-2:] if out else []


def _record_list(records):
    return ["Records (docs/benchmarks/, one per file, with the commit each was measured at) "
            "and their commands:", ""] + [
        f"- [`{n}`](benchmarks/{n}.json): `{r['command']}` ({r['machine']['machine']}, "
        f"{r['machine']['cpus']} cores, Python {r['machine']['python']})"
        + (f"; {r['note']}" if r.get("note") else "")
        for n, r in sorted(records.items())]


def markdown(records):
    """The tables, as Markdown, for ``records`` (``{name: record}``)."""
    out = (_vendor_table(records) + _synth_tables(records) + _board_table(records)
           + _bench_table(records)
           + _sim_table(records) + _record_list(records))
    return "\n".join(out) + "\n"


def _check_outputs(args):
    """Refuse an output path that cannot be written or that is one of the records read."""
    from .atomic import check_output_path, check_not_an_input
    inputs = [("--records", os.path.join(args.records, name))
              for name in (os.listdir(args.records) if os.path.isdir(args.records) else [])
              if name.endswith((".json", ".toml"))]
    for option in ("--write", "--readme"):
        path = getattr(args, option[2:], None)
        if path:
            check_output_path(path, option)
            check_not_an_input(path, option, inputs)


def main(args):
    _check_outputs(args)
    records = read_records(args.records)
    goals = read_goals(args.records)
    text = markdown(records)
    table = goals_markdown(goals, records)
    if args.write:
        write_section(args.write, text, BEGIN, END)
        if goals:
            write_section(args.write, table, *GOALS)
        print(f"wrote {args.write} ({len(records)} records, {len(goals)} goals)")
    if getattr(args, "readme", None):
        write_section(args.readme, status_markdown(goals, records), *STATUS)
        print(f"wrote {args.readme} ({len(goals)} goals)")
    if not args.write and not getattr(args, "readme", None):
        print(text + ("\n## Goals\n\n" + table if goals else ""))
    return 0


def board_used(res, key):
    """``used / available`` of resource ``key`` in a board record's results, or "-"."""
    v = res.get("resources", {}).get(key)
    return f"{v['used']} / {v['available']}" if v else "-"


def board_seeds(res):
    """The nextpnr seeds a board record's build tried, each with its Fmax ("1: 143.4, 2:
    153.7"); a record of one run gives its seed alone; "-" if it names none."""
    nextpnr = res.get("nextpnr") or {}
    tried = nextpnr.get("fmax_by_seed")
    if tried:
        return ", ".join(f"{seed}: {_mhz(fmax)}" for seed, fmax in tried.items())
    return str(nextpnr["seed"]) if "seed" in nextpnr else "-"


def board_logic(res):
    """A board record's logic: logic cells where the device counts them (iCE40), else LUTs."""
    return board_used(res, "LC" if "LC" in res.get("resources", {}) else "LUT")


def report_arguments(p, name, what):
    """The arguments of a command that writes a generated part of a document from the
    measurement records: ``--records`` (default the checkout's docs/benchmarks; an installed
    package has none to default to, so then required) and ``--write [FILE]``, which replaces
    ``what`` in FILE (default the checkout's ``docs/NAME``; installed ``./NAME``)."""
    from .paths import checkout_root, default_output
    root = checkout_root()
    p.add_argument("--records", default=os.path.join(root, "docs", "benchmarks") if root
                   else None, required=root is None,
                   help="folder of measurement records (default: the checkout's "
                        "docs/benchmarks; required when installed)")
    p.add_argument("--write", metavar=name.replace(".", "_").upper(), nargs="?",
                   const=default_output(os.path.join("docs", name), name),
                   help=f"replace {what} in this file (default: the checkout's docs/{name}; "
                        f"installed: ./{name})")


def add_arguments(p):
    report_arguments(p, "BENCHMARKS.md", "the tables and the goals")
    from .paths import default_output
    p.add_argument("--readme", metavar="README_MD", nargs="?",
                   const=default_output("README.md", "README.md"),
                   help="replace the status block (the goals, judged from the records) in "
                        "this file (default: the checkout's README.md; installed: ./README.md)")
