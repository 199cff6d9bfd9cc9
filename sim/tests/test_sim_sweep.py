"""fpq sweep: the CSV's rows and intervals against runs made and estimated here, resume after
lost runs, refused arguments, and a Dask cluster giving the local run's table."""

import csv
import math
import os
import statistics

import pytest

from fpq.cli import main
from fpq_sim import sweep_command
from fpq_sim.figures import runner
from fpq_sim.network import run_scenario
from fpq_sim.scenario import load, scenario_path

#: Student's t(0.975, 2) from the standard tables: the 95 % interval of 3 seeds
T975_DF2 = 4.303
#: a tiny case: bulk NewReno through RED (losses), a few simulated seconds
BULK = ["red-dumbbell-newreno", "--set", "run.duration_s=4", "--set", "run.warmup_s=1"]
#: ... and repeated 10-packet transfers through FPQ (transfer times, unfinished ones)
TRANSFERS = ["fpq-fpq", "--set", "run.duration_s=4", "--set", "run.warmup_s=1"]


def _sweep(tmp_path, case, *more, out="out"):
    return main(["sweep", *case, "--out", str(tmp_path / out), "--no-progress", *more])


def _rows(tmp_path, out="out"):
    with open(tmp_path / out / sweep_command.CSV_NAME, newline="") as f:
        return list(csv.DictReader(f))


def _summaries(case, sets, seeds):
    """The runs of one combination, made here: the scenario loaded with the case's and the
    combination's settings and each seed, run and summarised."""
    base = [a for a in case[1:] if a != "--set"]
    return [run_scenario(load(scenario_path(case[0]), base + sets + [f"run.seed={seed}"]))
            for seed in seeds]


def _interval(values, lo=0.0, hi=math.inf):
    """Mean and 95 % t interval of three values, cut to ``[lo, hi]``."""
    m = statistics.mean(values)
    h = T975_DF2 * statistics.stdev(values) / math.sqrt(len(values))
    return m, max(lo, m - h), min(hi, m + h)


def _assert_cells(row, name, expected):
    got = [float(row[f"{name}_{x}"]) for x in ("mean", "lo", "hi")]
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-9), name


def test_bulk_rows_and_intervals_as_computed_here(tmp_path):
    assert _sweep(tmp_path, BULK, "--vary", "flows.0.count=2,5", "--vary",
                  "queue.discipline=red,droptail", "--seeds", "1-3") == 0
    rows = _rows(tmp_path)
    combos = [(n, d) for n in ("2", "5") for d in ("red", "droptail")]
    assert [(r["flows.0.count"], r["queue.discipline"]) for r in rows] == combos
    for row, (n, d) in zip(rows, combos):
        ss = _summaries(BULK, [f"flows.0.count={n}", f"queue.discipline={d}"], (1, 2, 3))
        assert row["n_seeds"] == "3" and row["seed_list"] == "1-3"
        _assert_cells(row, "utilisation", _interval([s["utilisation"] for s in ss], hi=1.0))
        _assert_cells(row, "avg_queue_pkts", _interval([s["avg_queue_pkts"] for s in ss]))
        _assert_cells(row, "queue_delay_s", _interval([s["avg_delay_s"] for s in ss]))
        _assert_cells(row, "goodput_pkts_per_s",
                      _interval([s["goodput_pkts_per_s"] for s in ss]))
        losses = [s["loss_rate"] for s in ss]
        if any(losses):
            _assert_cells(row, "loss_rate", _interval(losses, hi=1.0))
        else:       # Clopper-Pearson: (1 - p)^arrivals = 0.025
            bound = 1 - 0.025 ** (1 / sum(s["arrivals"] for s in ss))
            _assert_cells(row, "loss_rate", (0.0, 0.0, bound))
        # bulk flows make no transfers: their columns are empty
        assert row["transfer_km_median_s_mean"] == row["transfer_mean_finished_s_lo"] == ""
    assert any(float(r["loss_rate_mean"]) > 0 for r in rows)


def test_transfer_times_with_the_unfinished_counted(tmp_path):
    assert _sweep(tmp_path, TRANSFERS, "--vary", "flows.0.count=3,8", "--seeds", "1-3") == 0
    rows = _rows(tmp_path)
    assert [r["flows.0.count"] for r in rows] == ["3", "8"]
    for row, n in zip(rows, ("3", "8")):
        ss = _summaries(TRANSFERS, [f"flows.0.count={n}"], (1, 2, 3))
        t = [s["transfers"] for s in ss]
        _assert_cells(row, "transfer_mean_lower_bound_s",
                      _interval([x["mean_lower_bound"] for x in t]))
        _assert_cells(row, "transfer_km_median_s", _interval([x["km_median"] for x in t]))
        _assert_cells(row, "transfer_mean_finished_s", _interval([x["mean"] for x in t]))
        fractions = [x["unfinished"] / (x["count"] + x["unfinished"]) for x in t]
        assert all(fractions)            # every run ends with transfers under way
        _assert_cells(row, "transfer_unfinished_fraction", _interval(fractions, hi=1.0))


def _recorded(monkeypatch):
    """The keys of the runs made from now on (the runner's worker, in this process)."""
    ran, work = [], runner._work
    monkeypatch.setattr(runner, "_work", lambda job: ran.append(job[0]) or work(job))
    return ran


