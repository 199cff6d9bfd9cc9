"""The block RAM readers of ``fpq_boards.bitstream`` on hand-written text: iCE40 ``.asc``,
with the packing of a memory's words into ``SB_RAM40_4K`` blocks against positions worked
out by hand from the primitive's model (Yosys ``techlibs/ice40/cells_sim.v``) and its memory
mapping (``techlibs/ice40/brams_map.v``); ECP5 text configuration (``.bram_init``). No
synthesis: the bitstream build tests (``test_board_build.py``, long) check real bitstreams
with them."""

import pytest

from fpq_boards.bitstream import (RAM_BITS, ecp5_bram_data, ecp5_x1_bits, find_ecp5_memory,
                                  find_ice40_memory, ice40_ram_data, ice40_ram_init)

ZERO_LINE = "0" * 64


def _section(x, y, lines):
    """A ``.ram_data`` section: ``lines`` maps an INIT line number to its 64 hex digits."""
    return [f".ram_data {x} {y}"] + [lines.get(k, ZERO_LINE) for k in range(16)]


def _asc(*sections):
    """``.asc`` text as nextpnr writes it, with other sections around the RAMs' ones."""
    lines = [".comment hand-written", ".device 5k", ".logic_tile 1 1",
             "000000000000000000000000000000000000000000000000000000"]
    for s in sections:
        lines += s
    lines += [".ramb_tile 6 5", "0000000000000000000000000000000000000000",
              ".sym 3 soc.qm.table"]
    return "\n".join(lines) + "\n"


def test_the_reader_takes_each_line_as_an_init_word_most_significant_digit_first():
    """Line k of a section is ``INIT_k``, its last hex digit bits 0-3: INIT_0 bit 9, INIT_3
    bit 5 and INIT_F bit 255 are the block's bits 9, 3 * 256 + 5 and 4095 (the 256 x 16
    mode's row 0 bit 9, row 48 bit 5, row 255 bit 15)."""
    text = _asc(_section(6, 5, {0: "0" * 61 + "200", 3: "0" * 62 + "20",
                                15: "8" + "0" * 63}),
                _section(19, 3, {}))
    rams = ice40_ram_data(text)
    assert rams == {(6, 5): (1 << 9) | (1 << (3 * 256 + 5)) | (1 << 4095), (19, 3): 0}
    assert RAM_BITS == 4096


def test_the_reader_takes_upper_case_digits_and_several_sections():
    text = _asc(_section(6, 5, {1: "F" * 64}), _section(6, 7, {2: "0" * 63 + "1"}))
    assert ice40_ram_data(text) == {(6, 5): ((1 << 256) - 1) << 256, (6, 7): 1 << 512}
    assert ice40_ram_data(".comment no block RAM\n") == {}


@pytest.mark.parametrize("change, message", [
    (lambda s: s[:5] + ["0" * 63] + s[6:], r"line 10: INIT_4 of \.ram_data 6 5 must be 64 hex "
                                           r"digits, not '0{63}'"),
    (lambda s: s[:3] + ["g" * 64] + s[4:], r"line 8: INIT_2 of \.ram_data 6 5 .* not 'g{64}'"),
    (lambda s: s[:12], r"line 17: INIT_B of \.ram_data 6 5 must be 64 hex digits, not "
                       r"'\.ramb_tile 6 5'"),
])
def test_a_broken_section_is_refused_naming_its_line(change, message):
    text = _asc(change(_section(6, 5, {})))
    with pytest.raises(ValueError, match=message):
        ice40_ram_data(text)


def test_a_tile_with_two_sections_is_refused():
    text = _asc(_section(6, 5, {}), _section(6, 5, {}))
    with pytest.raises(ValueError, match=r"line 22: a second \.ram_data section for tile "
                                         r"\(6, 5\)"):
        ice40_ram_data(text)


