"""No measured figure typed by hand: the speed and size of the design and the run time of the
tools (clock frequencies, path delays, resource use, arrivals or events per second, speed
ratios, wall times) live in measurement records (docs/benchmarks/) and reach the documents
only through their generated sections (between ``<!-- BEGIN fpq NAME -->`` and ``<!-- END fpq
NAME -->``), so a new measurement cannot leave stale copies behind. Read: README.md, each
top-level folder's README.md and docs/*.md; docs/history/ is frozen and not read.

Design parameters and requirements pass: a 150 MHz clock, 14.88 Mpkt/s, a 4 s t_clear,
register ranges, issue and figure numbers, the papers' own figures."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *ROOT.glob("*/README.md"), *ROOT.glob("docs/*.md")])
GENERATED = re.compile(r"<!-- BEGIN (fpq [^>]*?) -->.*?<!-- END \1 -->", re.S)

_N = r"(?<![\w.])\d[\d,]*(?:\.\d+)?"            # a number, not the tail of another
_SPAN = rf"{_N}(?:\s*[-–]\s*\d[\d,]*(?:\.\d+)?)?"  # a number or a range
_TIME = r"(?:s|seconds?|min|minutes?|h|hours?)\b"
#: what a measured figure looks like, by kind
PATTERNS = {
    "clock frequency": [
        r"(?<![\w.])\d+\.\d+\s*MHz",                                  # 158.3 MHz
        r"(?<![\w.])\d+(?:\.\d+)?\s*[-–]\s*\d+(?:\.\d+)?\s*MHz",       # 151-163 MHz
        rf"(?:about|~|roughly|around|nearly|almost)\s*{_N}\s*MHz",     # about 18 MHz
        rf"(?:routes?|routed|Fmax(?: of)?)\s+(?:at\s+)?{_N}\s*MHz",    # routed at 19 MHz
    ],
    "path delay": [r"(?<![\w.])\d+\.\d+(?:\s*[-–]\s*\d+\.\d+)?\s*ns\b"],
    "resource use": [
        rf"{_N}\s*%\s+of\s+(?:the\s+|its\s+)?(?:logic\s+)?(?:cells|LCs?|LUTs?|flip-flops|"
        rf"FFs?|block RAMs?|BRAMs?|DSPs?|device|chip|logic)\b",        # 98.6 % of the cells
        rf"{_N}\s+of\s+\d+\s+(?:logic cells|cells|LUTs?|flip-flops|FFs?|block RAMs?|BRAMs?|"
        rf"DSPs?)\b",                                                  # 13 of 30 block RAMs
        r"(?<![\w.])\d{3,}\s+(?:against\s+\d+\s+)?(?:LUTs|flip-flops|FFs|logic cells|LCs)\b",
    ],
    "throughput": [
        rf"{_SPAN}\s*k?\s*(?:arrivals|events|clocks|verdicts)/s\b",     # 345k arrivals/s
        rf"{_SPAN}\s*k?\s*(?:arrivals|events|clocks) per (?:wall |CPU )?second",
    ],
    "speed ratio": [
        rf"{_SPAN}\s*(?:x|×|times)\s+(?:faster|slower|as fast|quicker|the speed|ns-3)",
    ],
    "run time": [
        r"(?<![\w.])\d+\s*min(?:utes?)?\s+\d+(?:\.\d+)?\s*s\b",          # 21 min 49 s
        rf"{_SPAN}\s*{_TIME}\s+(?:wall|of CPU|CPU|of simulation)\b",   # 55.4 s wall
        rf"\b(?:took|takes|take|ran|runs?|compiles?|compiled|builds?|built|routes?|routed|"
        rf"finish(?:es|ed)?|complete[sd]?|last(?:s|ed)?)\s+(?:in\s+)?(?:about\s+|under\s+|"
        rf"only\s+|~\s*)?{_SPAN}\s*{_TIME}",                            # took 35.5-54.7 s
    ],
}
_COMPILED = [(kind, re.compile(p)) for kind, ps in PATTERNS.items() for p in ps]
#: a table column whose cells are measured figures, by its header
MEASURED_COLUMN = re.compile(r"MHz|Fmax|arrivals/s|events/s|clocks/s|per wall second|\bwall\b|"
                             r"\bLUTs?\b|flip-flops|\bFFs?\b|\bDSPs?\b|block RAM|logic cells")

#: sections (document, heading) that hold a dated measurement typed by hand because no
#: command records it yet; each is a candidate for a record, and the reason says why it stays
ALLOWED_SECTIONS = {
    ("docs/VERIFICATION.md", "## Results"):
        "the cocotb suite's own run (tests, arrivals checked, wall time), dated; pytest "
        "writes no measurement record of it",
    ("docs/VERIFICATION.md", "## Simulator throughput"):
        "the cocotb bench's clocks/s and arrivals/s, read from that run's result pickles, "
        "dated; no command records them",
    ("docs/VERIFICATION.md", "## Test time"):
        "the wall time of `make test` and of `pytest -q cocotb-tests` from a fresh clone, "
        "dated; no command records them",
}
#: single figures that are not measurements of this design or its tools, with the reason
ALLOWED_FIGURES = {
    ("docs/RELIABILITY.md", "8.4375-528 MHz"): "the iCEBreaker PLL's output range (a limit "
                                               "the option is checked against)",
    ("docs/RELIABILITY.md", "3.125-800 MHz"): "the ULX3S PLL's output range",
    ("docs/RELIABILITY.md", "160 runs in 484 s wall"):
        "the footer `fpq attack --out` writes under the table it generates (pasted whole: "
        "the command writes a file, not a marked section)",
}


def _blank(match):
    return "\n" * match.group(0).count("\n")


def _sections(lines):
    """The Markdown heading each line is under (``""`` before the first)."""
    heading, out = "", []
    for line in lines:
        if line.startswith("#"):
            heading = line.strip()
        out.append(heading)
    return out


def _table_figures(lines):
    """``(line index, cell)`` of each cell with a digit in a measured column of a table."""
    out, i = [], 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            i += 1
            continue
        cols = [c.strip() for c in lines[i].strip().strip("|").split("|")]
        # a header naming a condition ("growth at 150 MHz") is not a measured column
        measured = [k for k, c in enumerate(cols)
                    if MEASURED_COLUMN.search(c) and not re.search(r"\d", c)]
        i += 1
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            if not set(lines[i]) <= set("|-: \n"):
                out += [(i, cells[k]) for k in measured
                        if k < len(cells) and re.search(r"\d", cells[k])]
            i += 1
    return out


def figures(text):
    """``(line number, kind, figure)`` of each measured figure in ``text`` outside its
    generated sections, and the heading it is under."""
    lines = GENERATED.sub(_blank, text).split("\n")
    heads = _sections(lines)
    spans = sorted((i, m.start(), -m.end(), kind, m.group(0)) for i, line in enumerate(lines)
                   for kind, pattern in _COMPILED for m in pattern.finditer(line))
    found, end = [], (-1, 0)
    for i, start, neg_end, kind, fig in spans:     # one hit per stretch of text
        if (i, start) >= end:
            found.append((i, kind, fig))
            end = (i, -neg_end)
    found += [(i, "table column", cell) for i, cell in _table_figures(lines)]
    return [(i + 1, kind, fig, heads[i]) for i, kind, fig in sorted(found)]


def _allowed(doc, line, figure, heading):
    return (doc, heading) in ALLOWED_SECTIONS or any(
        d == doc and text in line for d, text in ALLOWED_FIGURES)


def _report(path):
    doc = path.relative_to(ROOT).as_posix()
    lines = path.read_text().split("\n")
    return [(doc, n, kind, fig) for n, kind, fig, head in figures(path.read_text())
            if not _allowed(doc, lines[n - 1], fig, head)]


def test_no_measured_figure_outside_the_generated_sections():
    found = [hit for path in DOCUMENTS for hit in _report(path)]
    assert not found, (
        "measured figures typed by hand (they go stale at the next measurement):\n"
        + "\n".join(f"  {doc}:{n}: {kind}: {fig!r}" for doc, n, kind, fig in found)
        + "\nMeasure the figure into a record (`--record docs/benchmarks/NAME.json`), let "
          "`fpq benchmarks --write` / `--readme` render it (a goal: one entry in "
          "docs/benchmarks/goals.toml) and refer to the generated table in the prose. Text "
          "that is not a measurement (a requirement, a device limit) goes into "
          "ALLOWED_FIGURES in sw/tests/test_doc_figures.py with its reason.")


@pytest.mark.parametrize("text, kind", [
    ("the recorded build routes at 158.3 MHz with nextpnr seed 1", "clock frequency"),
    ("routed at about 18 MHz, so the PLL clock is 15 MHz", "clock frequency"),
    ("both above the queue manager's 151-163 MHz", "clock frequency"),
    ("seeds 1 and 2 route at 210 MHz", "clock frequency"),
    ("worst paths are 6.1-6.4 ns long", "path delay"),
    ("fits the UP5K (about 99 % of its logic cells)", "resource use"),
    ("met: 98.6 % of the logic cells", "resource use"),
    ("13 of 30 block RAMs, 6 of 8 DSPs", "resource use"),
    ("5461 against 5227 LUTs", "resource use"),
    ("met in every mode: 323k-345k arrivals/s", "throughput"),
    ("runs at 12.7k clocks/s instead of 50k", "throughput"),
    ("ours ran 1.0-2.9 times as fast as ns-3's event loop", "speed ratio"),
    ("the new path is 3x faster", "speed ratio"),
    ("1,331 tests in 21 min 49 s on the 2-core machine", "run time"),
    ("**55.4 s wall** on 2 local processes", "run time"),
    ("`make reliability` took 35.5-54.7 s over four runs", "run time"),
    ("the bitstream builds in under 2 minutes", "run time"),
    ("| design | Fmax (MHz) |\n|---|---|\n| top | 157 |", "table column"),
])
def test_the_guard_sees_a_planted_figure(text, kind):
    assert kind in {k for _, k, _, _ in figures(f"# Doc\n\nSome prose.\n{text}\n")}


@pytest.mark.parametrize("text", [
    "`make bitstream BOARD=ulx3s` builds for a 150 MHz clock (150 Mpkt/s)",
    "above the 14.88 Mpkt/s of 10 GbE minimum frames",
    "its registers sit at 0x800-0x8FF, a gap in `fpq.regmap`",
    "| goal | from |\n|---|---|\n| the queue manager at >= 150 MHz | issue 29 |",
    "t_clear 4 s at 150 MHz (a clear every 120,000 clocks), `avg_tau_s` 0.1 ms",
    "at 217 packets/s its effective t_clear is about 4.6 s, not 4 s (the paper's Fig. 4)",
    "`python -m fpq_hdl.synth --seeds 1,2,3,4,5 --time-limit 600`, Figs. 10-13, seeds 1-5",
    "RED 5/45/0.02, w_q 2^-9, 3 seeds of 60 s each, statistics after 10 s",
    "a departure in the arrival's clock with 80 % probability; 95 % confidence intervals",
    "they cannot wrap in 3900 years at 150 M events/s",
    "| N | queue | drop rate, ours |\n|---|---|---|\n| 10 | droptail | 2.11 % |",
])
def test_legitimate_text_passes(text):
    assert figures(f"# Doc\n\n{text}\n") == []


def test_generated_sections_are_not_read():
    inside = "<!-- BEGIN fpq benchmarks -->\nroutes at 158.3 MHz\n<!-- END fpq benchmarks -->\n"
    assert figures(inside) == []
    hits = figures(inside + "and by hand: routes at 158.3 MHz\n")
    assert [(n, kind) for n, kind, _, _ in hits] == [(4, "clock frequency")]


def test_every_allow_list_entry_is_still_needed():
    """An entry whose figure or section is gone is removed, so the lists stay short."""
    texts = {p.relative_to(ROOT).as_posix(): p.read_text() for p in DOCUMENTS}
    stale = [f"ALLOWED_FIGURES {k}" for k in ALLOWED_FIGURES if k[1] not in texts.get(k[0], "")]
    for doc, heading in ALLOWED_SECTIONS:
        hits = figures(texts.get(doc, ""))
        if not any(head == heading for _, _, _, head in hits):
            stale.append(f"ALLOWED_SECTIONS {(doc, heading)}")
    assert not stale, "allow-list entries no longer needed, remove them: " + ", ".join(stale)
