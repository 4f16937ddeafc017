"""``print()`` in CPU kernels: records written by the kernel, formatted on the host.

The kernel's ``printf`` (:mod:`.crt`) appends one record per call to the module's print
buffer: its length in words, the address of the format string, then each argument as a
64-bit word (integers as they are, doubles by their bits, strings by their address).  After
the launch, :meth:`PrintBuffer.flush` formats the records in order with Python's ``%``
operator - which follows C's conversions (``%g`` included) - and writes the text to
``sys.stdout``.  The output so appears when the kernel has finished, before any wait on it
returns: what Ember promises on every backend.
"""

from __future__ import annotations

import ctypes
import re
import struct
import sys
import threading

import numpy as np

WORDS = 1 << 17  # 1 MiB of records per module, like CUDA's default printf buffer
_CONVERSION = re.compile(r"%(%|[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?([diouxXeEfFgGcs]))")


class PrintBuffer:
    """The print buffer of one loaded module (its ``em_print_buffer`` points here)."""

    def __init__(self, pointer: ctypes.c_void_p):
        self.words = np.zeros(WORDS + 2, np.int64)
        self.words[1] = WORDS
        pointer.value = self.words.ctypes.data
        self.lock = threading.Lock()  # one printing launch of the module at a time

    def flush(self) -> None:
        """Format and write the records of the launch that just ended, then empty."""
        used = int(self.words[0])
        if not used:
            return
        kept = min(used, WORDS)
        records = self.words[2 : 2 + kept].tolist()
        self.words[0] = 0
        text = format_records(records)
        if used > WORDS:
            text += f"[ember: {used - WORDS} words of kernel print() output were lost]\n"
        sys.stdout.write(text)
        sys.stdout.flush()


def format_records(words: list[int]) -> str:
    """The text of a list of records (see the module docstring)."""
    out, k = [], 0
    while k + 2 <= len(words):
        size = words[k]
        if size < 2 or k + size > len(words):
            break  # a record cut off at the end of a full buffer
        fmt = ctypes.string_at(words[k + 1]).decode("utf-8", "replace")
        out.append(format_one(fmt, words[k + 2 : k + size]))
        k += size
    return "".join(out)


def format_one(fmt: str, args: list[int]) -> str:
    """One C format string applied to its argument words."""
    parts, last, n = [], 0, 0
    for m in _CONVERSION.finditer(fmt):
        parts.append(fmt[last : m.start()])
        last = m.end()
        if m.group(1) == "%":
            parts.append("%")
            continue
        conv = m.group(2)
        spec = re.sub(r"(hh|h|ll|l|z|j|t)", "", m.group(0))
        word = args[n] if n < len(args) else 0
        n += 1
        parts.append(spec % _value(conv, word))
    parts.append(fmt[last:])
    return "".join(parts)


def _value(conv: str, word: int):
    if conv in "eEfFgG":
        return struct.unpack("<d", struct.pack("<q", word))[0]
    if conv == "s":
        return ctypes.string_at(word).decode("utf-8", "replace") if word else "(null)"
    if conv == "c":
        return chr(word & 0xFF)
    if conv in "uxXo":
        return word & 0xFFFFFFFFFFFFFFFF
    return word