# Where bit j of word a lies in a block, worked out by hand: brams_map.v gives the cell the
# address {A[0], A[1], A[2], A[10:3]} of the port address A (A = a * width / 2) and takes
# port bit j from RDATA[16: 0 8 4 12 2 10 6 14 1 9 5 13 3 11 7 15 | 8: 0 8 4 12 2 10 6 14 |
# 4: 1 9 5 13 | 2: 3 11]; cells_sim.v reads RDATA[i] of the narrow modes as the bit of row
# RADDR[7:0] that RADDR[10:8] selects within the group of 2, 4 or 8 bits i heads.
@pytest.mark.parametrize("block_width, word, bit, position", [
    (16, 5, 1, 16 * 5 + 8),         # row 5, RDATA[8]
    (16, 255, 15, 4095),
    (16, 0, 4, 2),
    (8, 1, 1, 9),                   # row 0, RDATA[8]'s pair {8, 9}: the odd word's bit 9
    (8, 2, 0, 16),                  # row 1, bit 0
    (8, 511, 7, 4095),              # row 255, RDATA[14]'s pair, odd word
    (4, 1, 0, 2),                   # A = 2: RADDR[9:8] = 2, RDATA[1]'s nibble, its bit 2
    (4, 2, 0, 1),                   # A = 4: RADDR[9:8] = 1
    (4, 3, 1, 11),                  # RADDR[9:8] = 3, RDATA[9]'s nibble 8-11
    (2, 1, 0, 4),                   # RADDR[10:8] = 4, RDATA[3]'s byte 0-7
    (2, 4, 1, 8 + 1),               # RADDR[10:8] = 1, RDATA[11]'s byte 8-15
])
def test_a_word_bit_lands_where_the_primitive_reads_it(block_width, word, bit, position):
    words = [0] * (word + 1)
    words[word] = 1 << bit
    assert ice40_ram_init(words, block_width, block_width) == {(0, 0): 1 << position}


def test_a_wide_deep_memory_is_split_into_columns_and_rows():
    """22-bit words in 512 x 8 blocks: bits 16-21 in column 2 (its top 2 bits 0); 300 words
    in 256 x 16 blocks: word 256 in row 1."""
    blocks = ice40_ram_init([1 << 17, 0, 1 << 21], 22, 8)
    assert blocks == {(0, 0): 0, (0, 1): 0, (0, 2): (1 << 8) | (1 << 16 + 10)}
    words = [0] * 300
    words[256], words[299] = 1, 1 << 17
    blocks = ice40_ram_init(words, 18, 16)
    assert blocks == {(0, 0): 0, (0, 1): 0, (1, 0): 1, (1, 1): 1 << 16 * 43 + 8}


@pytest.mark.parametrize("args, message", [
    (([1], 8, 32), r"block_width: 32 must be one of 16, 8, 4, 2"),
    (([1], 0, 8), r"width: 0 must be an int >= 1"),
    (([0, 256], 8, 8), r"words: word 1 is 256, outside the allowed range \[0, 255\] of "
                       r"width 8"),
    (([True], 8, 8), r"words: word 0 is True"),
])
def test_bad_packing_arguments_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        ice40_ram_init(*args)


def test_a_memory_is_found_by_content_at_its_block_width():
    """8-bit words [0, 2, 0, 0, 1]: at 512 x 8 bits 9 and 32 of a block (16 x 16 would put
    them at 24 and 64), here in tile (6, 7); a bitstream whose blocks hold other contents
    has it nowhere."""
    text = _asc(_section(6, 5, {0: "0" * 63 + "1"}),
                _section(6, 7, {0: "0" * 55 + "100000200"}),
                _section(19, 3, {}))
    rams = ice40_ram_data(text)
    assert find_ice40_memory(rams, [0, 2, 0, 0, 1], 8) == {(0, 0): (6, 7)}
    assert find_ice40_memory(rams, [0, 2, 0, 0, 3], 8) is None
    # two equal blocks need two tiles
    assert find_ice40_memory(rams, [1] + [0] * 255 + [1], 1) is None


# ---- ECP5: Project Trellis's text configuration ---------------------------------------------
def _bram(number, values):
    """A ``.bram_init`` section: ``values`` maps a value's index to its 3 hex digits."""
    items = [values.get(u, "000") for u in range(2048)]
    return [f".bram_init {number}"] + [" ".join(items[i:i + 8]) for i in range(0, 2048, 8)]


