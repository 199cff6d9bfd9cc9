"""``fpq sweep``: a user's own dumbbell scenario over parameters and seeds, as one CSV table
and one plot.

``fpq sweep SCENARIO --vary KEY=V1,V2,... [--vary ...] --seeds 1-10 --out DIR`` runs the
scenario at every combination of the varied values (the product of the ``--vary`` lists, the
first key changing slowest), once per seed, on local worker processes (``--jobs``) or a Dask
cluster (``--dask``). Every combination is checked with every seed by the scenario's own
validation (``fpq_sim.scenario.validate``) before anything runs; a bad key or value is an
error naming it. The runs go through ``fpq figures``' runner (``figures.runner``: the same
jobs, raw summaries and ``--resume``), their estimates through ``fpq_sim.stats`` and their
provenance through ``fpq_sim.provenance``.

DIR receives, as one set (``fpq.output_files.staged_outputs``: a reader sees the old set or
the new one; an interrupted command changes nothing):

* ``sweep.csv``: a row per combination: the varied values as given, the number of seeds, the
  mean and 95 % interval of each quantity of :data:`QUANTITIES` (empty where a run does not
  report it: transfer times of bulk flows), then the provenance columns of the figures'
  tables (``figures.outputs.PROVENANCE_COLUMNS``) of the row's runs;
* ``sweep.png`` and ``sweep.pdf``: one quantity (``--plot``) against the first varied key, a
  line per combination of the other keys, the intervals as error bars;
* ``raw/``: every run's JSON summary, its key ``("sweep", combination number, seed)``.

While the command runs, each finished run's summary is kept in ``.raw.partial`` beside
``raw/`` (``figures.runner.progress_folder``); ``--resume`` reuses the saved runs, there or in
``raw/``, whose run digest (``fpq_sim.provenance.run_digest``: scenario, seed and simulation
code) is that of the run the current command would make, and runs only the others.
"""

import copy
import os
import shutil
import time

from fpq.messages import brief

from .figures.quantities import Ek, E_fraction, loss_est
from .scenario import ScenarioError

__all__ = ["add_arguments", "main", "parse_vary", "parse_seeds", "plan", "table", "estimate",
           "QUANTITIES", "CSV_NAME", "PLOT_NAME", "RAW_NAME", "SEED_MAX", "RUNS_MAX"]

#: The files and the folder ``fpq sweep`` writes into ``--out``.
CSV_NAME, PLOT_NAME, RAW_NAME = "sweep.csv", "sweep", "raw"
#: The largest seed (``run.seed``'s range).
SEED_MAX = 2**63 - 1
#: The most runs (combinations times seeds) one sweep makes.
RUNS_MAX = 100_000
#: The first part of every run's key.
KIND = "sweep"
#: The sections a varied key may name: ``section.key``, a group ``section.N.key``.
SECTIONS, GROUPS = ("run", "bottleneck", "queue"), ("flows", "floods")


def _known(*path):
    """The estimate over runs of ``summary[path...]`` (``quantities.Ek``); None where a run
    reports none (no transfer finished, no packet left the queue)."""
    def over_runs(ss):
        for s in ss:
            for p in path:
                s = s[p]
            if s is None:
                return None
        return Ek(ss, *path)
    return over_runs


def _unfinished(ss):
    """The estimate over runs of the fraction of transfers still running at the end (those
    begun after the warm-up; exact bound where none was, ``stats.est_counts``); None for
    runs without transfers."""
    def started(s):
        return s["transfers"]["count"] + s["transfers"]["unfinished"]
    if not any(started(s) for s in ss):
        return None
    return E_fraction(ss, lambda s: s["transfers"]["unfinished"] / max(1, started(s)), started)


