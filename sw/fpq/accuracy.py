"""Accuracy of the golden models: the flow count against the truth, and fixed against float.

``fpq accuracy`` prints both as Markdown and, with ``--write``, replaces the part of
``docs/RESULTS.md`` between ``<!-- BEGIN fpq accuracy -->`` and ``<!-- END fpq accuracy -->``.

Flow count. ``F`` flows each send Poisson traffic at ``rate`` packets/s for ``warmup +
measure`` seconds; N is averaged over the arrivals of the measuring window. The expected value
follows from the counter itself: a bit that ``k`` flows hash to is set at rate ``k * rate`` and
cleared at rate ``1 / t_clear`` (clears pick bits uniformly, ``v_max / t_clear`` per second), so
it is set with probability ``k rate / (k rate + 1/t_clear)``; with ``k ~ Binomial(F, 1/v_max)``
that gives ``E[N]``. The gap between ``F`` and ``E[N]`` is the paper's counter (collisions and
clears of live flows), not a modelling error; the linear-counting correction removes the
collision part.
"""

from collections import Counter
import random
import time

from .config import Config, Build
from .drop_probability import Mode, probability, lt_qt_float
from .float_model import FloatQueueManager
from .formats import PROB_ONE
from .marked_section import markers
from .queue_manager import QueueManager
from .synthetic import flow_keys, poisson_arrivals

__all__ = ["expected_n", "flow_count_row", "probability_error", "markdown", "BEGIN", "END"]

BEGIN, END = markers("accuracy")


def expected_n(flows, v_max, rate, t_clear):
    """``E[N]`` of the bit vector in steady state (see the module docstring)."""
    mu = 1.0 / t_clear
    p = 1.0 / v_max
    total, pk = 0.0, (1 - p) ** flows   # P[k = 0]
    for k in range(0, flows + 1):
        if k:
            pk *= (flows - k + 1) / k * p / (1 - p)
            total += pk * (k * rate / (k * rate + mu))
        if k > 10 and pk < 1e-15:
            break
    return v_max * total


def expected_n_given_buckets(bucket_sizes, rate, t_clear):
    """``E[N]`` for the actual hash outcome: ``bucket_sizes`` lists, per distinct vector bit,
    how many of the flows hash to it."""
    mu = 1.0 / t_clear
    return sum(k * rate / (k * rate + mu) for k in bucket_sizes)


def flow_count_row(flows, v_max=5000, t_clear=4.0, rate=10.0, warmup=20.0, measure=20.0,
                   seed=1, with_float=True):
    """Mean N (raw and corrected) of the bit-exact and float models for ``flows`` flows."""
    build = Build(vec_bits=max(8192, 1 << (v_max - 1).bit_length()))
    cfg = Config(build=build, mode="droptail", v_max=v_max, t_clear_s=t_clear,
                 n_cap=build.table_depth - 1, seed_clear=seed)
    keys = flow_keys(flows, seed)
    arrivals = poisson_arrivals(keys, rate, 0.0, warmup + measure, cfg.tick_hz,
                                random.Random(seed))
    start = int(warmup * cfg.tick_hz)
    exact = QueueManager(cfg)
    buckets = Counter((exact.hash(k) * v_max) >> 32 for k in keys)
    row = {"flows": flows, "arrivals": len(arrivals),
           "expected": expected_n(flows, v_max, rate, t_clear),
           "expected_here": expected_n_given_buckets(buckets.values(), rate, t_clear),
           "distinct": len(buckets)}
    models = [("exact", exact)]
    if with_float:
        models.append(("float", FloatQueueManager(cfg)))
    from .queue_manager import Arrival
    from .accept_clock import AcceptClock
    for name, model in models:
        total = count = 0
        clock = AcceptClock()
        for want, key in arrivals:
            ts = clock.arrival(want)
            model.arrive(Arrival(ts, key, 576, False))
            if ts >= start:
                total += model.n_raw
                count += 1
        mean = total / max(count, 1)
        row[name] = mean
        row[name + "_corrected"] = cfg.replace(lc_correction=True).n_effective(mean)
    return row


