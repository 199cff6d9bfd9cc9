"""Functional coverage over a pytest session: the bins every bench run reports, summed, and
the list of bins the verification plan requires (a required bin with zero hits is a hole)."""

from .scoreboard import Coverage

__all__ = ["SESSION", "REQUIRED", "COMPONENT_REQUIRED", "record", "report_lines"]

#: The bins of the verification plan (issue 6, for the line-rate contract), grouped.
REQUIRED = {
    "modes": ["mode fpq", "mode red", "mode droptail"],
    "N ranges": ["N 1-9", "N 10-99", "N 100-999", "N 1000-4999", "N >=5000",
                 "N capped at n_cap"],
    "probability": ["probability 0 < p < 1", "probability saturated (p = 1)",
                    "average > 0"],
    "flow vector hazards": ["forwarding hazard: same vector bit 1 clock(s) apart",
                            "forwarding hazard: same vector bit 2 clock(s) apart",
                            "clear in the clock of an arrival (one slot)",
                            "clear and set of the same bit in one slot",
                            "clear of the bit set 1 clock(s) earlier",
                            "clear of the bit set 2 clock(s) earlier",
                            "set of the bit cleared 1 clock(s) earlier",
                            "set of the bit cleared 2 clock(s) earlier"],
    "ports": ["verdict back-pressure cycles", "arrival refused: credit",
              "arrival refused: busy", "arrival refused: hold", "valid gap cycles",
              "departure and arrival in one clock"],
    "verdicts": ["enqueue", "mark", "drop early", "drop forced",
                 "early drop of an ECN-capable packet (ECN off)",
                 "early drop of a packet not ECN-capable"],
    "control": ["registers rewritten mid-stream", "table bank swap at a commit",
                "commit with wipe", "commit with rekey", "commit with load_rng_decide",
                "commit with load_rng_clear", "arrival during a re-key hold",
                "reset mid-stream", "bus accesses", "commits over the bus",
                "commits rejected (checked range)"],
}


#: Bins the single-component benches must hit (``flow_counter/``, ``queue_averager/``,
#: ``decision/``); a group is reported (and its holes marked) once a bench of it ran.
COMPONENT_REQUIRED = {
    "flow counter": [
        *(f"flow counter: {a} of the index {b} {d} clock(s) earlier"
          f"{' (forwarding)' if (a, b) == ('set', 'set') else ''}"
          for a in ("set", "clear") for b in ("set", "cleared") for d in (1, 2)),
        "flow counter: clear and set in one slot",
        "flow counter: clear and set of the same index in one slot",
        "flow counter: clear during a wipe (draws, clears nothing)",
        "flow counter: clear in the clock of a reseed (the new seed's first number)",
        "flow counter: slots without an arrival",
        "flow counter: v_max rewritten (wipe)", "flow counter: clear generator reseeded",
        "flow counter: wipe strobe", "flow counter: reset mid-stream (slots in flight)"],
    "queue averager": [
        *(f"queue averager: w_q = 2^-{s}" for s in range(17)),
        "queue averager: average rises", "queue averager: average falls",
        "queue averager: step rounds to 0 (the fixed point)",
        "queue averager: q at its maximum",
        "queue averager: samples MIN_SAMPLE_PERIOD clocks apart",
        "queue averager: samples far apart", "queue averager: w_q rewritten between samples",
        "queue averager: reset mid-stream (samples in flight)"],
    "decision": [
        *(f"decision: {m} {a}" for m in ("fpq", "red") for a in
          ("enqueue", "mark", "drop early", "drop forced")),
        "decision: droptail enqueue", "decision: droptail drop forced",
        "decision: forced drop by the packet limit", "decision: forced drop by the byte limit",
        "decision: byte limit exactly reached",
        "decision: byte limit decided with a departure in the slot",
        "decision: byte occupancy >= 2^31",
        "decision: departure and arrival in one slot",
        "decision: departure from an empty queue (error)",
        "decision: departure of more bytes than queued (error)",
        "decision: departure empties the queue", "decision: empty slot",
        "decision: p = 1 (saturated)", "decision: p = 0", "decision: u = p (boundary)",
        "decision: u = p - 1 (boundary)", "decision: max_queue cleared with packets queued",
        "decision: max_queue clear lowers it",
        "decision: configuration rewritten mid-stream",
        "decision: reset mid-stream (slots in flight)"],
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
