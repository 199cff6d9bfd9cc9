"""Argument checks of ``python -m fpq_hdl.synth`` (no tools run: they fail before)."""

import pytest

from fpq_hdl.synth import main


@pytest.mark.parametrize("argv, message", [
    (["--placer-heap-beta", "0"], "--placer-heap-beta: 0.0 must be in (0, 1]"),
    (["--placer-heap-beta", "1.5"], "--placer-heap-beta: 1.5 must be in (0, 1]"),
    (["--router", "router3"], "argument --router: invalid choice: 'router3'"),
    (["--speed", "5"], "argument --speed: invalid choice: 5 (choose from 6, 7, 8)"),
    (["--fix", "wq_shift=40"], "fixed: wq_shift: 40 is out of range [0, 16]"),
    (["--fix", "hash_key=zz"], "--fix hash_key: 'zz' is not hex bytes"),
])
def test_bad_arguments_are_refused_before_any_tool_runs(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--out", str(out)])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()        # nothing written