def probability_error(samples=20000, seed=1):
    """Relative error of the fixed-point probability against the float formula, over random
    configurations and states with ``p >= 1e-4``: ``{mode: (max, mean, count)}``."""
    rnd = random.Random(seed)
    out = {}
    for mode in ("fpq", "red"):
        errs = []
        while len(errs) < samples:
            if mode == "fpq":
                cfg = Config(p_pkts=rnd.uniform(1, 2000), v_max=rnd.randrange(100, 8193),
                             lc_correction=rnd.random() < 0.5, lt_plus_one=rnd.random() < 0.5)
                table = cfg.rate_table()
                for _ in range(50):
                    n = rnd.randrange(0, cfg.v_max)
                    avg = int(rnd.uniform(0, 6 * max(n, 1) * 2) * 65536)
                    q_t, l_t = lt_qt_float(cfg.n_effective(n), cfg.p_pkts, cfg.lt_plus_one)
                    exact = min(1.0, l_t * avg / 65536 / q_t)
                    if exact >= 1e-4:
                        fixed = probability(Mode.fpq, avg, table[n], None) / PROB_ONE
                        errs.append(abs(fixed - exact) / exact)
            else:
                lo = rnd.uniform(0, 500)
                cfg = Config(mode="red", red_min_th=lo, red_max_th=lo + rnd.uniform(1, 500),
                             red_max_p=rnd.uniform(0.001, 1), red_gentle=rnd.random() < 0.5)
                regs = cfg.registers()
                lo_r, hi_r = regs["red_min_th"], regs["red_max_th"]
                max_p = regs["red_max_p"] / PROB_ONE
                for _ in range(50):
                    avg = rnd.randrange(lo_r, 2 * hi_r + 1)
                    a, lo_f, hi_f = avg / 65536, lo_r / 65536, hi_r / 65536
                    if a < hi_f:
                        exact = max_p * (a - lo_f) / (hi_f - lo_f)
                    elif cfg.red_gentle and a < 2 * hi_f:
                        exact = max_p + (1 - max_p) * (a - hi_f) / hi_f
                    else:
                        exact = 1.0
                    if exact >= 1e-4:
                        fixed = probability(Mode.red, avg, 0, regs) / PROB_ONE
                        errs.append(abs(fixed - exact) / exact)
        out[mode] = (max(errs), sum(errs) / len(errs), len(errs))
    return out


def markdown(flow_counts=(10, 100, 1000, 5000), seed=1, progress=print):
    t0 = time.time()
    seeds = (seed, seed + 1, seed + 2)
    lines = ["### Flow-count accuracy (v_max 5000, t_clear 4 s)", "",
             "Each of F flows sends Poisson traffic at 10 packets/s; N is averaged over the "
             "arrivals of seconds 20-40 (5 t_clear of warm-up). Three runs per row, each with "
             "its own flows and hash key (seeds "
             f"{', '.join(map(str, seeds))}): means, with the range of the three in brackets. "
             "E[N] is what the counter itself should read (collisions, and clears of live "
             "flows' bits; see `sw/fpq/accuracy.py`), over all hash keys, or for the buckets "
             "these flows actually hash to. `corrected` is the linear-counting estimate "
             "-v_max ln(1 - N/v_max) that the `lc_correction` option folds into the r(N) "
             "table. The float model (first seed only) follows the paper's Fig. 4 in "
             "continuous time.", "",
             "| true flows F | arrivals per run | distinct hash buckets | E[N] over hash keys | "
             "E[N] for these buckets | bit-exact N | error vs F | bit-exact corrected | "
             "error vs F | float-model N | float corrected |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def stat(rows, key, f=None):
        vals = [r[key] if f is None else 100 * (r[key] / f - 1) for r in rows]
        mean = sum(vals) / len(vals)
        if f is None:
            return f"{mean:.1f}"
        return f"{mean:+.1f} % [{min(vals):+.1f}, {max(vals):+.1f}]"

    for f in flow_counts:
        progress(f"  flow count: {f} flows ...")
        rows = [flow_count_row(f, seed=s, with_float=(s == seed)) for s in seeds]
        lines.append(
            f"| {f} | {rows[0]['arrivals']} | {stat(rows, 'distinct')} | "
            f"{rows[0]['expected']:.1f} | {stat(rows, 'expected_here')} | "
            f"{stat(rows, 'exact')} | {stat(rows, 'exact', f)} | "
            f"{stat(rows, 'exact_corrected')} | {stat(rows, 'exact_corrected', f)} | "
            f"{rows[0]['float']:.1f} | {rows[0]['float_corrected']:.1f} |")
    progress("  fixed vs float probability ...")
    err = probability_error(seed=seed)
    lines += ["", "### Fixed-point against float probability", "",
              "Relative error |p_fixed - p_float| / p_float of the hardware's probability "
              "(`fpq.drop_probability`, RATE table words and QAVG average) against the paper's "
              "float formulas, over random configurations (P 1-2000 packets, v_max 100-8192, "
              "correction and `+1` on/off; RED thresholds 0-1000 packets, max_p 0.001-1, "
              "gentle on/off) and states with p >= 1e-4:", "",
              "| mode | samples | max relative error | mean relative error |", "|---|---|---|---|"]
    for mode, (mx, mean, count) in err.items():
        lines.append(f"| {mode} | {count} | {mx:.2e} | {mean:.2e} |")
    lines += ["", f"_Generated by `fpq accuracy --write` on {time.strftime('%Y-%m-%d')} "
              f"(seed {seed}, {time.time() - t0:.0f} s)._"]
    return "\n".join(lines) + "\n"
