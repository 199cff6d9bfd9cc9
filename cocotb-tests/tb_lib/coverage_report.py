"""Functional coverage over a pytest session: the bins every bench run reports, summed, and
the list of bins the verification plan requires (a required bin with zero hits is a hole)."""

from .scoreboard import Coverage

__all__ = ["SESSION", "REQUIRED", "COMPONENT_REQUIRED", "record", "report_lines"]

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


#: Bins the single-component benches must hit (``flow_counter/``, ``queue_averager/``,
#: ``decision/``); a group is reported (and its holes marked) once a bench of it ran.
COMPONENT_REQUIRED = {
    "flow counter": [
        "flow counter: set of the index set 1 clock(s) earlier (forwarding)",
        "flow counter: set of the index set 2 clock(s) earlier (forwarding)",
        "flow counter: clear of the index set 1 clock(s) earlier",
        "flow counter: set of the index cleared 1 clock(s) earlier",
        "flow counter: clear and set of the same index in one slot",
        "flow counter: one clear owed: rides along with the arrival",
        "flow counter: clear backlog > 1 (port stalls)",
        "flow counter: flush: vector wiped (backlog >= flush_after)",
        "flow counter: can_accept low (back-pressure) cycles",
        "flow counter: arrival valid gap cycles",
        "flow counter: v_max rewritten (wipe)", "flow counter: clear period rewritten",
        "flow counter: clear mode rewritten (carry / literal)",
        "flow counter: clear generator reseeded", "flow counter: wipe strobe",
        "flow counter: reset mid-stream (arrivals in flight)"],
    "queue averager": [
        *(f"queue averager: w_q = 2^-{s}" for s in range(17)),
        "queue averager: EWMA with A mod 2^s != 0 (rounding term)",
        "queue averager: q at its maximum",
        "queue averager: idle decay, cells < 255", "queue averager: idle decay, cells clamped at 255",
        "queue averager: idle time negative (cells 0)",
        "queue averager: decay shift >= 36 (average to 0)",
        "queue averager: valid gap cycles", "queue averager: table writes while streaming",
        "queue averager: bank swap", "queue averager: w_q / cell size rewritten"],
    "decision": [
        *(f"decision: {m} {a}" for m in ("fpq", "red") for a in
          ("enqueue", "mark", "drop early", "drop forced")),
        "decision: droptail enqueue", "decision: droptail drop forced",
        "decision: forced drop by the packet limit", "decision: forced drop by the byte limit",
        "decision: byte limit decided with a departure in the slot",
        "decision: byte occupancy >= 2^31",
        "decision: departure and arrival in one slot",
        "decision: departure from an empty queue (error)",
        "decision: departure of more bytes than queued (error)",
        "decision: queue emptied (idle starts)", "decision: arrival after idle",
        "decision: p = 1 (saturated)", "decision: p = 0", "decision: u = p (boundary)",
        "decision: u = p - 1 (boundary)", "decision: valid gap cycles",
        "decision: configuration rewritten mid-stream"],
}


class _Session(Coverage):
    def __init__(self):
        super().__init__()
        self.inputs = 0              # inputs of single components checked (component benches)
        self.arrivals = 0
        self.cycles = 0
        self.runs = 0

    def summary(self):
        return {"runs": self.runs, "arrivals_checked": self.arrivals,
                "component_inputs_checked": self.inputs, "cycles": self.cycles,
                "bins": dict(sorted(self.bins.items())),
                "holes": [b for g in _groups(self).values() for b in g
                          if not self.bins.get(b)]}


SESSION = _Session()


def record(result):
    SESSION.merge(result.get("coverage", {}))
    SESSION.arrivals += result.get("arrivals", 0)
    SESSION.inputs += result.get("inputs", 0)
    SESSION.cycles += result.get("cycles", 0)
    SESSION.runs += 1


def _ran_groups(session):
    """The component groups of which at least one bin was hit (their bench ran)."""
    return [g for g, names in COMPONENT_REQUIRED.items()
            if any(session.bins.get(b) for b in names)]


def _groups(session):
    """The groups to report: the top's plan once a top bench ran, each component group once
    its bench ran."""
    groups = dict(REQUIRED) if any(session.bins.get(b) for g in REQUIRED.values() for b in g) \
        else {}
    groups.update({g: COMPONENT_REQUIRED[g] for g in _ran_groups(session)})
    return groups


def report_lines(session):
    lines = [f"{session.runs} bench runs, {session.arrivals} arrivals checked bit-exact, "
             f"{session.inputs} component inputs checked, {session.cycles} clocks"]
    groups = _groups(session)
    if not groups:
        return lines + ["  (no cocotb bench ran: no functional-coverage bins)"] + \
            [f"  {b}: {n}" for b, n in sorted(session.bins.items())]
    for group, names in groups.items():
        for b in names:
            n = session.bins.get(b, 0)
            lines.append(f"  {group:18s} {b:58s} {n:>10d}{'  <-- HOLE' if not n else ''}")
    extra = sorted(set(session.bins) - {b for g in groups.values() for b in g})
    for b in extra:
        lines.append(f"  {'other':18s} {b:58s} {session.bins[b]:>10d}")
    return lines
