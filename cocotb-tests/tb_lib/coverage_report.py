"""Functional coverage over a pytest session: the bins every bench run reports, summed, and
the list of bins the verification plan requires (a required bin with zero hits is a hole)."""

from .scoreboard import Coverage

__all__ = ["SESSION", "REQUIRED", "record", "report_lines"]

#: The bins of the verification plan (issue 6), grouped.
REQUIRED = {
    "modes": ["mode fpq", "mode red", "mode droptail"],
    "N ranges": ["N 1-9", "N 10-99", "N 100-999", "N 1000-4999", "N >=5000",
                 "N capped at n_cap"],
    "probability": ["probability 0 < p < 1", "probability saturated (p = 1)"],
    "forwarding hazard": ["forwarding hazard: same vector bit on consecutive clocks",
                          "forwarding hazard: same vector bit two clocks apart"],
    "clears": ["clear due while arrivals stream (rides along)",
               "clear backlog > 1 (arrival port stalls)",
               "vector wipe (backlog >= flush_after)"],
    "back-pressure": ["verdict back-pressure cycles", "arrival port stall cycles"],
    "verdicts": ["enqueue", "mark", "drop early", "drop forced",
                 "early drop of an ECN-capable packet (ECN off)",
                 "early drop of a packet not ECN-capable"],
    "control": ["registers rewritten mid-stream", "reset mid-stream", "bus accesses",
                "commits over the bus", "commits rejected (checked range)"],
}


class _Session(Coverage):
    def __init__(self):
        super().__init__()
        self.arrivals = 0
        self.cycles = 0
        self.runs = 0

    def summary(self):
        return {"runs": self.runs, "arrivals_checked": self.arrivals, "cycles": self.cycles,
                "bins": dict(sorted(self.bins.items())),
                "holes": [b for g in REQUIRED.values() for b in g if not self.bins.get(b)]}


SESSION = _Session()


def record(result):
    SESSION.merge(result.get("coverage", {}))
    SESSION.arrivals += result.get("arrivals", 0)
    SESSION.cycles += result.get("cycles", 0)
    SESSION.runs += 1


def report_lines(session):
    lines = [f"{session.runs} bench runs, {session.arrivals} arrivals checked bit-exact, "
             f"{session.cycles} clocks"]
    if not any(session.bins.get(b) for g in REQUIRED.values() for b in g):
        return lines + ["  (no cocotb bench ran: no functional-coverage bins)"] + \
            [f"  {b}: {n}" for b, n in sorted(session.bins.items())]
    for group, names in REQUIRED.items():
        for b in names:
            n = session.bins.get(b, 0)
            lines.append(f"  {group:18s} {b:58s} {n:>10d}{'  <-- HOLE' if not n else ''}")
    extra = sorted(set(session.bins) - {b for g in REQUIRED.values() for b in g})
    for b in extra:
        lines.append(f"  {'other':18s} {b:58s} {session.bins[b]:>10d}")
    return lines
