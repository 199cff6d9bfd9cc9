"""BlockFIFO against amaranth.lib.fifo.SyncFIFOBuffered, clock for clock: the same inputs
give the same w_rdy, r_rdy, level and (when r_rdy) r_data, under random writes and reads,
full and empty, and resets (``fifo_reference.py``)."""
import pytest

from fpq_hdl.block_fifo import BlockFIFO

from .fifo_reference import same_as_sync_fifo_buffered


@pytest.mark.parametrize("depth", [2, 3, 32])
def test_same_as_sync_fifo_buffered(depth):
    seen = same_as_sync_fifo_buffered(BlockFIFO(width=12, depth=depth), depth, seed=depth)
    assert seen["full"] > 100 and seen["empty"] > 100 and seen["reads"] > 1000


def test_depth_below_2_is_refused():
    with pytest.raises(ValueError, match="depth: 1"):
        BlockFIFO(width=8, depth=1)
