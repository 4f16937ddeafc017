"""User text in generated C: the one place it is escaped.

Generated code carries the user's own words in two places: ``//`` comments (each Python
source line, the kernel's name and file) and C string literals (``print`` and ``assert``
messages).  Both pass through here; nothing else may put user text into C source.

Why it matters: a ``//`` comment whose last character is a backslash - a Python line
continuation ``y = x + \\``, a Windows path ``# C:\\temp\\`` - continues the comment over the
*next line of generated code*, which then silently disappears.  The trigraph ``??/`` is a
backslash too in compilers that still honour trigraphs.  Control characters and lone
surrogates are not C source at all.
"""

from __future__ import annotations

_SAFE_ASCII = frozenset(range(32, 127))


def comment(text: str) -> str:
    """``text`` made safe to follow ``//`` on one line of C.

    Every character that is not printable becomes a space, ``??`` is split so that no
    trigraph forms, and the text never ends in a backslash (``(continued)`` is appended
    after it, which is also what the Python line meant)."""
    chars = []
    for ch in text:
        if ch.isprintable() and _encodable(ch):
            chars.append(ch)
        else:
            chars.append(" ")
    out = "".join(chars).replace("??", "? ?").rstrip()
    if out.endswith("\\"):
        out += " (continued)"
    return out


def c_string(text: str) -> str:
    """``text`` as a C string literal: ``"``, ``\\``, ``?`` (trigraphs) and every byte that
    is not printable ASCII are escaped, so the literal is one line whatever ``text`` holds."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif byte in _SAFE_ASCII:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _encodable(ch: str) -> bool:
    try:
        ch.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True
