"""``fpq.marked_section``: a command's generated section of a Markdown file, rewritten in place
and the rest of the file kept."""

import pytest

from fpq.marked_section import markers, replace_section, section_bounds, write_section

BEGIN, END = markers("test")


def test_markers_name_the_section():
    assert (BEGIN, END) == ("<!-- BEGIN fpq test -->", "<!-- END fpq test -->")


def test_a_file_gets_its_section_created_appended_then_replaced(tmp_path):
    path = tmp_path / "R.md"
    write_section(path, "one\n", BEGIN, END)
    assert path.read_text() == f"{BEGIN}\none\n{END}\n"
    path.write_text("# Title\n\nprose\n")
    write_section(path, "two\n", BEGIN, END)
    assert path.read_text() == f"# Title\n\nprose\n\n{BEGIN}\ntwo\n{END}\n"
    path.write_text(path.read_text() + "tail\n")
    write_section(path, "three\n", BEGIN, END)
    assert path.read_text() == f"# Title\n\nprose\n\n{BEGIN}\nthree\n{END}\ntail\n"


@pytest.mark.parametrize("text", [f"{BEGIN}\nx\n", f"x\n{END}\n", f"{END}\n{BEGIN}\n",
                                  f"{BEGIN}\n{BEGIN}\n{END}\n", f"{BEGIN}\n{END}\n{END}\n"])
def test_a_section_of_unknown_bounds_is_refused_and_the_file_kept(tmp_path, text):
    path = tmp_path / "R.md"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"R\.md: the markers .* must stand both, in this "
                                         r"order, or neither \(each once\): fix by hand"):
        write_section(path, "new\n", BEGIN, END)
    assert path.read_text() == text


def test_replacing_in_text_needs_the_section():
    text = f"a\n{BEGIN}\nold\n{END}\nb\n"
    assert section_bounds(text, BEGIN, END) == (2, text.index(END) + len(END))
    assert replace_section(text, "new\n", BEGIN, END) == f"a\n{BEGIN}\nnew\n{END}\nb\n"
    assert section_bounds("a\n", BEGIN, END) is None
    with pytest.raises(ValueError, match="are missing"):
        replace_section("a\n", "new\n", BEGIN, END)
