"""A generated section of a Markdown file, kept between two marker lines so that a command can
rewrite its own section and leave the rest of the file as it was."""

import os

from fpq.atomic import write_text

__all__ = ["replace_marked_section"]


def replace_marked_section(path, body, begin, end):
    """Replace what lies between the markers ``begin`` and ``end`` in the file ``path`` with
    ``body`` (the markers stay); append the markers and ``body`` if the file has neither
    marker, or create the file. The file is written atomically.

    Raises ``ValueError`` naming the file if it holds only one of the markers, or the end
    marker before the begin marker (the section's bounds are then unknown: fix it by hand).
    """
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    block = f"{begin}\n{body}{end}"
    if begin in text and end in text and text.index(begin) < text.index(end):
        a = text.index(begin)
        b = text.index(end) + len(end)
        text = text[:a] + block + text[b:]
    else:
        if begin in text or end in text:
            raise ValueError(f"{path}: the markers {begin} / {end} must stand both, in this "
                             f"order, or neither: fix by hand")
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    write_text(path, text)
