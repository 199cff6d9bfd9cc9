"""Simulator validation: one bulk flow under uniform loss against the Mathis et al. formula
(``validation-mathis``); a table in RESULTS.md, no plot."""

from .quantities import E, Ek, span_100s
from .registry import Experiment, register
from .template import prose

TCPS = ("tahoe", "reno", "newreno", "sack")
#: The table's order: the variants closest to the formula first
TABLE_ORDER = {"sack": 0, "newreno": 1, "reno": 2, "tahoe": 3}


def plan(p):
    for tcp in TCPS:
        for loss in ((0.01,) if p.quick else (0.005, 0.01, 0.02)):
            p.add(("mathis", tcp, loss), "mathis", "validation-mathis",
                  [f"flows.0.tcp={tcp}", f"bottleneck.loss_rate={loss}"])


def write(G, out):
    """The validation has no CSV or plot: its table is in RESULTS.md."""


def markdown(G):
    mathis = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "mathis"}
    if not mathis:
        return []
    L = [prose("mathis")]
    for (tcp, p), ss in sorted(mathis.items(),
                               key=lambda kv: (TABLE_ORDER[kv[0][0]], kv[0][1])):
        f = (1.5 / p) ** 0.5 / 0.1     # the formula at the scenario's RTT of 0.1 s
        g = Ek(ss, "goodput_pkts_per_s")
        span = span_100s(ss[0])
        L.append(f"| {tcp} | {100 * p:g} % | {g:.1f} | {f:.1f} | {g / f:.2f} | "
                 f"{E(ss, lambda s: s['tcp']['timeouts'] / span).clip(0):.1f} |")
    L.append("")
    return L


EXPERIMENT = register(Experiment(
    name="validation", durations={"mathis": (200, 20)}, quick_durations={"mathis": (60, 10)},
    plan=plan, write=write, markdown=markdown))
