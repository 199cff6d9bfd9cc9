"""VerdictFIFO against amaranth.lib.fifo.SyncFIFOBuffered of its capacity, clock for clock:
the same inputs give the same w_rdy, r_rdy, level and (when r_rdy) r_data, under random
writes and reads, full and empty, and resets (``fifo_reference.py``); both memories, with and
without the credit (whose writer never writes when full)."""
import pytest

from fpq_hdl.verdict_fifo import VerdictFIFO, MEMORIES

from .fifo_reference import same_as_sync_fifo_buffered


@pytest.mark.parametrize("credited", [False, True], ids=["gated", "credited"])
@pytest.mark.parametrize("memory", MEMORIES)
@pytest.mark.parametrize("depth", [2, 3, 33])
def test_same_as_sync_fifo_buffered(depth, memory, credited):
    dut = VerdictFIFO(width=12, depth=depth, memory=memory, credited=credited)
    seen = same_as_sync_fifo_buffered(dut, dut.capacity, seed=depth, credited=credited)
    assert seen["full"] > 100 and seen["empty"] > 100 and seen["reads"] > 1000
    assert seen["both"] > 100


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match=r"depth: 1 is out of the allowed range"):
        VerdictFIFO(width=8, depth=1)
    with pytest.raises(ValueError, match=r"memory: 'lut' is not one of"):
        VerdictFIFO(width=8, depth=4, memory="lut")
