"""``fpq benchmarks``: the current-figures tables of docs/BENCHMARKS.md, from the measurement
records in docs/benchmarks/ (``fpq.records``).

Each table row is one record; the row names the record, a line under each table gives the
dates, and the list under the tables links each record's file (which holds the commit it was
measured at) and gives the command that measured it, so every figure can be measured again.
``--write`` replaces the text between ``<!-- BEGIN fpq benchmarks -->`` and ``<!-- END fpq
benchmarks -->``; the prose around it (method, what limits each figure, decisions) is written
by hand.
"""

import os

from .records import read_records

__all__ = ["markdown", "main", "BEGIN", "END"]

BEGIN, END = "<!-- BEGIN fpq benchmarks -->", "<!-- END fpq benchmarks -->"


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



def markdown(records):
    """The tables, as Markdown, for ``records`` (``{name: record}``)."""
    out = []
    synth = sorted(((n, r) for n, r in records.items() if r["kind"] == "synth"),
                   key=lambda nr: (nr[1]["results"]["component"] != "queue_manager",
                                   nr[1]["results"]["component"], nr[0]))
    head = ("| record | design | vec_bits / table_depth | speed | router | Fmax by seed (MHz) | "
            "min / median / max (MHz) | LUT | FF | DP16KD | DSP |",
            "|---|---|---|---|---|---|---|---|---|---|---|")
    top = [(n, r) for n, r in synth if r["results"]["component"] == "queue_manager"]
    rest = [(n, r) for n, r in synth if r["results"]["component"] != "queue_manager"]
    if top:
        out += ["### The queue manager on ECP5-85F (`python -m fpq_hdl.synth`)", "",
                *head, *_synth_rows(top), "", _dated(top), ""]
    if rest:
        out += ["### Components and one-clock loops alone (`--component NAME`)", "",
                *head, *_synth_rows(rest), "", _dated(rest), ""]
    boards = sorted((n, r) for n, r in records.items() if r["kind"] == "board")
    if boards:
        out += ["### Boards (`fpq board build BOARD`, the self-test design)", "",
                "| record | board | vec_bits / table_depth | design clock (MHz) | "
                "routed Fmax (MHz) | met | nextpnr seeds tried: Fmax (MHz) | logic | FF | "
                "block RAM | DSP |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for n, r in boards:
            res = r["results"]
            b = res.get("build", {})
            logic = board_logic(res)
            out.append(f"| `{n}` | {res['board']} | {b.get('vec_bits', '-')} / "
                       f"{b.get('table_depth', '-')} | {res['clock_mhz']:g} | "
                       f"{_mhz(res.get('fmax_mhz'))} | {'yes' if res.get('met') else 'no'} | "
                       f"{board_seeds(res)} | "
                       f"{logic} | {board_used(res, 'FF')} | {board_used(res, 'BRAM')} | "
                       f"{board_used(res, 'DSP')} |")
        out += ["", _dated(boards), ""]
    bench = sorted((n, r) for n, r in records.items() if r["kind"] == "bench")
    if bench:
        out += ["### The golden model's speed (`fpq bench`, one core)", "",
                "| record | model | arrivals | arrivals/s |", "|---|---|---|---|"]
        for n, r in bench:
            for row in r["results"]["rows"]:
                out.append(f"| `{n}` | {row['model']} | {row['arrivals']} | "
                           f"{row['arrivals_per_s']:,} |")
        out += ["", _dated(bench), ""]
    out += ["Records (docs/benchmarks/, one per file, with the commit each was measured at) "
            "and their commands:", ""]
    for n, r in sorted(records.items()):
        out.append(f"- [`{n}`](benchmarks/{n}.json): `{r['command']}` "
                   f"({r['machine']['machine']}, {r['machine']['cpus']} cores, Python "
                   f"{r['machine']['python']})")
    return "\n".join(out) + "\n"


def main(args):
    if args.write:
        from .atomic import check_output_path, check_not_an_input
        check_output_path(args.write, "--write")
        if os.path.isdir(args.records):
            check_not_an_input(args.write, "--write", [
                ("--records", os.path.join(args.records, name))
                for name in os.listdir(args.records) if name.endswith(".json")])
    records = read_records(args.records)
    text = markdown(records)
    if args.write:
        from .accuracy import write_results
        write_results(text, args.write, BEGIN, END)
        print(f"wrote {args.write} ({len(records)} records)")
    else:
        print(text)
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
    report_arguments(p, "BENCHMARKS.md", "the tables")
