"""Words made of named bit fields: the one pack and unpack of the project's payloads.

A layout is an iterable of ``(name, field)`` pairs, each ``field`` with an ``offset`` (its
lowest bit) and a ``width``: an ``amaranth.lib.data`` layout (the RTL's streams, its
configuration port: ``fpq_hdl.layouts``) is one, and :func:`layout` makes one without
Amaranth (the flow keys, ``fpq.flow_hash``).
"""

from collections import namedtuple
import operator

__all__ = ["BitField", "layout", "bit_layout", "pack", "unpack"]

#: A field of a :func:`layout`: its lowest bit and its width.
BitField = namedtuple("BitField", "offset width")


def layout(*fields):
    """The layout of ``(name, width)`` pairs, the first from bit 0, each above the one before:
    a tuple of ``(name, BitField)``."""
    out, offset = [], 0
    for name, width in fields:
        out.append((name, BitField(offset, width)))
        offset += width
    return tuple(out)


def bit_layout(layout):
    """The fields of ``layout`` (an Amaranth one too) as a tuple of ``(name, BitField)``: the
    same layout, for a loop that packs or unpacks many words (an Amaranth layout makes an
    object per field each time it is iterated, several times slower)."""
    return tuple((name, BitField(f.offset, f.width)) for name, f in layout)


def pack(layout, values):
    """The word of ``values`` (field name -> integer; a bool is 0 or 1) in ``layout``. A value
    that is not an integer or does not fit its field raises ``ValueError`` naming the field
    and its range."""
    word = 0
    for name, field in layout:
        value = values[name]
        try:
            v = operator.index(value)
        except TypeError:
            v = -1
        if not 0 <= v < 1 << field.width:
            raise ValueError(f"{name}: {value!r} is out of range [0, {(1 << field.width) - 1}]")
        word |= v << field.offset
    return word


def unpack(layout, word):
    """The fields of ``word`` in ``layout``: a dict of field name -> integer."""
    return {name: (word >> f.offset) & ((1 << f.width) - 1) for name, f in layout}
