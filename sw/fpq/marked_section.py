"""Generated sections of a Markdown file: the text between the marker lines ``<!-- BEGIN fpq
NAME -->`` and ``<!-- END fpq NAME -->`` comes from a command, which rewrites it and leaves the
rest of the file as it was (docs/RESULTS.md's accuracy, parity, figures and crosscheck
sections, docs/BENCHMARKS.md's tables, README.md's status, docs/DATASHEET.md's sections)."""

import os

from .atomic import write_text

__all__ = ["markers", "section_bounds", "replace_section", "write_section"]


def markers(name):
    """``(begin, end)``: the marker lines of the section ``name``."""
    return f"<!-- BEGIN fpq {name} -->", f"<!-- END fpq {name} -->"


def section_bounds(text, begin, end):
    """Where the section between the markers ``begin`` and ``end`` lies in ``text``: the
    index of ``begin`` and the index just past ``end``; None when ``text`` holds neither.
    ``ValueError`` when it holds only one, either twice, or the end before the begin (the
    section's bounds are then unknown)."""
    if begin not in text and end not in text:
        return None
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"the markers {begin} / {end} must stand both, in this order, or "
                         f"neither (each once)")
    return text.index(begin), text.index(end) + len(end)


def replace_section(text, body, begin, end):
    """``text`` with what lies between the markers replaced by ``body`` (the markers stay);
    ``ValueError`` as :func:`section_bounds`, and when ``text`` has neither marker."""
    bounds = section_bounds(text, begin, end)
    if bounds is None:
        raise ValueError(f"the markers {begin} / {end} are missing")
    return text[:bounds[0]] + f"{begin}\n{body}{end}" + text[bounds[1]:]


def write_section(path, body, begin, end):
    """Replace what lies between the markers ``begin`` and ``end`` in the file ``path`` with
    ``body`` (the markers stay); append the markers and ``body`` if the file has neither
    marker, or create the file. The file is written atomically.

    Raises ``ValueError`` naming the file if it holds only one of the markers, one twice, or
    the end marker before the begin marker (the section's bounds are then unknown: fix it by
    hand)."""
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    try:
        bounds = section_bounds(text, begin, end)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}: fix by hand") from None
    block = f"{begin}\n{body}{end}"
    if bounds is None:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    else:
        text = text[:bounds[0]] + block + text[bounds[1]:]
    write_text(path, text)
