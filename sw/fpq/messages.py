"""Input quoted in error messages: at most a short prefix of it.

A message names the field and the allowed range; the bad value itself is shown for
recognition only, so a value of megabytes (a 5 MB string, an integer of thousands of digits)
is cut to its first characters instead of filling the terminal or a log line.
:func:`bounded` is the last guard, for a whole message built elsewhere (an operating-system
error naming a path of 100,000 characters, argparse quoting a bad argument).
"""

import re

__all__ = ["brief", "bounded", "QUOTED_CHARS", "MESSAGE_CHARS"]

#: The most characters of a value's ``repr`` an error message quotes.
QUOTED_CHARS = 40
#: The most characters of an error message (the longest the project writes, a list of
#: allowed keys, is about 600).
MESSAGE_CHARS = 1000


def brief(value, limit=QUOTED_CHARS):
    """``repr(value)``, cut to ``limit`` characters with ``...`` and the full length when
    longer (``'99999999...' (5000000 characters)``). Integers too long for ``repr`` (Python
    refuses to print more than 4300 digits) are shown by their digit count."""
    try:
        text = repr(value)
    except ValueError:                       # an int beyond sys.get_int_max_str_digits()
        return f"an integer of {value.bit_length()} bits"
    if len(text) <= limit:
        return text
    return f"{text[:limit - 3]}... ({len(text)} characters)"


def bounded(message, limit=MESSAGE_CHARS):
    """``message`` cut to about ``limit`` characters. A longer one first has each quoted
    string (``'...'``, as ``repr`` and argparse quote a value) longer than
    ``QUOTED_CHARS`` cut as :func:`brief` cuts it; if it is still too long, it keeps its
    start (which names the field) and its end (which says what is allowed) and says how
    much it left out between them."""
    text = str(message)
    if len(text) <= limit:
        return text
    text = _QUOTED.sub(lambda m: f"{m.group(0)[:QUOTED_CHARS - 3]}... "
                                 f"({len(m.group(0))} characters)", text)
    if len(text) <= limit:
        return text
    head, tail = limit // 3, limit // 3
    return f"{text[:head]} ... [{len(text) - head - tail} characters left out] ... " \
           f"{text[-tail:]}"


_QUOTED = re.compile("'[^'\\n]{%d,}'" % QUOTED_CHARS)