def _config(*sections):
    """Text configuration as nextpnr writes it, with other sections around the RAMs'."""
    lines = [".device LFE5U-85F", "", ".comment Part: LFE5U-85F-6CABGA381", "",
             ".tile MIB_R13C4:MIB_EBR0", "unknown: F0B0", ""]
    for s in sections:
        lines += s + [""]
    lines += [".tile_group R1C1:PLC2", "unknown: F1B1"]
    return "\n".join(lines) + "\n"


def test_the_ecp5_reader_takes_the_values_in_order_and_x1_addresses_by_8():
    """Value 0's bit 0, value 1's bit 7 and value 2047's bit 7 are a x1 tile's addresses 0,
    15 and 16383; a value with its parity bit (bit 8) set is no x1 tile's."""
    text = _config(_bram(3, {0: "001", 1: "080", 2047: "080"}), _bram(12, {5: "1ff"}))
    brams = ecp5_bram_data(text)
    assert sorted(brams) == [3, 12] and len(brams[3]) == 2048
    assert brams[3][:3] == (1, 0x80, 0) and brams[12][5] == 0x1ff
    assert ecp5_x1_bits(brams[3]) == 1 | (1 << 15) | (1 << 16383)
    assert ecp5_x1_bits(brams[12]) is None


def test_the_x1_view_reads_back_what_the_hdl_writes_as_initval():
    """``fpq_hdl.block_ram.dp16kd_initval``'s parameters, turned into ``.bram_init`` values
    as nextpnr's ECP5 bitstream writer does (value ``32 i + 2 j + h`` is INITVAL_i's bits
    ``20 j + 9 h`` to ``+ 8``), are the same bits in the x1 view."""
    import random
    from fpq_hdl.block_ram import dp16kd_initval
    rnd = random.Random(31)
    bits = [rnd.getrandbits(1) for _ in range(16384)]
    params = dp16kd_initval(bits)
    values = [params[f"INITVAL_{u // 32:02X}"] >> (20 * (u % 32 // 2) + 9 * (u % 2)) & 0x1ff
              for u in range(2048)]
    assert ecp5_x1_bits(values) == sum(b << a for a, b in enumerate(bits))


@pytest.mark.parametrize("change, message", [
    (lambda s: s[:-1], r"line 8: \.bram_init 3 holds 2040 values, not 2048"),
    (lambda s: s[:2] + ["000 " * 7 + "200"] + s[3:],
     r"line 10: '200' in \.bram_init 3 is not a 9-bit value of 3 hex digits \(000 to 1ff\)"),
    (lambda s: s[:2] + ["000 " * 7 + "0001"] + s[3:], r"line 10: '0001' in \.bram_init 3"),
])
def test_a_broken_bram_section_is_refused_naming_its_line(change, message):
    with pytest.raises(ValueError, match=message):
        ecp5_bram_data(_config(change(_bram(3, {}))))


def test_a_bram_with_two_sections_is_refused():
    with pytest.raises(ValueError, match=r"a second \.bram_init section for block RAM 3"):
        ecp5_bram_data(_config(_bram(3, {}), _bram(3, {})))


def test_a_memory_is_found_in_its_x1_tiles_by_content():
    """3-bit words [1, 2, 4]: bit c of word c, address c of column c's tile; 16385 1-bit
    words: the last one in a second row's tile."""
    text = _config(_bram(5, {0: "001"}), _bram(3, {0: "002"}), _bram(9, {0: "004"}),
                   _bram(4, {}), _bram(6, {0: "101"}))
    brams = ecp5_bram_data(text)
    assert find_ecp5_memory(brams, [1, 2, 4], 3) == {(0, 0): 5, (0, 1): 3, (0, 2): 9}
    assert find_ecp5_memory(brams, [0] * 16384 + [1], 1) == {(0, 0): 4, (1, 0): 5}
    assert find_ecp5_memory(brams, [1, 2, 4, 1], 3) is None
    # the tile with a parity bit set is not an x1 tile holding address 0
    assert find_ecp5_memory({6: brams[6]}, [1], 1) is None
    with pytest.raises(ValueError, match=r"words: word 0 is 8, outside the allowed range "
                                         r"\[0, 7\] of width 3"):
        find_ecp5_memory(brams, [8], 3)
