"""``fpq parity``: the bit-exact queue manager against the paper's float model, on a dumbbell.

The bit-exact model decides as the hardware does (an average sampled on the clock, clears on
the clock); the float model is the paper's (RED's per-arrival average with its idle-time
rule). They should give the same network behaviour at every packet rate: this runs the
``red-dumbbell-newreno`` scenario (N NewReno bulk flows, RED 5/45/0.02, a 100-packet buffer)
with each model, for several N, link rates and disciplines, over seeds, and reports the mean
and the 95 % confidence interval (Student's t over the seeds, ``fpq_sim.stats``) of
utilisation, loss rate and average queue, and whether the two models agree within
:data:`MARGINS` (equivalence: the 90 % interval of the difference of the means, Welch, inside
the margin; two one-sided tests at 5 %, judged with 10 or more seeds). With ``--write`` the
table replaces the part of ``docs/RESULTS.md`` between ``<!-- BEGIN fpq parity -->`` and
``<!-- END fpq parity -->``.
"""

import os
import time

from fpq.marked_section import markers, write_section

from .stats import est, equivalence

__all__ = ["main", "add_arguments", "cases", "summarise", "markdown", "agree", "MARGINS"]

BEGIN, END = markers("parity")
SCENARIO = "red-dumbbell-newreno.toml"
#: (link bit/s, simulated seconds): 217 and 2170 packets/s of 576 bytes
RATES = ((1e6, 100.0), (10e6, 30.0))
FLOWS = (10, 30, 100)
DISCIPLINES = ("red", "fpq")
MODELS = ("exact", "float")
#: The equivalence margins of the two models, per quantity: ``(share of the float model's
#: mean, at least)``. Utilisation within 1 point; loss and queue within 10 % of the float
#: model's (at least 0.05 loss point, half a packet): a judgement of what changes no
#: comparison drawn from the tables, as the margin of ``fpq_sim.crosscheck`` is.
MARGINS = {"utilisation": (0.0, 0.01), "loss_rate": (0.10, 0.0005),
           "avg_queue_pkts": (0.10, 0.5)}
#: The fewest seeds a side the agreement is judged on
MIN_SEEDS = 10


#: Extra runs that locate a difference: ``(discipline, link bit/s, flows, label, --set list)``
#: for the bit-exact model. RED's per-arrival average (the float model) has a time constant
#: in arrivals: under overload, arrivals come faster than the link sends (1.3 times at N =
#: 100 on 1 Mbit/s, 21 % loss), so it averages over less time than ``avg_tau_s``; the
#: bit-exact average keeps ``avg_tau_s`` in seconds. The bit-exact model with the float
#: model's effective time constant shows whether that is the whole difference.
VARIANTS = (("red", 1e6, 100, "avg_tau_s = 1.5 s", ["queue.avg_tau_s=1.5"]),)


def cases(seeds):
    """Every run: ``(discipline, link bit/s, flows, model, seed, --set list)``."""
    out = []
    for disc, bw, n, label, extra in VARIANTS:
        duration = dict(RATES)[bw]
        for seed in range(1, seeds + 1):
            out.append(((disc, bw, n, "exact, " + label, seed),
                        [f"queue.discipline={disc}", f"bottleneck.bandwidth_bps={bw}",
                         f"run.duration_s={duration}", f"flows.0.count={n}",
                         "queue.model=exact", f"run.seed={seed}"] + extra))
    for disc in DISCIPLINES:
        for bw, duration in RATES:
            for n in FLOWS:
                for model in MODELS:
                    for seed in range(1, seeds + 1):
                        sets = [f"queue.discipline={disc}", f"bottleneck.bandwidth_bps={bw}",
                                f"run.duration_s={duration}", f"flows.0.count={n}",
                                f"queue.model={model}", f"run.seed={seed}"]
                        if disc == "fpq":
                            sets += ["queue.p_pkts=21.7" if bw == 1e6 else "queue.p_pkts=217"]
                        out.append(((disc, bw, n, model, seed), sets))
    return out


def _run(job):
    from .figures import SCEN
    from .network import Network
    from .scenario import load
    key, sets = job
    net = Network(load(os.path.join(SCEN, SCENARIO), sets))
    net.run()
    s = net.summary()
    return key, {"utilisation": s["utilisation"], "loss_rate": s["loss_rate"],
                 "avg_queue_pkts": s["avg_queue_pkts"]}


def summarise(results):
    """``{(disc, bw, n, model): {metric: fpq_sim.stats.Est}}`` from ``{key: metrics}``."""
    groups = {}
    for (disc, bw, n, model, _), metrics in results.items():
        groups.setdefault((disc, bw, n, model), []).append(metrics)
    return {k: {m: est([r[m] for r in rows]) for m in rows[0]}
            for k, rows in groups.items()}


def agree(exact, flt):
    """Whether the two models' estimates agree (:data:`MARGINS`), quantity by quantity:
    ``yes``/``no`` joined by ``/`` in the order of :data:`MARGINS`, or a dash with fewer
    than :data:`MIN_SEEDS` seeds."""
    if min(len(exact["utilisation"].values), len(flt["utilisation"].values)) < MIN_SEEDS:
        return "-"
    out = []
    for m, (share, least) in MARGINS.items():
        margin = max(share * abs(flt[m].mean), least)
        ok = equivalence(exact[m].values, flt[m].values, margin, MIN_SEEDS).equivalent
        out.append("yes" if ok else "no")
    return " / ".join(out)


