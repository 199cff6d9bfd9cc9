"""Resource / Fmax table over build-time configurations (``fpq board sweep BOARD``).

Each configuration is a full board build (self-test SoC: queue manager, register file,
generator, UART bridge) in ``<out>/<board>_v<vec>_t<table>/``; the table is Markdown with
the date and tool versions, for docs/BENCHMARKS.md."""

import datetime

from fpq.atomic import check_output_path, write_text

from .build import build_board, tool_versions
from .platforms import BOARDS

__all__ = ["CONFIGS", "sweep", "markdown_table"]

#: (vec_bits, table_depth) per board. ULX3S: the issue's vector sizes; iCEBreaker: what the
#: UP5K's 30 x 4 kbit block RAMs hold.
CONFIGS = {
    "ulx3s": [(4096, 8192), (8192, 8192), (65536, 8192), (8192, 65536)],
    "icebreaker": [(1024, 256), (2048, 256), (4096, 256), (4096, 1024)],
}


def markdown_table(summaries):
    rows = ["| board | vec_bits | table_depth | clock MHz | Fmax MHz | goal MHz | LUT | FF | "
            "BRAM | DSP | build s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        if "not_finished" in s:
            rows.append(f"| {s['board']} | {s['build']['vec_bits']} | {s['build']['table_depth']} | "
                        f"{s['clock_mhz']:g} | not finished: {s['not_finished']} | "
                        f"{s['goal_mhz']} | - | - | - | - | - |")
            continue
        r = s["resources"]

        def cell(k):
            u, a = r[k]["used"], r[k]["available"]
            return f"{u} ({100 * u / a:.1f} %)" if a else str(u)
        rows.append(f"| {s['board']} | {s['build']['vec_bits']} | {s['build']['table_depth']} | "
                    f"{s['clock_mhz']:g} | {s['fmax_mhz']:.1f}{'' if s['timing_met'] else ' (missed)'} | "
                    f"{s['goal_mhz']} | {cell('LUT')} | {cell('FF')} | {cell('BRAM')} | "
                    f"{cell('DSP')} | {s['build_seconds']} |")
    return "\n".join(rows)


#: Seconds per configuration before its build is stopped and recorded as not finished (on
#: this 2-core machine a routed ULX3S build takes 4-7 minutes; the 65536-bit vector had
#: not finished routing after 10).
TIME_LIMIT = 1200.0


def sweep(board, out_root="build/sweep", write=None, configs=None, log=print,
          time_limit=TIME_LIMIT):
    """Build every configuration; one that does not finish within ``time_limit`` seconds is
    stopped and listed as not finished (``"not_finished"`` in its entry) instead of holding
    up the rest. ``write`` (a Markdown file for the table) is checked before the first
    build and written atomically (``fpq.atomic``)."""
    if write:
        check_output_path(write, "--write")
    summaries = []
    for vec, table in configs or CONFIGS[board]:
        try:
            summaries.append(build_board(board, out_root=out_root, vec_bits=vec,
                                         table_depth=table, tag=f"{board}_v{vec}_t{table}",
                                         log=log, time_limit=time_limit))
        except TimeoutError:
            spec = BOARDS[board]
            log(f"{board} vec_bits {vec}, table_depth {table}: not finished within "
                f"{time_limit:g} s")
            summaries.append({"board": board, "build": {"vec_bits": vec, "table_depth": table},
                              "clock_mhz": spec.clk_mhz, "goal_mhz": spec.goal_mhz,
                              "not_finished": f"stopped after {time_limit:g} s",
                              "date": datetime.datetime.now(datetime.timezone.utc)
                              .strftime("%Y-%m-%d %H:%M UTC")})
    text = markdown_table(summaries)
    text += ("\n\nTools: " + ", ".join(f"{k} {v}" for k, v in tool_versions().items())
             + f"; date {summaries[-1]['date']}.\n")
    log(text)
    if write:
        write_text(write, text)
    return summaries
