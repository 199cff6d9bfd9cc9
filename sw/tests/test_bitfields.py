"""``fpq.bitfields``: words of named bit fields, packed and unpacked."""

import pytest
from hypothesis import given, strategies as st

from fpq.bitfields import BitField, layout, bit_layout, pack, unpack

WORD = layout(("ecn", 1), ("length", 16), ("flow", 104))


def test_a_layout_places_its_fields_from_bit_0_upward():
    assert WORD == (("ecn", BitField(0, 1)), ("length", BitField(1, 16)),
                    ("flow", BitField(17, 104)))
    assert bit_layout(WORD) == WORD


@given(ecn=st.booleans(), length=st.integers(0, 2**16 - 1), flow=st.integers(0, 2**104 - 1))
def test_unpack_gives_back_what_pack_packed(ecn, length, flow):
    word = pack(WORD, dict(ecn=ecn, length=length, flow=flow))
    assert word == ecn | length << 1 | flow << 17
    assert unpack(WORD, word) == dict(ecn=int(ecn), length=length, flow=flow)


@pytest.mark.parametrize("length", [2**16, -1, 1.0, "5"])
def test_a_value_that_does_not_fit_is_named_with_its_range(length):
    with pytest.raises(ValueError, match=rf"^length: {length!r} is out of range \[0, 65535\]$"):
        pack(WORD, dict(ecn=0, length=length, flow=0))


def test_an_amaranth_layout_packs_as_its_bit_layout():
    pytest.importorskip("amaranth")
    from fpq_hdl.layouts import VERDICT
    values = dict(seq=7, action=2, n=300, avg=12345, prob=2**32)
    assert pack(VERDICT, values) == pack(bit_layout(VERDICT), values)
    assert unpack(VERDICT, pack(VERDICT, values)) == values
