"""fpq figures: the sweep machinery (local processes, Dask), outputs, and the RESULTS.md section."""

import os
import re

import pytest

from fpq.cli import main
from fpq_sim import figures
from fpq_sim.figures import template
from fpq_sim.scenario import load

SCEN = os.path.join(os.path.dirname(__file__), "..", "scenarios")


def _jobs():
    return [(("sweep", d, 15, 1), load(os.path.join(SCEN, f"fpq-{d}.toml"),
                                    ["flows.0.count=15", "run.duration_s=20", "run.warmup_s=5"]),
             True) for d in ("traditional", "fpq")]


def _strip(res):
    return {k: {kk: vv for kk, vv in s.items() if kk not in ("wall_seconds",
                                                             "events_per_second")}
            for k, s in res.items()}


def test_local_pool_and_dask_cluster_give_the_same_results():
    distributed = pytest.importorskip("distributed")
    serial = figures.run_jobs(_jobs(), n_jobs=1, progress=False)
    pool = figures.run_jobs(_jobs(), n_jobs=2, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dask = figures.run_jobs(_jobs(), dask=cluster.scheduler_address, progress=False)
    assert set(serial) == {("sweep", "traditional", 15, 1), ("sweep", "fpq", 15, 1)}
    assert _strip(serial) == _strip(pool) == _strip(dask)


def test_results_md_only_the_marked_section_changes(tmp_path):
    md = tmp_path / "RESULTS.md"
    before = "# Results\n\n<!-- BEGIN other -->\nkeep me\n<!-- END other -->\n\ntail text\n"
    md.write_text(before)
    figures.update_results_md(str(md), "first body\n")
    text = md.read_text()
    assert text.startswith(before.rstrip("\n"))
    assert text.count(figures.BEGIN) == 1 and "first body" in text
    figures.update_results_md(str(md), "second body\n")
    text2 = md.read_text()
    assert "first body" not in text2 and "second body" in text2
    assert text2.replace("second body", "first body") == text
    md.write_text(before + figures.BEGIN + "\nhalf")
    with pytest.raises(ValueError, match="must stand both, in this order, or neither"):
        figures.update_results_md(str(md), "x\n")


def test_figures_command_quick_sweep(tmp_path):
    md = tmp_path / "R.md"
    md.write_text("# R\n\nsomeone else's text\n")
    rc = main(["figures", "--quick", "--only", "sweep", "--jobs", "2", "--no-progress",
               "--out", str(tmp_path / "f"), "--raw", str(tmp_path / "raw"),
               "--results-md", str(md)])
    assert rc == 0
    names = set(os.listdir(tmp_path / "f"))
    assert {"fig10_queue_vs_n.png", "fig11_loss_vs_n.png", "fig12_transfer_cdf_n75.png",
            "fig13_p95_p5_vs_n.png", "fig10_13_sweep.csv", "fig12_transfer_cdf_n75.csv"} <= names
    text = md.read_text()
    assert text.startswith("# R\n\nsomeone else's text\n")
    assert "QUICK RUN" in text and "| 75 |" in text
    rows = (tmp_path / "f" / "fig10_13_sweep.csv").read_text().splitlines()
    assert rows[0].startswith("N,") and [r.split(",")[0] for r in rows[1:]] == ["20", "75"]
    # every point carries its interval: mean, lo, hi columns, lo <= mean <= hi
    head = rows[0].split(",")
    i = head.index("trad_loss_rate_mean")
    assert head[i + 1:i + 3] == ["trad_loss_rate_lo", "trad_loss_rate_hi"]
    for r in rows[1:]:
        m, lo, hi = map(float, r.split(",")[i:i + 3])
        assert lo <= m <= hi
    assert "mean [lo, hi]" in text and "2 seeds" in text
    # the template's syntax is all filled in or removed: no field, continuation or marker left
    assert not re.search(r"[{}\\]|^%%", text, re.M), text
    # print resolution: PNG at >= 150 dpi (5.5 in wide), and a PDF of every plot
    import struct
    png = (tmp_path / "f" / "fig11_loss_vs_n.png").read_bytes()
    width = struct.unpack(">I", png[16:20])[0]
    assert width >= 5.5 * 150
    assert (tmp_path / "f" / "fig11_loss_vs_n.pdf").read_bytes()[:4] == b"%PDF"


def test_figures_rebuilt_from_saved_runs(tmp_path, capsys):
    md = tmp_path / "R.md"
    args = ["figures", "--quick", "--only", "phase", "--jobs", "1", "--no-progress",
            "--out", str(tmp_path / "f"), "--raw", str(tmp_path / "raw"), "--results-md", str(md)]
    assert main(args) == 0
    first = md.read_text()
    (tmp_path / "f" / "phase_share_vs_delay.csv").unlink()
    assert main(args + ["--from-raw"]) == 0
    second = md.read_text()
    assert (tmp_path / "f" / "phase_share_vs_delay.csv").exists()
    # the same tables; only the footer says they were rebuilt
    strip = lambda t: [l for l in t.splitlines() if not l.startswith("_Generated")]
    assert strip(first) == strip(second) and "--from-raw" in second
    rc = main(["figures", "--from-raw", "--raw", str(tmp_path / "nothing"),
               "--results-md", str(md), "--out", str(tmp_path / "g")])
    assert rc == 2 and "_meta.json is missing" in capsys.readouterr().err


def test_figures_command_on_a_dask_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    md = tmp_path / "R.md"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        rc = main(["figures", "--quick", "--only", "loss", "--dask", cluster.scheduler_address,
                   "--no-progress", "--out", str(tmp_path / "f"), "--raw", str(tmp_path / "raw"),
                   "--results-md", str(md)])
    assert rc == 0
    text = md.read_text()
    assert "Figs. 1-3" in text and f"Dask {cluster.scheduler_address}" in text
    assert {"fig1_mean_transfer_vs_loss.png", "fig2_transfer_cdf.png",
            "fig2_transfer_cdf.csv"} <= set(os.listdir(tmp_path / "f"))


def test_template_sections_continuations_and_choices(tmp_path):
    path = tmp_path / "t.md"
    path.write_text("a note, not a section\n%% one\nfirst line \\\ncontinued {n:.2f}\n\n"
                    "second {flag:yes||no}{flag: only if true}\n\n\n%% two\n{x}\n")
    sections = template.sections(str(path))
    assert sections == {"one": "first line continued {n:.2f}\n\nsecond {flag:yes||no}"
                               "{flag: only if true}",
                        "two": "{x}"}
    fmt = template.ProseFormatter()
    assert fmt.vformat(sections["one"], (), {"n": 1.234, "flag": True}) == \
        "first line continued 1.23\n\nsecond yes only if true"
    assert fmt.vformat(sections["one"], (), {"n": 1.234, "flag": False}) == \
        "first line continued 1.23\n\nsecond no"
    # a choice's texts hold fields of their own, one level deep
    assert fmt.vformat("{a:x {b:.1f} {c:p||q}||y}", (), {"a": True, "b": 2.34, "c": False}) == \
        "x 2.3 q"
    with pytest.raises(ValueError, match="True/False field needs its texts"):
        fmt.vformat("{flag}", (), {"flag": True})
    twice = tmp_path / "twice.md"
    twice.write_text("%% one\na\n%% one\nb\n")
    with pytest.raises(ValueError, match="section 'one' appears twice"):
        template.sections(str(twice))


def test_template_names_a_missing_section_or_field():
    with pytest.raises(KeyError, match="no section 'no-such-section'"):
        template.prose("no-such-section")
    with pytest.raises(KeyError, match="section 'phase.roughness': field 'step' not given"):
        template.prose("phase.roughness", variant="deterministic", width=0.1)
    # the shipped template is package data of fpq_sim, beside the figures package
    assert os.path.dirname(template.TEMPLATE) == os.path.join(
        os.path.dirname(os.path.dirname(figures.__file__)), "templates")


def test_registry_plans_each_experiment_alone_and_places_each_section():
    from fpq_sim.figures.driver import SECTION_ORDER
    from fpq_sim.figures.registry import REGISTRY
    assert figures.EXPERIMENTS == tuple(REGISTRY) == figures.EXPERIMENT_MODULES
    assert sorted(SECTION_ORDER) == sorted(REGISTRY)
    # the whole plan is each experiment's own plan, one after the other (--only composes)
    alone = [key for name in REGISTRY for key, _, _ in figures.plan(True, [name])]
    assert alone == [key for key, _, _ in figures.plan(True)]
    assert len(set(alone)) == len(alone)
    # a kind of run has one length, declared by one experiment, for both run lengths
    kinds = [set(e.durations) for e in REGISTRY.values()]
    assert sum(map(len, kinds)) == len(set().union(*kinds))
    assert all(set(e.durations) == set(e.quick_durations) for e in REGISTRY.values())


def test_an_experiment_without_its_runs_writes_nothing(tmp_path):
    from fpq_sim.figures.outputs import Outputs
    from fpq_sim.figures.registry import REGISTRY
    others = {("someone-else", 1): [{}]}
    for name, experiment in REGISTRY.items():
        out = Outputs(str(tmp_path))
        experiment.write(others, out)
        assert out.files == [] and experiment.markdown(others) == [], name
    assert os.listdir(tmp_path) == []