def cell(e, scale=100.0, digits=1):
    """An estimate as ``mean [lo, hi]`` times ``scale``."""
    return f"{scale * e.mean:.{digits}f} [{scale * e.lo:.{digits}f}, {scale * e.hi:.{digits}f}]"


def markdown(summary, seeds, wall):

    lines = ["### The bit-exact model against the paper's float model (RED and FPQ at every "
             "packet rate)", "",
             "N NewReno bulk senders through one bottleneck (45 ms, 576-byte packets, a "
             "100-packet buffer; scenario `sim/scenarios/red-dumbbell-newreno.toml`), the "
             "queue decided by the bit-exact model (the hardware: an average of the queue "
             "sampled on the clock, with time constant `avg_tau_s` = 512 packet times) or by "
             "the paper's float model (RED's per-arrival average, `w_q = 1 - exp(-pkt_time / "
             "avg_tau_s)` = 2^-9 per packet, with ns-2's idle-time rule). RED 5/45/0.02; FPQ "
             f"with P = the delay-bandwidth product. Means over {seeds} seeds with the 95 % "
             "confidence interval in brackets (Student's t); 1 Mbit/s runs 100 s, 10 Mbit/s "
             "30 s, the first 10 s of each are warm-up. `agree`: utilisation / loss / queue "
             "equivalent (the 90 % interval of the difference of the means, Welch, within "
             "1 point of utilisation, 10 % of the float model's loss (at least 0.05 point) "
             f"and queue (at least half a packet); judged with {MIN_SEEDS} or more seeds).", "",
             "| discipline | link | N | utilisation % (bit-exact) | utilisation % (float) | "
             "loss % (bit-exact) | loss % (float) | queue pkts (bit-exact) | "
             "queue pkts (float) | agree |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for disc in DISCIPLINES:
        for bw, _ in RATES:
            for n in FLOWS:
                e, f = summary[(disc, bw, n, "exact")], summary[(disc, bw, n, "float")]
                lines.append(
                    f"| {disc} | {bw / 1e6:g} Mbit/s | {n} | {cell(e['utilisation'])} | "
                    f"{cell(f['utilisation'])} | {cell(e['loss_rate'], digits=2)} | "
                    f"{cell(f['loss_rate'], digits=2)} | "
                    f"{cell(e['avg_queue_pkts'], 1.0)} | {cell(f['avg_queue_pkts'], 1.0)} | "
                    f"{agree(e, f)} |")
    lines += ["", "Where the two differ beyond the noise the cause is the average's time "
              "constant: RED's per-arrival average (the float model) counts it in arrivals, so "
              "under overload (more arrivals per second than the link sends) it averages over "
              "less time, and under light load over more. The bit-exact model with the float "
              "model's effective time constant:", "",
              "| discipline | link | N | bit-exact model | utilisation % | loss % | "
              "queue pkts |", "|---|---|---|---|---|---|---|"]
    for disc, bw, n, label, _ in VARIANTS:
        v = summary[(disc, bw, n, "exact, " + label)]
        lines.append(f"| {disc} | {bw / 1e6:g} Mbit/s | {n} | {label} | "
                     f"{cell(v['utilisation'])} | {cell(v['loss_rate'], digits=2)} | "
                     f"{cell(v['avg_queue_pkts'], 1.0)} |")
    lines += ["", f"_Generated by `fpq parity --write` on {time.strftime('%Y-%m-%d')} "
                  f"({seeds} seeds, {wall:.0f} s)._"]
    return "\n".join(lines) + "\n"


def add_arguments(p):
    p.add_argument("--seeds", type=int, default=10, help="runs per point (default 10)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="local worker processes (default: one per core)")
    from fpq.paths import default_output
    p.add_argument("--write", metavar="RESULTS_MD", nargs="?",
                   const=default_output(os.path.join("docs", "RESULTS.md"), "RESULTS.md"),
                   help="replace the parity section of this file (created if missing; "
                        "default: the checkout's docs/RESULTS.md; installed: ./RESULTS.md)")


def main(args):
    if not 2 <= args.seeds <= 100:
        raise ValueError(f"--seeds: {args.seeds} is out of range [2, 100]")
    if not 1 <= args.jobs <= 64:
        raise ValueError(f"--jobs: {args.jobs} is out of range [1, 64]")
    if args.write:
        from fpq.atomic import check_output_path
        check_output_path(args.write, "--write")
    t0 = time.time()
    jobs = cases(args.seeds)
    if args.jobs == 1:
        results = dict(map(_run, jobs))
    else:
        from fpq.terminate import worker_pool
        with worker_pool(args.jobs) as pool:
            results = dict(pool.map(_run, jobs, chunksize=4))
    text = markdown(summarise(results), args.seeds, time.time() - t0)
    print(text)
    if args.write:
        write_section(args.write, text, BEGIN, END)
        print(f"wrote {args.write}")
    return 0
