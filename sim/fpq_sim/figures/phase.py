"""Phase effects: two bulk flows through drop-tail with unequal RTTs
(``phase-droptail-two-flows``), deterministic and with the two remedies (ns-2's random send
delay, the 1997 paper's telnet sessions)."""

import numpy as np

from .outputs import ci_cols
from .plots import label, errbar, FIGSIZE, MARKERS
from .quantities import E
from .registry import Experiment, register, telnet_group
from .template import prose

PHASE_STEPS = 11                      # flow 1's extra access delay: 0..5 packet times
PHASE_VARIANTS = ("deterministic", "overhead", "telnet")
LABEL = {"deterministic": "deterministic",
         "overhead": "random send delay (ns-2 overhead_, up to 1 packet time)",
         "telnet": "5 telnet sessions"}
PACKET_TIME_S = 576 * 8 / 1e6         # of the 1 Mbit/s bottleneck


def _access_delay(k):
    """Flow 1's access delay (s) at step ``k``: 5 ms plus ``k`` half packet times."""
    return 0.005 + k * PACKET_TIME_S / 2


def plan(p):
    for k in range(0, PHASE_STEPS, 5 if p.quick else 1):
        for variant in PHASE_VARIANTS:
            sets = [f"flows.1.access_delay_s={_access_delay(k)}"]
            group = None
            if variant == "overhead":
                sets += ["flows.0.send_overhead_pkt_times=1.0",
                         "flows.1.send_overhead_pkt_times=1.0"]
            elif variant == "telnet":
                group = telnet_group(tick_s=0.1)
            p.add(("phase", variant, k), "phase", "phase-droptail-two-flows", sets,
                  extra_group=group)


def share(s):
    """Flow 1's share of the two bulk flows' goodput in one run."""
    f = s["flows"]
    return f[1] / (f[0] + f[1]) if f[0] + f[1] else 0.5


def _phase(G):
    """``{(variant, step): runs}`` and the steps run."""
    phase = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "phase"}
    return phase, sorted({k for _, k in phase})


def _shares(phase, ks):
    """``{variant: [estimate of flow 1's share at each step]}`` of the variants run."""
    return {v: [E(phase[(v, k)], share) for k in ks] for v in PHASE_VARIANTS
            if (v, ks[0]) in phase}


def write(G, out):
    phase, ks = _phase(G)
    if not phase:
        return
    fig, ax = out.subplots(figsize=FIGSIZE)
    rows = []
    for v, shares in _shares(phase, ks).items():
        errbar(ax, [k / 2 for k in ks], shares, MARKERS[PHASE_VARIANTS.index(v)], LABEL[v])
        rows += [[v, k / 2, _access_delay(k) * 1e3] + ci_cols(e) for k, e in zip(ks, shares)]
    ax.axhline(0.5, color="gray", ls=":")
    ax.set_ylim(0, 1)
    label(ax, "flow 1's extra access delay (bottleneck packet times)",
          "flow 1's share of the goodput", "Phase effects: two Tahoe flows, drop-tail, 15 buffers")
    out.save(fig, "phase_share_vs_delay")
    out.csv("phase_share_vs_delay.csv", ["variant", "extra_delay_pkt_times", "access_delay_ms",
                                         "share_mean", "share_lo", "share_hi"], rows)


def markdown(G):
    phase, ks = _phase(G)
    if not phase:
        return []
    shares = _shares(phase, ks)
    L = [prose("phase", variants=" | ".join(LABEL[v] for v in shares),
               columns="---|" * len(shares))]
    for i, k in enumerate(ks):
        L.append(f"| {k / 2:g} | " + " | ".join(f"{shares[v][i]:.2f}" for v in shares) + " |")
    L.append("")
    return L + _discussion(shares)


def _discussion(shares):
    def rough(v):
        m = [e.mean for e in shares[v]]
        return float(np.mean(np.abs(np.diff(m)))) if len(m) > 1 else 0.0

    def width(v):
        return float(np.mean([e.hi - e.lo for e in shares[v]]))

    both = "deterministic" in shares and "overhead" in shares
    telnet = "telnet" in shares
    return [prose("phase.discussion",
                  roughness="; ".join(prose("phase.roughness", variant=v, step=rough(v),
                                            width=width(v)) for v in shares),
                  overhead=both, rougher=both and rough("deterministic") > rough("overhead"),
                  telnet=telnet,
                  smooth=telnet and rough("telnet") < 0.75 * rough("deterministic")), ""]


EXPERIMENT = register(Experiment(
    name="phase", durations={"phase": (100, 20)}, quick_durations={"phase": (30, 10)},
    plan=plan, write=write, markdown=markdown))
