"""The registry of ``fpq figures``' experiments and the plan of their runs.

An experiment is one module of this package that builds an :class:`Experiment` and passes it
to :func:`register`: its name (the ``--only`` choice), the length of its runs, the runs it
needs (``plan``), the CSV tables and plots it draws from their summaries (``write``) and its
part of the RESULTS.md section (``markdown``). The drivers (:func:`plan` here,
``driver.write_outputs`` and ``driver.results_markdown``) go through the registry and know no
experiment by name.

A job is ``(key, validated scenario, keep transfer times)``; the last element of every key is
the seed, the first names the kind of run (an experiment may run several kinds, each with its
own length: ``sweep`` runs ``sweep`` and ``fig12``).
"""

import copy
import os
from dataclasses import dataclass
from typing import Callable

from ..scenario import load, validate, SCENARIO_DIR

__all__ = ["Experiment", "Planner", "register", "REGISTRY", "plan", "durations", "SEEDS",
           "QUICK_SEEDS", "SCEN", "with_group", "telnet_group"]

SCEN = SCENARIO_DIR
SEEDS = tuple(range(1, 11))
QUICK_SEEDS = (1, 2)


@dataclass(frozen=True)
class Experiment:
    """One experiment of ``fpq figures``.

    Parameters
    ----------
    name : str
        Its ``--only`` choice.
    durations, quick_durations : dict
        ``{kind: (duration, warm-up)}`` of one seed's run, seconds, for each kind of run (the
        first element of its keys); ``quick_durations`` for ``--quick``.
    plan : callable
        ``plan(planner)`` adds the experiment's jobs with ``planner.add``.
    write : callable
        ``write(grouped, outputs)`` writes its CSV tables and plots through ``outputs``
        (``outputs.Outputs``) from ``grouped``, ``{key without seed: [summaries by seed]}``
        of all experiments run; it writes nothing if its own runs are missing.
    markdown : callable
        ``markdown(grouped)``: its lines of the RESULTS.md section (none if its runs are
        missing).
    """
    name: str
    durations: dict
    quick_durations: dict
    plan: Callable
    write: Callable
    markdown: Callable


#: ``{name: Experiment}`` in the order of registration, which is the order of ``--only``'s
#: choices and of the planned jobs.
REGISTRY = {}


def register(experiment):
    """Add ``experiment`` to :data:`REGISTRY`; returns it."""
    if experiment.name in REGISTRY:
        raise ValueError(f"fpq figures: experiment {experiment.name!r} registered twice")
    REGISTRY[experiment.name] = experiment
    return experiment


def durations(quick=False):
    """``{kind: (duration, warm-up)}`` of every registered experiment's runs."""
    out = {}
    for experiment in REGISTRY.values():
        out.update(experiment.quick_durations if quick else experiment.durations)
    return out


class Planner:
    """Collects the jobs of a plan: every point of an experiment, once per seed."""

    def __init__(self, quick, seeds):
        self.quick = quick
        self.seeds = tuple(seeds)
        self.durations = durations(quick)
        self.jobs = []

    def run_sets(self, kind, seed):
        """The ``--set`` overrides that give a run of ``kind`` its length and its seed."""
        d, w = self.durations[kind]
        return [f"run.duration_s={d}", f"run.warmup_s={w}", f"run.seed={seed}"]

    def add(self, key, kind, name, sets, times=False, extra_group=None, loader=load):
        """Add the point ``key`` (without its seed): the shipped scenario ``name`` with the
        overrides ``sets``, as a run of ``kind``, once per seed; ``times`` keeps every
        transfer time in the summary; ``extra_group`` is a flow group added to the scenario;
        ``loader`` reads the scenario file."""
        for seed in self.seeds:
            sc = loader(os.path.join(SCEN, name + ".toml"),
                        list(sets) + self.run_sets(kind, seed))
            if extra_group is not None:
                sc = with_group(sc, extra_group)
            self.jobs.append((key + (seed,), sc, times))


def plan(quick=False, only=None, seeds=None):
    """The list of jobs of the experiments ``only`` (default: all registered), in the order of
    the registry; the last element of every key is the seed."""
    only = set(only or REGISTRY)
    planner = Planner(quick, seeds or (QUICK_SEEDS if quick else SEEDS))
    for name, experiment in REGISTRY.items():
        if name in only:
            experiment.plan(planner)
    return planner.jobs


def with_group(sc, group):
    """A copy of a validated scenario with one more flow group, validated again."""
    doc = copy.deepcopy(sc)
    doc["queue"] = {k: v for k, v in doc["queue"].items() if k != "params"}
    doc["queue"].update(sc["queue"]["params"])
    for g in doc["flows"]:
        for name in ("access_bw_bps", "access_bw_total_bps"):
            if g.get(name) == 0.0:
                del g[name]
    doc["flows"].append(group)
    return validate(doc)


def telnet_group(count=5, tcp="tahoe", tick_s=0.5, access_delay_s=(0.0, 0.01)):
    """``count`` telnet-like sessions (1 packet per second on average, ns Application/Telnet)."""
    return {"count": count, "tcp": tcp, "access_bw_bps": 10e6,
            "access_delay_s": list(access_delay_s), "workload": "telnet",
            "telnet_interval_s": 1.0, "tick_s": tick_s}
