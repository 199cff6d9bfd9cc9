"""What an iCE40 or ECP5 bitstream holds in its block RAMs at power-on.

iCE40
-----
nextpnr writes the placed and routed design as IceStorm's ``.asc`` text (``top.asc`` in a
build's folder), which ``icepack`` turns into the bitstream bit for bit. Each used
``SB_RAM40_4K`` has a ``.ram_data X Y`` section there: 16 lines of 64 hex digits, line ``k``
the cell's ``INIT_k`` parameter as a 256-bit number, most significant digit first.

:func:`ice40_ram_data` reads those sections; :func:`ice40_ram_init` gives the contents a
memory of the design must have in the block RAMs Yosys maps it onto, and
:func:`find_ice40_memory` finds those block RAMs in a bitstream by content (which block a
memory lands in is nextpnr's placement, not known beforehand).

The iCE40 functions' bit order is the ``SB_RAM40_4K``'s own (Yosys ``techlibs/ice40/cells_sim.v``):
bit ``s`` of a block's 4096 is bit ``s % 256`` of ``INIT_{s // 256}``, which is bit
``s % 16`` of the 16-bit row ``s // 16`` the block reads in its 256 x 16 mode.

ECP5
----
nextpnr writes the ECP5 design as Project Trellis's text configuration (``top.config``),
which ``ecppack`` packs into the bitstream. Each ``DP16KD`` has a ``.bram_init N``
section there (``N`` the block RAM's number on the chip): its 18 Kbit as
2048 9-bit values in hex, 8 a line: value ``u`` is the 9 bits from bit ``20 j + 9 h`` of
``INITVAL_{u // 32}``, ``j = (u % 32) // 2``, ``h = u % 2`` (each ``INITVAL`` holds 16
18-bit words, each in a 20-bit field).
:func:`ecp5_bram_data` reads them; :func:`find_ecp5_memory` finds a memory in them that
``fpq_hdl.block_ram.BlockRAM(style="ecp5")`` lays out in 16384 x 1 tiles, where address
``a`` of a tile is bit ``a % 8`` of value ``a // 8`` (bit 8 of each, the parity bit, unused).
"""

import re

from fpq_hdl.block_ram import ECP5_TILE_DEPTH

__all__ = ["RAM_BITS", "ICE40_RAM_WIDTHS", "ice40_ram_data", "ice40_ram_init",
           "find_ice40_memory", "ECP5_BRAM_VALUES", "ecp5_bram_data",
           "ecp5_x1_bits", "find_ecp5_memory"]

#: The bits of an iCE40 block RAM (``SB_RAM40_4K``).
RAM_BITS = 4096
#: The data widths an ``SB_RAM40_4K`` port has (its 256 x 16, 512 x 8, 1024 x 4 and
#: 2048 x 2 modes).
ICE40_RAM_WIDTHS = (16, 8, 4, 2)

_LINES = 16
_DIGITS = RAM_BITS // _LINES // 4
_HEADER = re.compile(r"\.ram_data (\d+) (\d+)")
_HEX_LINE = re.compile(rf"[0-9a-fA-F]{{{_DIGITS}}}")


