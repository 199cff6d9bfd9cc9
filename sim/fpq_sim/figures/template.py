"""The prose of the RESULTS.md section: the template ``fpq_sim/templates/results.md`` (its first
lines describe its format), read into sections and filled in with the numbers; and how those
numbers are written."""

import functools
import os
import string

__all__ = ["TEMPLATE", "ProseFormatter", "sections", "prose", "pct", "overlap", "DISC_LABEL"]

#: The template, package data of ``fpq_sim``.
TEMPLATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "templates", "results.md")

#: The queue disciplines' names in the prose, the tables and the plots' legends.
DISC_LABEL = {"fpq": "FPQ", "red": "RED", "codel": "CoDel", "pie": "PIE"}


class ProseFormatter(string.Formatter):
    """``str.format`` with one addition: a field whose value is True or False writes one of
    the two texts of its spec, ``{flag:if true||if false}``."""

    def format_field(self, value, spec):
        if isinstance(value, bool):
            if not spec:
                raise ValueError(f"a True/False field needs its texts, {{flag:if true||if "
                                 f"false}}; got {value} without any")
            yes, _, no = spec.partition("||")
            return yes if value else no
        return super().format_field(value, spec)


@functools.cache
def sections(path=TEMPLATE):
    """``{name: text}`` of the template ``path`` (its format: the template's first lines)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", "")
    found, name, lines = {}, None, []
    for line in text.split("\n") + ["%% "]:
        if not line.startswith("%% "):
            lines.append(line)
            continue
        if name is not None:
            found[name] = "\n".join(lines).rstrip("\n")
        name, lines = line[3:].strip(), []
        if name in found:
            raise ValueError(f"{path}: section {name!r} appears twice")
    return found


def prose(name, **fields):
    """Section ``name`` of the template with ``fields`` filled in."""
    try:
        text = sections()[name]
    except KeyError:
        raise KeyError(f"{TEMPLATE}: no section {name!r}") from None
    try:
        return ProseFormatter().vformat(text, (), fields)
    except KeyError as exc:
        raise KeyError(f"{TEMPLATE}, section {name!r}: field {exc} not given") from None


def pct(x, digits=1):
    """A fraction as a percentage; an estimate as ``m % [lo, hi]``, the interval clipped to
    the possible range [0, 100 %]."""
    if hasattr(x, "lo"):
        x = x.clip(0.0, 1.0)
        return (f"{100 * x.mean:.{digits}f} % [{100 * x.lo:.{digits}f}, "
                f"{100 * x.hi:.{digits}f}]")
    return f"{100 * x:.{digits}f} %"


def overlap(a, b):
    """Whether two estimates' intervals overlap (no difference shown at 95 %)."""
    return a.lo <= b.hi and b.lo <= a.hi
