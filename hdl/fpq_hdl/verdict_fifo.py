"""Verdict FIFO: a synchronous FIFO whose every flag is a register, for a fast clock."""

from amaranth import *

from amaranth.lib import memory

from .block_ram import read_register

__all__ = ["VerdictFIFO", "MEMORIES"]

#: Where the words are kept: LUT RAM ("distributed", ECP5) or block RAM ("block", iCE40).
MEMORIES = ("distributed", "block")


class VerdictFIFO(Elaboratable):
    """``amaranth.lib.fifo.SyncFIFOBuffered``'s ports and behaviour (a RAM and a read
    register that holds the word at the head, ``r_rdy``), with the fill level kept as a
    thermometer code a clock late and that clock's change: pushing shifts a 1 in, popping
    shifts one out, so "the RAM is not empty" and "the RAM is full" are each one LUT of
    flip-flops, and every one-clock loop is at most three LUT levels with no carry chain and
    no wide fan-out inside it (``SyncFIFO``'s binary level, compared with 0 and then
    counted, is a carry chain and LUTs in that loop; a thermometer kept up to date puts the
    read, a net of forty loads, before every bit of it).

    Latency: a word written in clock t can be read (``r_rdy``) in clock t + 2. Throughput: one
    write and one read per clock. Capacity: ``2**ceil(log2(depth - 1))`` words in the RAM,
    and the read register: at least ``depth``.

    Parameters
    ----------
    width : int
    depth : int
        At least 2.
    memory : str
        One of ``MEMORIES``.
    credited : bool
        The writer never writes when the FIFO is full (it counts its own credit, as the queue
        manager does): ``w_en`` is then the RAM's write enable as it comes, with no gate by
        the fill level in front of it. A LUT RAM's write enable fans out to every cell of
        the word; from a register it is a route alone, where the gate put two LUT levels and
        the read side's ``r_en`` in front of it. A write when full (a broken promise)
        overwrites the oldest word.

    Attributes
    ----------
    w_data, w_en : in; w_rdy : out
    r_data : out; r_en : in; r_rdy : out
    level : out
        Words in the FIFO (RAM and read register): a binary count kept beside the flags, for
        telemetry and tests.
    """

    def __init__(self, *, width, depth, memory="distributed", credited=False):
        if depth < 2:
            raise ValueError(f"depth: {depth} is out of the allowed range [2, ...)")
        if memory not in MEMORIES:
            raise ValueError(f"memory: {memory!r} is not one of {', '.join(MEMORIES)}")
        self.width, self.depth, self.memory = width, depth, memory
        self.credited = credited
        self.abits = max(1, (depth - 2).bit_length())
        self.capacity = (1 << self.abits) + 1
        self.w_data, self.w_en, self.w_rdy = Signal(width), Signal(), Signal()
        self.r_data, self.r_en, self.r_rdy = Signal(width), Signal(), Signal()
        self.level = Signal(range(self.capacity + 1))

    def elaborate(self, platform):
        m = Module()
        size = 1 << self.abits
        # The RAM's fill level a clock late, as a thermometer (``late[i]``: the RAM held more
        # than i words in the previous clock), beside that clock's change (``up``, ``down``,
        # registers): the flags of this clock are ``late`` moved by the change, a LUT of
        # registers each. A thermometer kept up to date would take this clock's read, which
        # follows the sink's ready and the flags, as a fan-out of forty through two LUT
        # levels into every one of its bits.
        late = Signal(size)
        up, down = Signal(), Signal()
        nonempty = Signal()
        full = Signal()
        m.d.comb += [nonempty.eq(up | Mux(down, late[1], late[0])),
                     full.eq(Mux(up, late[-2], ~down & late[-1]))]
        do_write = self.w_en if self.credited else self.w_en & ~full
        # the RAM's head moves into the read register when that is empty or being read
        do_read = nonempty & (~self.r_rdy | self.r_en)
        # the read register's enable, from a complement of ``r_rdy`` in a register of its
        # own: the same function of the same registers would be one node, of a word's fan-out,
        # that the synthesis tool shares into ``do_read`` (a route across the RAM before and
        # after it)
        r_empty = Signal(init=1)
        load = r_empty | self.r_en
        m.d.comb += self.w_rdy.eq(~full)
        m.d.sync += [up.eq(do_write & ~do_read), down.eq(do_read & ~do_write)]
        with m.If(up):
            m.d.sync += late.eq(Cat(C(1, 1), late[:-1]))
        with m.Elif(down):
            m.d.sync += late.eq(Cat(late[1:], C(0, 1)))

        m.submodules.storage = storage = memory.Memory(
            shape=self.width, depth=size, init=[],
            attrs={"ram_style": self.memory, "no_rw_check": 1})
        wp = storage.write_port()
        produce, consume = Signal(self.abits), Signal(self.abits)
        # the read register loads whenever it is free, a word at the head or not: one with no
        # word then holds a stale one that ``r_rdy`` does not offer. Its enable (a word wide)
        # is then two registers through one LUT, and ``do_read`` fans out to the pointer and
        # the flags' change registers alone
        m.d.comb += [wp.addr.eq(produce), wp.data.eq(self.w_data), wp.en.eq(do_write),
                     self.r_data.eq(read_register(m, storage, consume, en=load))]
        with m.If(do_write):
            m.d.sync += produce.eq(produce + 1)
        with m.If(do_read):
            m.d.sync += [consume.eq(consume + 1), self.r_rdy.eq(1), r_empty.eq(0)]
        with m.Elif(self.r_en):
            m.d.sync += [self.r_rdy.eq(0), r_empty.eq(1)]
        # words in the RAM, binary: a clock late like ``late``, moved by the same change
        count_late = Signal(range(size + 1))
        m.d.sync += count_late.eq(count_late + up - down)
        m.d.comb += self.level.eq(count_late + up - down + self.r_rdy)
        return m
