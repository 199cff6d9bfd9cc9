"""Input quoted in error messages: at most a short prefix of it.

A message names the field and the allowed range; the bad value itself is shown for
recognition only, so a value of megabytes (a 5 MB string, an integer of thousands of digits)
is cut to its first characters instead of filling the terminal or a log line.
"""

__all__ = ["brief", "QUOTED_CHARS"]

#: The most characters of a value's ``repr`` an error message quotes.
QUOTED_CHARS = 40


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
