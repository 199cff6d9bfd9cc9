"""The opening of the RESULTS.md section, common to every experiment: the simulator, the bit-exact
model's averager in these runs, how noise is reported and how long each run is, and the loss
recovery check over all the runs."""

import os
from collections import defaultdict

import fpq

from .registry import SCEN, durations
from .template import prose

__all__ = ["intro"]


def intro(res, quick, seeds):
    """The opening's lines for the summaries ``res`` (``{key: summary}``) of a run with
    ``seeds`` per point (``quick``: a ``--quick`` run)."""
    d = durations()
    L = [prose("intro", avg_delay=fpq.Build().avg_delay, averagers=_averagers(),
               seeds=len(seeds), sweep_s=d["sweep"][0], loss_s=d["loss"][0],
               many_s=d["many"][0], mathis_s=d["mathis"][0], phase_s=d["phase"][0],
               base_s=d["base"][0])]
    L += _recovery(res)
    if quick:
        L += ["", prose("intro.quick")]
    L.append("")
    return L


def _averagers():
    """The bit-exact model's averager in these runs, from the scenarios' own configuration."""
    from ..scenario import load, queue_config
    lines = []
    for name, label in (("fpq-traditional", "1 Mbit/s (FPQ paper)"),
                        ("morris97-30-flows", "10 Mbit/s (1997 paper)")):
        cfg = queue_config(load(os.path.join(SCEN, name + ".toml")))
        k, period = cfg.avg_parameters()
        lines.append(prose("intro.averager", label=label, tau_s=cfg.avg_tau_s, period=period,
                           mhz=cfg.tick_hz / 1e6, period_ms=period / cfg.tick_hz * 1e3, k=k,
                           time_constant_s=cfg.avg_tau_actual_s()))
    return "; ".join(lines)


def _recovery(res):
    """The loss recovery check: spurious fast retransmissions and duplicate data over every
    dumbbell run whose summary counts them, and where the spurious ones happened."""
    tcp_runs = {k: s for k, s in res.items() if "tcp" in s and "fast_retx" in s["tcp"]
                and "spurious_fast_retx" in s["tcp"]}
    if not tcp_runs:
        return []
    where_sp = defaultdict(int)
    for k, s in tcp_runs.items():
        if s["tcp"]["spurious_fast_retx"]:
            tag = "/".join(str(x) for x in k[:2]) if k[0] in ("mathis", "base") else k[0]
            where_sp[tag] += s["tcp"]["spurious_fast_retx"]
    return ["", prose(
        "intro.recovery", runs=len(tcp_runs),
        fast_retx=sum(s["tcp"]["fast_retx"] for s in tcp_runs.values()),
        spurious=sum(s["tcp"]["spurious_fast_retx"] for s in tcp_runs.values()),
        duplicates=sum(s["tcp"]["duplicate_data"] for s in tcp_runs.values()),
        listed=bool(where_sp),
        per_run=", ".join(f"{t}: {n}" for t, n in sorted(where_sp.items())),
        all_sack=bool(where_sp) and all("sack" in t or "cubic" in t for t in where_sp))]