#: The range a fraction can take, and one a time, a length or a rate can.
FRACTION, NON_NEGATIVE = (0.0, 1.0), (0.0, None)
#: ``{name: (axis label, estimate over a combination's runs or None, possible range)}``: the
#: CSV's quantities, each three columns (``NAME_mean``, ``NAME_lo``, ``NAME_hi``), the
#: interval cut to the quantity's possible range (``stats.Est.clip``). Transfer times as
#: ``fpq_sim.network`` reports them per run: the mean of the finished ones, the mean with the
#: unfinished counted at their elapsed time (a lower bound) and the Kaplan-Meier median.
QUANTITIES = {
    "utilisation": ("bottleneck utilisation", _known("utilisation"), FRACTION),
    "loss_rate": ("loss rate (per arrival)", loss_est, FRACTION),
    "avg_queue_pkts": ("mean queue (packets)", _known("avg_queue_pkts"), NON_NEGATIVE),
    "queue_delay_s": ("mean queueing delay (s)", _known("avg_delay_s"), NON_NEGATIVE),
    "queue_delay_p99_s": ("p99 queueing delay (s)", _known("delay_p99_s"), NON_NEGATIVE),
    "goodput_pkts_per_s": ("goodput (packets/s)", _known("goodput_pkts_per_s"),
                           NON_NEGATIVE),
    "transfer_mean_finished_s": ("mean transfer time, finished only (s)",
                                 _known("transfers", "mean"), NON_NEGATIVE),
    "transfer_mean_lower_bound_s": ("mean transfer time, lower bound (s)",
                                    _known("transfers", "mean_lower_bound"), NON_NEGATIVE),
    "transfer_km_median_s": ("median transfer time, Kaplan-Meier (s)",
                             _known("transfers", "km_median"), NON_NEGATIVE),
    "transfer_unfinished_fraction": ("unfinished transfers (fraction)", _unfinished, FRACTION),
}


def estimate(quantity, ss):
    """The estimate of ``quantity`` (a name of :data:`QUANTITIES`) over the runs ``ss``, its
    interval within the quantity's range; None where a run does not report it."""
    _, over_runs, bounds = QUANTITIES[quantity]
    e = over_runs(ss)
    return None if e is None else e.clip(*bounds)


