"""The read decode of a block of registers on the bus: the words by address, registered."""

import operator
from functools import reduce

from amaranth import *

__all__ = ["read_decode", "word_select", "onehot_select", "ONE_STAGE_SELECTS"]

#: ``read_decode``'s one-stage selects: "switch" (a case per word) or "array" (one select of
#: the power-of-two array below the highest word, and the address bits above it 0).
ONE_STAGE_SELECTS = ("switch", "array")


def word_select(words, sel):
    """``words[sel]``, 0 where ``words`` (a dict: index -> 32-bit value) has none, for every
    value of ``sel``: one select of a power-of-two array, which Yosys makes a tree of wide
    multiplexers on ``sel``'s bits (a chain of compares, one per word, is what a ``Switch``
    over sparse addresses becomes)."""
    assert all(0 <= i < 1 << len(sel) for i in words), "a word's index beyond the select"
    return Array(words.get(i, Const(0, 32)) for i in range(1 << len(sel)))[sel]


def onehot_select(words, onehot):
    """``words[i]`` for the one bit ``i`` set in ``onehot`` (0 where ``words``, a dict: index
    -> 32-bit value, has none): an OR of ANDs with the one-hot lines, which, registered, keep
    a decode of the index out of the select (``word_select`` decodes it in the select's
    clock, and Yosys shares that decode between every select on the same index)."""
    out = Const(0, 32)
    for i, word in sorted(words.items()):
        assert 0 <= i < len(onehot), "a word's index beyond the one-hot lines"
        out = out | Mux(onehot[i], word, 0)
    return out


def read_decode(m, r_en, word_addr, words, *, stages=1, one_stage="switch", group_bits=3,
                setup=0, load_with_read=False):
    """The read data of a block of registers: ``words[word_addr]`` (``words``: a dict, word
    address -> 32-bit value) sampled in the clock of ``r_en`` and shown ``stages`` clocks
    later in a register, 0 in the other clocks and for addresses without a word
    (``BusSignature``'s read). Returns that register.

    Parameters
    ----------
    m : Module
    r_en : Value
        The read strobe.
    word_addr : Value
        The word address (the bus address without its two low bits), stable in ``r_en``'s
        clock (and ``setup`` clocks before it).
    words : dict
        Word address -> value read there.
    stages : int
        1: one select from the address, registered. 2: the select in two registered stages,
        for a clock at which one select is too slow: in ``r_en``'s clock each group of
        ``2**group_bits`` words selects on the address's low bits into a register per group,
        a clock later the group on the bits above (0 above the last group).
    one_stage : str
        One of ``ONE_STAGE_SELECTS``, the select with ``stages`` 1: "switch", a case per word
        over the whole address; "array", ``word_select`` on the bits up to the highest word's
        and an AND with "the bits above are 0".
    group_bits : int
        With ``stages`` 2: address bits each group selects on.
    setup : int
        With ``stages`` 2: 0, or the clocks (1 or 2) ``word_addr`` is stable before ``r_en``:
        then the first stage's decode is registered ahead, each group's own one-hot lines (all
        0 when the address is not in the group), so that its select is an OR of ANDs and the
        second stage an OR of the groups; with 2 the decode takes two registered stages (the
        low bits' one-hot and each group's hit, then the group's lines).
    load_with_read : bool
        With ``stages`` 2 and ``setup`` 0: the first stage's registers (the groups, the
        address's high bits) load only in a clock of ``r_en``, so that they are registers of
        the block's own, which Yosys does not merge with another target's copies of the same
        address bits.
    """
    assert stages in (1, 2) and one_stage in ONE_STAGE_SELECTS
    assert not (setup and load_with_read)
    r_live = Signal(32)
    if stages == 1 and one_stage == "switch":
        r_data = Signal(32)
        with m.Switch(word_addr):
            for a, word in words.items():
                with m.Case(a):
                    m.d.comb += r_data.eq(word)
        m.d.sync += r_live.eq(Mux(r_en, r_data, 0))
    elif stages == 1:
        bits = max(words).bit_length()
        m.d.sync += r_live.eq(Mux(r_en & (word_addr[bits:] == 0),
                                  word_select(words, word_addr[:bits]), 0))
    else:
        group_regs = _group_stage(m, r_en, word_addr, words, group_bits, setup, load_with_read)
        valid, r_data = _second_stage(m, r_en, word_addr, group_regs, group_bits, setup,
                                      load_with_read)
        m.d.sync += r_live.eq(Mux(valid, r_data, 0))
    return r_live


def _group_stage(m, r_en, word_addr, words, group_bits, setup, load_with_read):
    """The first of two stages: a register per group of ``2**group_bits`` words, its word
    selected by the address's low bits (``read_decode``). Returns the registers by group."""
    groups = {}
    for a, word in words.items():
        groups.setdefault(a >> group_bits, {})[a & ((1 << group_bits) - 1)] = word
    group_regs, read_low = {}, None
    for g, words in sorted(groups.items()):
        reg = group_regs[g] = Signal(32, name=f"read_group_{g}")
        if setup:
            # each group's own one-hot lines, decoded a clock ahead and all 0 when the address
            # is not in the group: registers placed by the group's words (one set shared by
            # every group fans out across the chip), and the second stage an OR of the groups
            onehot = Signal(1 << group_bits, name=f"read_onehot_{g}")
            low = Const(1, 1 << group_bits) << word_addr[:group_bits]
            hit = word_addr[group_bits:] == g
            if setup >= 2:
                # the group's hit a register of its own (a compare of the address's high
                # bits), the low bits' one-hot shared
                if read_low is None:
                    read_low = Signal(1 << group_bits, name="read_low")
                    m.d.sync += read_low.eq(low)
                hit_r = Signal(name=f"read_hit_{g}")
                m.d.sync += hit_r.eq(hit)
                low, hit = read_low, hit_r
            m.d.sync += onehot.eq(Mux(hit, low, 0))
            m.d.sync += reg.eq(onehot_select(words, onehot))
        elif load_with_read:
            with m.If(r_en):
                m.d.sync += reg.eq(word_select(words, word_addr[:group_bits]))
        else:
            m.d.sync += reg.eq(word_select(words, word_addr[:group_bits]))
    return group_regs


def _second_stage(m, r_en, word_addr, group_regs, group_bits, setup, load_with_read):
    """The second of two stages, in the clock after ``r_en``: the group (``read_decode``).
    Returns whether the read's data counts (a register: the read, its address at or below
    the last group) and the group's word."""
    r_en1 = Signal()
    if setup:
        m.d.sync += r_en1.eq(r_en)
        return r_en1, reduce(operator.or_, group_regs.values())
    # the group: a select of the group registers, 0 above them
    sel_bits = max(1, max(group_regs).bit_length())
    high1 = Signal(sel_bits)
    top_zero = word_addr[group_bits + sel_bits:] == 0
    if load_with_read:
        top_zero1 = Signal(name="read_top_zero")
        with m.If(r_en):
            m.d.sync += [high1.eq(word_addr[group_bits:]), top_zero1.eq(top_zero)]
        m.d.sync += r_en1.eq(r_en)
        valid = r_en1 & top_zero1
    else:
        m.d.sync += [high1.eq(word_addr[group_bits:]), r_en1.eq(r_en & top_zero)]
        valid = r_en1
    return valid, word_select(group_regs, high1)