def ice40_ram_data(text):
    """The block RAMs' contents in IceStorm ``.asc`` text (``top.asc``): a dict from each
    ``.ram_data`` section's tile ``(x, y)`` to the block's 4096 bits as an integer, bit
    ``s`` the block's bit ``s`` (the module's bit order). nextpnr writes a section for each
    block RAM the design uses, all 0 ones included.

    A section that is not 16 lines of 64 hex digits raises ``ValueError`` naming its line in
    ``text`` (1-based)."""
    lines = text.splitlines()
    rams = {}
    for n, line in enumerate(lines):
        m = _HEADER.fullmatch(line.strip())
        if not m:
            continue
        where = (int(m.group(1)), int(m.group(2)))
        if where in rams:
            raise ValueError(f"line {n + 1}: a second .ram_data section for tile {where}")
        value = 0
        for k in range(_LINES):
            i = n + 1 + k
            row = lines[i].strip() if i < len(lines) else ""
            if not _HEX_LINE.fullmatch(row):
                raise ValueError(f"line {i + 1}: INIT_{k:X} of .ram_data {where[0]} "
                                 f"{where[1]} must be {_DIGITS} hex digits, not {row!r}")
            value |= int(row, 16) << (k * RAM_BITS // _LINES)
        rams[where] = value
    return rams


def _checked_words(words, width):
    """``words`` as a list, each checked to be a ``width``-bit word (``ValueError`` naming
    the argument and its range if not)."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"width: {width!r} must be an int >= 1")
    words = list(words)
    for a, word in enumerate(words):
        if isinstance(word, bool) or not isinstance(word, int) or not 0 <= word < 1 << width:
            raise ValueError(f"words: word {a} is {word!r}, outside the allowed range "
                             f"[0, {(1 << width) - 1}] of width {width}")
    return words


def _swizzle(g):
    """The block bit of bit ``g`` of the linear layout Yosys's memory mapping gives a block
    (word ``a`` of width ``w`` at bits ``a * w`` up): its 4 low bits reversed, as
    ``techlibs/ice40/brams_map.v`` (``slice_init``) passes them to ``SB_RAM40_4K`` (whose
    narrow modes take their data bits from every 2nd, 4th, 8th of the 16 bits of a row)."""
    low = g & 15
    return (g & ~15) | int(f"{low:04b}"[::-1], 2)


def ice40_ram_init(words, width, block_width):
    """The contents of the block RAMs a memory of ``width``-bit ``words`` takes when Yosys
    maps it onto ``SB_RAM40_4K`` with ports ``block_width`` bits wide (one of
    ``ICE40_RAM_WIDTHS``; the netlist's ``READ_MODE`` 0-3 is 16, 8, 4, 2): a dict from
    ``(row, column)`` to the block's 4096 bits (the module's bit order). Block ``(r, c)``
    holds bits ``c * block_width`` up of words ``r * depth`` up, ``depth = 4096 //
    block_width``; bits the memory has not (above ``width``, past its last word) are 0,
    as in the bitstream.

    Parameters
    ----------
    words : sequence of int
        The memory's words for addresses 0, 1, ..., each in ``[0, 2**width)``.
    width : int
        The memory's word width (> 0).
    block_width : int
        The block RAM's port width."""
    if block_width not in ICE40_RAM_WIDTHS:
        raise ValueError(f"block_width: {block_width!r} must be one of "
                         f"{', '.join(map(str, ICE40_RAM_WIDTHS))}")
    words = _checked_words(words, width)
    depth = RAM_BITS // block_width
    rows = max(1, -(-len(words) // depth))
    columns = -(-width // block_width)
    blocks = {}
    for r in range(rows):
        for c in range(columns):
            value = 0
            for a, word in enumerate(words[r * depth:(r + 1) * depth]):
                part = word >> (c * block_width) & ((1 << block_width) - 1)
                for j in range(block_width):
                    if part >> j & 1:
                        value |= 1 << _swizzle(a * block_width + j)
            blocks[r, c] = value
    return blocks


def find_ice40_memory(rams, words, width):
    """Where a memory of ``width``-bit ``words`` is in a bitstream's block RAMs ``rams``
    (:func:`ice40_ram_data`), by content: for the first port width of
    ``ICE40_RAM_WIDTHS`` at which every block of :func:`ice40_ram_init` equals a block of
    ``rams`` (each block a different one), a dict from ``(row, column)`` to its tile
    ``(x, y)``; None if at no width. Blocks of equal contents are not told apart (all 0
    ones least of all), so the memories to look for are those whose blocks differ from
    each other and from the design's other memories."""
    for block_width in ICE40_RAM_WIDTHS:
        placed, taken = {}, set()
        for key, value in ice40_ram_init(words, width, block_width).items():
            tile = next((t for t, v in sorted(rams.items()) if v == value and t not in taken),
                        None)
            if tile is None:
                break
            placed[key] = tile
            taken.add(tile)
        else:
            return placed
    return None


#: The 9-bit values of a ``.bram_init`` section (an ECP5 ``DP16KD``'s 18 Kbit).
ECP5_BRAM_VALUES = 2048
_BRAM_HEADER = re.compile(r"\.bram_init (\d+)")
_BRAM_VALUE = re.compile(r"[0-9a-fA-F]{3}")


def ecp5_bram_data(text):
    """The block RAMs' contents in a Project Trellis text configuration (``top.config``): a
    dict from each ``.bram_init`` section's block RAM number to its 2048 9-bit values (a
    tuple, in the file's order). nextpnr writes a section for each ``DP16KD`` of the
    design, all 0 ones included.

    A section that does not hold 2048 values of 3 hex digits each, each below 512, raises
    ``ValueError`` naming its line in ``text`` (1-based)."""
    lines = text.splitlines()
    brams = {}
    n = 0
    while n < len(lines):
        m = _BRAM_HEADER.fullmatch(lines[n].strip())
        n += 1
        if not m:
            continue
        number, start = int(m.group(1)), n
        if number in brams:
            raise ValueError(f"line {start}: a second .bram_init section for block RAM "
                             f"{number}")
        values = []
        while n < len(lines) and lines[n].strip() and not lines[n].startswith("."):
            for item in lines[n].split():
                if not _BRAM_VALUE.fullmatch(item) or int(item, 16) >= 1 << 9:
                    raise ValueError(f"line {n + 1}: {item!r} in .bram_init {number} is not "
                                     f"a 9-bit value of 3 hex digits (000 to 1ff)")
                values.append(int(item, 16))
            n += 1
        if len(values) != ECP5_BRAM_VALUES:
            raise ValueError(f"line {start}: .bram_init {number} holds {len(values)} values, "
                             f"not {ECP5_BRAM_VALUES}")
        brams[number] = tuple(values)
    return brams


def ecp5_x1_bits(values):
    """The 16384 bits of a ``DP16KD`` used as 16384 x 1 from its 2048 9-bit values
    (:func:`ecp5_bram_data`), as an integer whose bit ``a`` is address ``a``; None if a
    value's parity bit (bit 8), which the x1 mode does not use, is set: not an x1 tile."""
    if any(v >> 8 for v in values):
        return None
    return int.from_bytes(bytes(values), "little")


def find_ecp5_memory(brams, words, width):
    """Where a memory of ``width``-bit ``words`` laid out as ``BlockRAM(style="ecp5")``
    does (16384 x 1 ``DP16KD`` tiles: tile ``(row, column)`` holds bit ``column`` of words
    ``row * 16384`` up) is in a bitstream's block RAMs ``brams`` (:func:`ecp5_bram_data`),
    by content: a dict from ``(row, column)`` to the block RAM number, each tile a
    different one; None if a tile is in none. Tiles of equal contents are not told apart
    (all 0 ones least of all)."""
    words = _checked_words(words, width)
    x1 = {n: ecp5_x1_bits(v) for n, v in sorted(brams.items())}
    placed, taken = {}, set()
    rows = max(1, -(-len(words) // ECP5_TILE_DEPTH))
    for r in range(rows):
        part = words[r * ECP5_TILE_DEPTH:(r + 1) * ECP5_TILE_DEPTH]
        for c in range(width):
            value = sum(1 << a for a, word in enumerate(part) if word >> c & 1)
            n = next((n for n, v in x1.items() if v == value and n not in taken), None)
            if n is None:
                return None
            placed[r, c] = n
            taken.add(n)
    return placed