def add_arguments(p):
    p.add_argument("scenario", help="scenario file (schema: sim/scenarios/README.md), or the "
                                    "name of a shipped one; a dumbbell")
    p.add_argument("--vary", action="append", required=True, metavar="KEY=V1,V2,...",
                   help="a scenario key and its values (each read as --set reads one; "
                        "a list in brackets stays one value), e.g. flows.0.count=10,50,100; "
                        "repeat for more keys: every combination runs")
    p.add_argument("--seeds", default="1-10", metavar="LIST",
                   help="the seeds of every combination: numbers and ranges, e.g. 1-10 or "
                        "1,2,5-7 (default 1-10)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario key for every run (as fpq sim)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"folder for {CSV_NAME}, {PLOT_NAME}.png/.pdf and {RAW_NAME}/ (every "
                        f"run's JSON summary)")
    p.add_argument("--jobs", type=int, default=1, help="local worker processes (default 1)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on this Dask scheduler instead "
                   "(e.g. tcp://127.0.0.1:8786)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the runs saved in DIR by an earlier or interrupted sweep whose "
                        "scenario, seed and simulation code are the current ones")
    p.add_argument("--plot", choices=tuple(QUANTITIES), default="loss_rate",
                   help="the quantity plotted against the first varied key (default "
                        "loss_rate)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


# ---- arguments ------------------------------------------------------------------------------

def _split_values(text):
    """The comma-separated values of ``text``; commas inside brackets or quotes belong to a
    value (``[0, 0.01]``, ``"a,b"``)."""
    values, depth, quote, start = [], 0, None, 0
    for i, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            values.append(text[start:i].strip())
            start = i + 1
    return values + [text[start:].strip()]


def _value(key, raw):
    """``raw`` read as ``--set`` reads a value (``fpq_sim.scenario.apply_set``); its refusal
    (a value nested too deeply, an integer of too many digits) names ``--vary KEY``."""
    from .scenario import apply_set
    try:
        return apply_set({}, "v=" + raw)["v"]
    except ScenarioError as exc:
        raise ScenarioError(f"--vary {key}: {str(exc).split(': ', 1)[-1]}") from None


def _check_key(key, doc):
    """``key`` (``section.name``, ``flows.0.name`` or ``flows[0].name``) in canonical form
    (``flows.0.name``), or ScenarioError naming it: a section of the scenario and, for a
    group, an index the scenario ``doc`` has. Whether ``name`` is a key of that section is
    the scenario's validation's to say (``_scenario``)."""
    parts = [p for p in key.strip().replace("[", ".").replace("]", "").split(".")]
    shown = f"--vary {brief(key) if len(key) > 60 else key}"
    where = "run, bottleneck, queue, flows.N or floods.N"
    if parts[0] in SECTIONS and len(parts) == 2 and parts[1]:
        if parts == ["run", "seed"]:
            raise ScenarioError(f"{shown}: the seeds are --seeds' to give")
        return ".".join(parts)
    if parts[0] in GROUPS and len(parts) == 3 and parts[2]:
        groups = doc.get(parts[0]) if isinstance(doc, dict) else None
        count = len(groups) if isinstance(groups, list) else 0
        if not count:
            raise ScenarioError(f"{shown}: the scenario has no [[{parts[0]}]] group")
        if not parts[1].isdigit() or int(parts[1]) >= count:
            raise ScenarioError(f"{shown}: {parts[0]} group {brief(parts[1])} is out of "
                                f"range [0, {count - 1}] (the scenario has {count})")
        return ".".join(parts)
    raise ScenarioError(f"{shown}: not a scenario key; give SECTION.KEY with SECTION one of "
                        f"{where} (keys: sim/scenarios/README.md)")


def parse_vary(texts, doc):
    """``[(key, [(value text, value), ...]), ...]`` of the ``--vary KEY=V1,V2,...`` texts,
    the keys checked against the scenario document ``doc`` (:func:`_check_key`); a key given
    twice, a value given twice or an empty one is a ScenarioError naming it."""
    varied = []
    for text in texts:
        if "=" not in text:
            raise ScenarioError(f"--vary {brief(text)}: must be KEY=V1,V2,...")
        name, raw = text.split("=", 1)
        key = _check_key(name, doc)
        if key in [k for k, _ in varied]:
            raise ScenarioError(f"--vary {key}: given twice; give its values in one --vary")
        values = []
        for item in _split_values(raw):
            if not item:
                raise ScenarioError(f"--vary {key}: an empty value in {brief(raw)}")
            value = _value(key, item)
            if value in [v for _, v in values]:
                raise ScenarioError(f"--vary {key}: {brief(item)} is given twice")
            values.append((item, value))
        varied.append((key, values))
    return varied


def parse_seeds(text):
    """``"1-3,7"`` -> [1, 2, 3, 7]: distinct seeds in [0, :data:`SEED_MAX`], in order given;
    ValueError naming ``--seeds`` and the range."""
    seeds = []
    for item in text.split(","):
        lo, sep, hi = item.strip().partition("-")
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            raise ValueError(f"--seeds: {brief(item.strip())} is not a seed or a range "
                             f"A-B of seeds; seeds are integers in [0, {SEED_MAX}]") from None
        for seed in (first, last):
            if not 0 <= seed <= SEED_MAX:
                raise ValueError(f"--seeds: {seed} is out of range [0, {SEED_MAX}]")
        if last < first or last - first >= RUNS_MAX:
            raise ValueError(f"--seeds: {item.strip()}: a range A-B needs A <= B and at most "
                             f"{RUNS_MAX} seeds")
        for seed in range(first, last + 1):
            if seed in seeds:
                raise ValueError(f"--seeds: {seed} is given twice")
            seeds.append(seed)
    return seeds


# ---- the runs -------------------------------------------------------------------------------

def _combinations(varied):
    """Every combination of the varied values, ``[((key, value text, value), ...), ...]``,
    the first key changing slowest."""
    combos = [()]
    for key, values in varied:
        combos = [c + ((key, text, value),) for c in combos for text, value in values]
    return combos


def _scenario(doc, combo, seed, path):
    """The validated scenario of the document ``doc`` with the combination ``combo`` and
    ``seed``; ScenarioError naming the combination and what validation refused."""
    from .scenario import apply_set, validate
    d = copy.deepcopy(doc)
    given = " and ".join(f"{key}={text}" for key, text, _ in combo)
    try:
        for key, text, _ in combo:
            apply_set(d, f"{key}={text}")
        if isinstance(d.get("run"), dict):
            d["run"]["seed"] = seed
        return validate(d)
    except ScenarioError as exc:
        raise ScenarioError(f"--vary {given}: {path}: {exc}") from None


def plan(path, sets, vary, seeds):
    """``(combinations, jobs)`` of a sweep of the scenario file ``path`` with the ``--set``
    texts ``sets``, the ``--vary`` texts ``vary`` and the seeds ``seeds``: every
    combination checked with every seed before any runs. A job is ``(("sweep", combination
    number, seed), validated scenario, False)``, as ``figures.runner.run_jobs`` takes."""
    from .scenario import read_toml, apply_set
    doc = read_toml(path)
    for s in sets:
        apply_set(doc, s)
    if isinstance(doc, dict) and "topology" in doc:
        raise ScenarioError(f"{path}: topology: fpq sweep sweeps a dumbbell scenario (its "
                            f"summary's quantities); this is a parking lot")
    combos = _combinations(parse_vary(vary, doc))
    if len(combos) * len(seeds) > RUNS_MAX:
        raise ScenarioError(f"--vary: {len(combos)} combinations x {len(seeds)} seeds is more "
                            f"than {RUNS_MAX} runs")
    jobs = [((KIND, i, seed), _scenario(doc, combo, seed, path), False)
            for i, combo in enumerate(combos) for seed in seeds]
    return combos, jobs


# ---- the table and the plot -----------------------------------------------------------------

def table(combos, grouped):
    """``(header, rows)`` of the CSV: a row per combination of ``combos`` whose runs
    ``grouped[("sweep", number)]`` (summaries by seed) are given."""
    from .figures.outputs import ci_header, PROVENANCE_COLUMNS
    from .provenance import runs_provenance
    keys = [key for key, _, _ in combos[0]]
    header = keys + ["n_seeds"] + ci_header(QUANTITIES) + list(PROVENANCE_COLUMNS)
    rows = []
    for i, combo in enumerate(combos):
        ss = grouped[(KIND, i)]
        cells = []
        for e in (estimate(q, ss) for q in QUANTITIES):
            cells += ["", "", ""] if e is None else [e.mean, e.lo, e.hi]
        prov = runs_provenance(ss)
        rows.append([text for _, text, _ in combo] + [len(ss)] + cells +
                    [prov[c] for c in PROVENANCE_COLUMNS])
    return header, rows


def _x_positions(values):
    """The plot's x of the first key's ``values``: the numbers, or their positions where a
    value is not a number (a name, a range)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return (list(values), None) if numbers else (list(range(len(values))), values)


def plot(outputs, combos, grouped, quantity, title):
    """Draw ``quantity`` against the first varied key, a line per combination of the other
    keys, with error bars, as ``outputs``' (``figures.outputs.Outputs``) plot
    :data:`PLOT_NAME`."""
    from .figures.plots import errbar, label, MARKERS, FIGSIZE
    first = combos[0][0][0]
    lines = {}
    for i, combo in enumerate(combos):
        rest = ", ".join(f"{key}={text}" for key, text, _ in combo[1:])
        lines.setdefault(rest, []).append((combo[0], estimate(quantity, grouped[(KIND, i)])))
    fig, ax = outputs.subplots(figsize=FIGSIZE)
    for n, (rest, points) in enumerate(lines.items()):
        xs, names = _x_positions([value for (_, _, value), _ in points])
        shown = [(x, e) for x, (_, e) in zip(xs, points) if e is not None]
        if shown:
            errbar(ax, [x for x, _ in shown], [e for _, e in shown], MARKERS[n % len(MARKERS)],
                   rest or title)
        if names is not None:
            ax.set_xticks(xs, [text for (_, text, _), _ in points])
    label(ax, first, QUANTITIES[quantity][0], title,
          legend_title=None if len(lines) == 1 else "other keys")
    outputs.save(fig, PLOT_NAME)


# ---- the command ----------------------------------------------------------------------------

def _check_arguments(args):
    """The options that need no scenario, checked first: ``--jobs``, the output folder."""
    from fpq.atomic import check_output_folder
    if not 1 <= args.jobs <= 256:
        raise ValueError(f"--jobs: {args.jobs} is out of range [1, 256]")
    if args.dask and args.jobs > 1:
        raise ValueError("--jobs: local processes; with --dask the cluster's workers run the "
                         "sweep (give one of the two)")
    check_output_folder(args.out, "--out")


def _write(args, combos, res, title):
    """Write ``sweep.csv``, the plot and ``raw/`` of the runs ``res`` into ``--out``, as one
    set; returns the paths of the table and the plots."""
    from fpq.output_files import staged_outputs
    from .figures.outputs import Outputs, write_csv
    from .figures.runner import group, save_raw
    from .provenance import runs_provenance
    grouped = group(res)
    with staged_outputs([args.out]) as (stage, _):
        folder = stage[args.out]
        # the set holds this sweep's runs only, not the progress folder or older runs
        for stale in (RAW_NAME, f".{RAW_NAME}.partial"):
            shutil.rmtree(os.path.join(folder, stale), ignore_errors=True)
        save_raw(res, os.path.join(folder, RAW_NAME))
        write_csv(os.path.join(folder, CSV_NAME), *table(combos, grouped))
        outputs = Outputs(folder, creator="fpq sweep")
        outputs.provenance = runs_provenance(list(res.values()))
        plot(outputs, combos, grouped, args.plot, title)
    return [os.path.join(args.out, CSV_NAME)] + \
        [os.path.join(args.out, os.path.basename(f)) for f in outputs.files]


def main(args):
    from .figures.runner import run_jobs, resumable, save_raw, progress_folder
    from .scenario import scenario_path
    _check_arguments(args)
    seeds = parse_seeds(args.seeds)
    path = scenario_path(args.scenario)
    combos, jobs = plan(path, args.set or (), args.vary, seeds)
    t0 = time.perf_counter()
    raw = os.path.join(args.out, RAW_NAME)
    saved = resumable(jobs, raw) if args.resume else {}
    partial = progress_folder(raw)
    res = run_jobs([j for j in jobs if j[0] not in saved], args.jobs, args.dask,
                   progress=not args.no_progress, desc="fpq sweep",
                   on_result=lambda key, s: save_raw({key: s}, partial))
    res.update(saved)
    title = jobs[0][1]["name"] or os.path.basename(path)
    files = _write(args, combos, res, title)
    shutil.rmtree(partial, ignore_errors=True)
    where = f"Dask {args.dask}" if args.dask else f"{args.jobs} local process" + \
        ("es" if args.jobs > 1 else "")
    print(f"fpq sweep: {len(combos)} combinations x {len(seeds)} seeds: "
          f"{len(jobs) - len(saved)} runs in {time.perf_counter() - t0:.1f} s on {where}"
          f"{f' ({len(saved)} saved runs reused)' if saved else ''}; wrote "
          f"{', '.join(files)} and {len(res)} runs in {raw}")
    return 0