def test_resume_reruns_exactly_the_lost_runs(tmp_path, monkeypatch):
    args = ["--vary", "flows.0.count=2,4", "--vary", "queue.discipline=red,fpq",
            "--seeds", "1-2"]
    assert _sweep(tmp_path, TRANSFERS, *args) == 0
    raw = tmp_path / "out" / sweep_command.RAW_NAME
    before = (tmp_path / "out" / sweep_command.CSV_NAME).read_text()
    assert len(os.listdir(raw)) == 8
    assert not os.path.exists(runner.progress_folder(str(raw)))      # removed at the end
    # two runs lost; one left where an interrupted sweep keeps its finished runs
    (raw / "sweep-1-2.json").unlink()
    (raw / "sweep-3-1.json").unlink()
    partial = runner.progress_folder(str(raw))
    os.makedirs(partial)
    os.replace(raw / "sweep-2-2.json", os.path.join(partial, "sweep-2-2.json"))
    ran = _recorded(monkeypatch)
    assert _sweep(tmp_path, TRANSFERS, *args, "--resume") == 0
    assert sorted(ran) == [("sweep", 1, 2), ("sweep", 3, 1)]
    assert (tmp_path / "out" / sweep_command.CSV_NAME).read_text() == before
    assert len(os.listdir(raw)) == 8 and not os.path.exists(partial)
    # a changed combination has other scenarios (digests): only its runs are made again
    ran.clear()
    changed = [a.replace("2,4", "2,5") for a in args]
    assert _sweep(tmp_path, TRANSFERS, *changed, "--resume") == 0
    assert sorted(ran) == [("sweep", i, seed) for i in (2, 3) for seed in (1, 2)]


@pytest.mark.parametrize("vary, named", [
    ("bogus=1,2", "--vary bogus: not a scenario key"),
    ("queue.bogus=1,2", "queue.bogus: unknown key"),
    ("flows.1.count=3", "--vary flows.1.count: flows group '1' is out of range [0, 0]"),
    ("flows.0.count=5,0", "and flows.0.count=0: "),
    ("queue.discipline=red,nope", "queue.discipline: 'nope' must be one of"),
    ("flows.0.count=5,5", "--vary flows.0.count: '5' is given twice"),
    ("run.seed=1,2", "--vary run.seed: the seeds are --seeds' to give"),
    ("flows.0.count", "must be KEY=V1,V2,..."),
    ("floods.0.rate_pps=10", "--vary floods.0.rate_pps: the scenario has no [[floods]] group"),
    ("flows.0.count=" + "[" * 5000 + "]" * 5000, "--vary flows.0.count: the value is nested "
                                                 "too deeply to read"),
])
def test_bad_vary_refused_before_anything_runs(tmp_path, monkeypatch, capsys, vary, named):
    ran = _recorded(monkeypatch)
    assert _sweep(tmp_path, TRANSFERS, "--vary", "flows.0.access_delay_s=[0, 0.01],0",
                  "--vary", vary) == 2
    err = capsys.readouterr().err
    assert named in err and len(err.strip().splitlines()) == 1, err
    if "=0: " in named:     # the combination, then what the scenario's validation said
        assert err.strip().endswith("flows[0].count: 0 is out of range [1, 100000]")
    assert ran == [] and not os.path.exists(tmp_path / "out")


def test_a_key_twice_and_bad_seeds_refused(tmp_path, capsys):
    assert _sweep(tmp_path, TRANSFERS, "--vary", "flows.0.count=2", "--vary",
                  "flows[0].count=3") == 2
    assert "--vary flows.0.count: given twice" in capsys.readouterr().err
    for seeds, named in (("3-1", "--seeds: 3-1: a range"), ("1,x", "--seeds: 'x' is not"),
                         ("1-3,2", "--seeds: 2 is given twice")):
        assert _sweep(tmp_path, TRANSFERS, "--vary", "flows.0.count=2", "--seeds", seeds) == 2
        assert named in capsys.readouterr().err


def test_values_and_seeds_read_as_written():
    assert sweep_command.parse_seeds("1-3,7") == [1, 2, 3, 7]
    assert sweep_command._split_values('[0, 0.01], 0.02, "a,b"') == \
        ["[0, 0.01]", "0.02", '"a,b"']


def test_a_dask_cluster_gives_the_local_table(tmp_path):
    distributed = pytest.importorskip("distributed")
    args = ["--vary", "queue.discipline=red,pie,codel", "--vary", "flows.0.count=2,4",
            "--seeds", "1-2"]
    assert _sweep(tmp_path, BULK, *args, "--jobs", "1", out="local") == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert _sweep(tmp_path, BULK, *args, "--dask", cluster.scheduler_address,
                      out="dask") == 0
    local = (tmp_path / "local" / sweep_command.CSV_NAME).read_text()
    assert (tmp_path / "dask" / sweep_command.CSV_NAME).read_text() == local
    assert len(local.splitlines()) == 1 + 6
    # the plot: a categorical first key, its provenance in the metadata
    png = (tmp_path / "dask" / "sweep.png").read_bytes()
    assert b"fpq sweep" in png and b"scenario_digest" in png
    assert (tmp_path / "dask" / "sweep.pdf").read_bytes()[:4] == b"%PDF"


def test_a_failed_sweep_leaves_the_earlier_outputs(tmp_path, monkeypatch):
    assert _sweep(tmp_path, TRANSFERS, "--vary", "flows.0.count=2,3", "--seeds", "1") == 0
    out = tmp_path / "out"
    before = {name: (out / name).read_bytes() for name in ("sweep.csv", "sweep.png")}

    def fail(*args):
        raise RuntimeError("the plot failed")
    monkeypatch.setattr(sweep_command, "plot", fail)
    assert _sweep(tmp_path, TRANSFERS, "--vary", "flows.0.count=4,5", "--seeds", "1") == 2
    assert {name: (out / name).read_bytes() for name in before} == before
    assert sorted(os.listdir(out / sweep_command.RAW_NAME)) == ["sweep-0-1.json",
                                                                 "sweep-1-1.json"]
    assert sorted(os.listdir(tmp_path)) == ["out"]          # no staging folder left
