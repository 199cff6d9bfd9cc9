"""``python -m fpq_sim.bench``'s parts that run no simulation: the argument check, a single
run's row and its table line, the sweep's line (the benchmark itself takes minutes and is run
by hand)."""

import pytest

from fpq_sim.bench import SINGLE_RUNS, TABLE_HEAD, _arguments, row_line, run_row, sweep_line


def test_a_record_path_in_a_missing_folder_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        _arguments(["--record", str(tmp_path / "nowhere" / "r.json")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m fpq_sim.bench: error: --record:") and "nowhere" in err
    assert _arguments(["--jobs", "3"]).jobs == 3


def test_a_single_run_s_row_and_its_table_line():
    stats = {"duration_s": 100.0, "events": 1234567, "wall_seconds": 2.5,
             "events_per_second": 493826.8, "arrivals": 250000, "other": 1}
    row = run_row("FPQ paper, FPQ, N = 75", stats)
    assert row == {"run": "FPQ paper, FPQ, N = 75", "simulated_s": 100.0, "events": 1234567,
                   "wall_s": 2.5, "events_per_s": 493826.8, "arrivals_per_wall_s": 100000.0}
    assert row_line(row) == "| FPQ paper, FPQ, N = 75 | 100 | 1,234,567 | 2.50 | 493,827 | " \
                            "100,000 |"
    # the line has the head's columns
    assert row_line(row).count("|") == TABLE_HEAD[0].count("|") == TABLE_HEAD[1].count("|")


def test_the_sweep_line():
    sweep = {"runs": 200, "n": [10, 20, 150], "seeds": 10, "duration_s": 300.0, "jobs": 2,
             "wall_s": 1234.56, "events": 4000000, "worker_s": 2000.0}
    assert sweep_line(sweep) == (
        "Figs. 10-13 sweep: 200 runs (N = 10, 20, 150; traditional and FPQ; 10 seeds of 300 s "
        "each): **1234.6 s wall** on 2 local processes (4,000,000 events, 2000.0 s of "
        "simulation in the workers, 2,000 events/s per process).")


def test_the_single_runs_name_scenarios_that_exist():
    import os
    from fpq_sim.figures import SCEN
    for label, name, sets in SINGLE_RUNS:
        assert os.path.isfile(os.path.join(SCEN, name + ".toml")), label
