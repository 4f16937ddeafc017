"""User-facing compile errors: ``file:line:col``, the source line with a caret, stage, hint.

Every mistake in a kernel is reported through :func:`error`, which builds the message::

    cannot add float32 and array(float32, 1d, contiguous)
      --> /home/me/axpy.py:7:16 (in axpy)
       |
     7 |         y[i] = a * x + y[i]
       |                ^^^^^
      stage: typing (Python -> typed IR)
      hint: index the array to get an element: x[i]

The exception also carries the pieces as attributes (``filename``, ``line``, ``col``,
``stage``, ``hint``) for tools.
"""

from __future__ import annotations

from ember.frontend.capture import Loc

STAGE_CAPTURE = "capture (reading the Python source)"
STAGE_SYNTAX = "syntax (Python AST -> kernel)"
STAGE_TYPING = "typing (Python -> typed IR)"
STAGE_TARGET = "target check (features of the device)"
STAGE_LAUNCH = "launch (checking the arguments)"


def format_location(loc: Loc) -> str:
    """The ``-->`` line, the numbered source line and a caret under the columns of ``loc``."""
    number = str(loc.line)
    pad = " " * len(number)
    text = loc.text.rstrip()
    width = max(1, min(loc.end_col, len(text) + 1) - loc.col)
    caret = " " * (loc.col - 1) + "^" * width
    return (
        f"  --> {loc.filename}:{loc.line}:{loc.col} (in {loc.function})\n"
        f"  {pad} |\n"
        f"  {number} | {text}\n"
        f"  {pad} | {caret}"
    )


def error(
    cls: type[Exception],
    message: str,
    loc: Loc | None,
    stage: str,
    hint: str | None = None,
    notes: tuple[str, ...] = (),
) -> Exception:
    """Build (not raise) an exception of ``cls`` with the full located message."""
    parts = [message]
    if loc is not None:
        parts.append(format_location(loc))
    parts.extend(f"  {note}" for note in notes)
    parts.append(f"  stage: {stage}")
    if hint:
        parts.append(f"  hint: {hint}")
    exc = cls("\n".join(parts))
    exc.filename = loc.filename if loc else None  # type: ignore[attr-defined]
    exc.line = loc.line if loc else None  # type: ignore[attr-defined]
    exc.col = loc.col if loc else None  # type: ignore[attr-defined]
    exc.stage = stage  # type: ignore[attr-defined]
    exc.hint = hint  # type: ignore[attr-defined]
    exc.brief = message  # type: ignore[attr-defined]
    return exc
