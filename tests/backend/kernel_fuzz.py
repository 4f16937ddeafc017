"""Random kernels from a small grammar, with their expected outcome.

A generated kernel is ordinary Python that runs unchanged in two places: compiled by
Ember, and executed by Python itself on NumPy scalars (``ember`` replaced by
:class:`Reference`, whose ``global_id()`` is the element being computed).  So the expected
result of every kernel is whatever Python computes from the very same text: comments,
line continuations and string literals included.  A comment ending in a backslash that
swallowed the next line of C (issue 18) shows up as a difference.

Kernels (``def kNN(x, y, out, m, r, s)``: float32 arrays ``x``, ``y``, ``out``, int32
arrays ``m`` (input) and ``r`` (output), a float32 scalar ``s``) are made of:

* float expressions of the inputs, literals, locals, ``abs``/``min``/``max``,
  ``ember.sqrt``/``ember.exp``, conditional expressions, calls of a device function;
* int expressions with Python's ``//`` and ``%`` (negative operands and divisors), bit
  operations and shifts;
* statements: assignments, chained assignments (``y[i] = out[i] = v``, ``a = b = v``),
  augmented assignments, ``if``/``else`` on input comparisons, ``for`` loops, ``assert``
  with strange messages, very long sums (hundreds of terms);
* decoration: comments of every awkward kind (``# C:\\temp\\``, ``??/``, ``*/``), backslash
  continuations at random places, parenthesized line breaks, blank lines;
* with probability ``p_invalid``, one construct kernels do not support (``try``,
  ``with``, ``lambda``, ``import``, a list comprehension, a string value...): the expected
  outcome is then an Ember error naming that line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

N = 37  # elements: not a power of two, fewer than one block

NASTY_TEXT = [
    "C:\\temp\\", "??/", "ends with ??", "*/ not a comment end", "/* open", "back\\slash",
    '"quoted"', "tab\there", "unicode \u00e9\u2713\u00df", "%d %s %%", "new\\nline", "#x",
    "trigraph ??= ??( ??) ??< ??>", "\\", "'single'", "xor and bitand typeid",
]  # fmt: skip

UNSUPPORTED = [
    ["try:", "    v0 = v0 + 1.0", "except Exception:", "    pass"],
    ["with open('f') as fh:", "    pass"],
    ["f0 = lambda q: q"],
    ["import math"],
    ["v0 = [x[i] for _ in range(2)][0]"],
    ["v0 = {'a': 1.0}['a']"],
    ["text = 'hello'"],
    ["class Local:", "    pass"],
    ["v0 = x.sum()"],
    ["v0 = sorted([1.0, 2.0])[0]"],
]


@dataclass
class Case:
    name: str
    lines: list[str]  # the kernel's source lines (decorated), "def" first
    invalid_line: int | None  # 1-based line (within ``lines``) of the unsupported construct
    invalid_lines: int = 0  # how many lines it spans


class Reference:
    """What ``ember`` is when Python runs a generated kernel itself (in ``dtype``)."""

    def __init__(self, dtype) -> None:
        self.i = 0
        self.dtype = dtype

    def kernel(self, fn):
        return fn

    def global_id(self) -> int:
        return self.i

    def sqrt(self, v):
        return np.sqrt(self.dtype(v))

    def exp(self, v):
        return np.exp(self.dtype(v))


class Generator:
    """Kernels from the grammar (module docstring), reproducible from ``seed``."""

    def __init__(self, seed: int, p_invalid: float = 0.25, p_deep: float = 0.15):
        self.rng = random.Random(seed)
        self.p_invalid, self.p_deep = p_invalid, p_deep
        self.count = 0

    # ------------------------------------------------------------------ expressions
    def fexpr(self, depth: int, nlocals: int) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.fleaf(nlocals)
        kind = r.choice("++--**/uammqcsde")
        a, b = self.fexpr(depth - 1, nlocals), self.fexpr(depth - 1, nlocals)
        if kind in "+-*":
            return f"({a} {kind} {b})"
        if kind == "/":
            return f"({a} / {r.choice(['2.0', '4.0', '-8.0', '0.5'])})"
        if kind == "u":
            return f"(-{a})"
        if kind == "a":
            return f"abs({a})"
        if kind == "m":
            return f"{r.choice(['min', 'max'])}({a}, {b})"
        if kind == "q":
            return f"ember.sqrt(abs({a}) + 1.0)"
        if kind == "e":
            return f"ember.exp(min({a}, 2.0))"
        if kind == "c":
            return f"({a} if {self.fcond()} else {b})"
        if kind == "d":
            return f"helper({a}, {b})"
        return f"({a} * s)"

    def fleaf(self, nlocals: int) -> str:
        r = self.rng
        options = ["x[i]", "y[i]", "out[i]", "s", r.choice(["0.5", "1.25", "2.0", "3.0", "-1.5"])]
        if nlocals:
            options += [f"v{r.randrange(nlocals)}"] * 2
        return r.choice(options)

    def fcond(self) -> str:
        r = self.rng
        a, b = r.sample(["x[i]", "y[i]", "s", "1.0", "out[i]"], 2)
        return f"{a} {r.choice(['<', '<=', '>', '>=', '!=', '=='])} {b}"

    def iexpr(self, depth: int) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return r.choice(["m[i]", "m[i]", "3", "-7", "12"])
        kind = r.choice("+-/%&|^<>amc")
        a, b = self.iexpr(depth - 1), self.iexpr(depth - 1)
        if kind in "+-":
            return f"({a} {kind} {b})"
        if kind in "/%":
            op = "//" if kind == "/" else "%"
            return f"({a} {op} {r.choice(['3', '-3', '5', '-4', '7'])})"
        if kind in "&|^":
            return f"({a} {kind} {r.choice(['5', '12', '-3'])})"
        if kind in "<>":
            return f"({a} {'<<' if kind == '<' else '>>'} {r.choice(['1', '2'])})"
        if kind == "a":
            return f"abs({a})"
        if kind == "m":
            return f"{r.choice(['min', 'max'])}({a}, {b})"
        return f"({a} * 3)"

    # ------------------------------------------------------------------ statements
    def body(self) -> tuple[list[list[str]], int | None]:
        """Statements (each a list of lines), the index of the unsupported one (or None)."""
        r = self.rng
        nlocals = r.randint(1, 4)
        stmts = [[f"v{k} = {self.fexpr(1, k)}"] for k in range(nlocals)]
        for _ in range(r.randint(2, 6)):
            stmts.append(self.statement(nlocals))
        if r.random() < self.p_deep:
            terms = [r.choice(["x[i]", "y[i]", "s", "0.25"]) for _ in range(r.randint(120, 260))]
            stmts.append([f"v0 = {' + '.join(terms)}"])
        stmts.append([f"r[i] = {self.iexpr(3)}"])
        stmts.append([self.final(nlocals)])
        invalid = None
        if r.random() < self.p_invalid:
            invalid = r.randrange(len(stmts) + 1)
            stmts.insert(invalid, r.choice(UNSUPPORTED))
        return stmts, invalid

    def statement(self, nlocals: int) -> list[str]:
        r = self.rng
        k = r.randrange(nlocals)
        kind = r.choice("aacgifla")
        if kind == "a":
            return [f"v{k} = {self.fexpr(3, nlocals)}"]
        if kind == "c":
            j = r.randrange(nlocals)
            return [f"v{k} = v{j} = {self.fexpr(2, nlocals)}"]
        if kind == "g":
            return [f"v{k} {r.choice(['+=', '-=', '*='])} {self.fexpr(2, nlocals)}"]
        if kind == "i":
            return [
                f"if {self.fcond()}:",
                f"    v{k} = {self.fexpr(2, nlocals)}",
                "else:",
                f"    v{k} = {self.fexpr(2, nlocals)}",
            ]
        if kind == "f":
            return [f"for j in range({r.randint(1, 4)}):", f"    v{k} = v{k} * 0.5 + x[i]"]
        return [f"assert i >= 0, {r.choice(NASTY_TEXT)!r}"]

    def final(self, nlocals: int) -> str:
        value = self.fexpr(3, nlocals)
        if self.rng.random() < 0.3:
            return f"y[i] = out[i] = {value}"
        return f"out[i] = {value}"

    # ------------------------------------------------------------------ decoration
    def decorate(self, line: str, indent: str) -> list[str]:
        """``line`` with an awkward comment, or split by continuations; more lines."""
        r = self.rng
        out = []
        if r.random() < 0.2:
            out.append(f"{indent}# {r.choice(NASTY_TEXT)}")
        if r.random() < 0.3 and " " in line and not line.endswith(":") and "'" not in line:
            words = line.split(" ")
            cut = r.randrange(1, len(words))
            out.append(f"{indent}{' '.join(words[:cut])} \\")
            out.append(f"{indent}        {' '.join(words[cut:])}")
        elif r.random() < 0.15 and line.startswith(("out[i] =", "r[i] =")):
            target, value = line.split(" = ", 1)
            out += [f"{indent}{target} = (", f"{indent}    {value}", f"{indent})"]
        else:
            tail = f"  # {r.choice(NASTY_TEXT)}" if r.random() < 0.4 else ""
            out.append(f"{indent}{line}{tail}")
        if r.random() < 0.1:
            out.append("")
        return out

    def kernel(self) -> Case:
        self.count += 1
        name = f"k{self.count:03d}"
        body, invalid = self.body()
        lines = [
            "@ember.kernel",
            f"def {name}(x, y, out, m, r, s):",
            "    i = ember.global_id()  # \\",
            "    if i < out.shape[0]:",
        ]
        invalid_line, span = None, 0
        for index, stmt in enumerate(body):
            if index == invalid:
                invalid_line, span = len(lines) + 1, len(stmt)
                lines += [" " * 8 + line for line in stmt]
                continue
            for line in stmt:
                indent = " " * (8 + len(line) - len(line.lstrip(" ")))
                lines += self.decorate(line.lstrip(" "), indent)
        return Case(name, lines, invalid_line, span)


def module_source(cases: list[Case]) -> tuple[str, dict[str, int]]:
    """One module holding every case; each case's first line number in it."""
    lines = ["import ember", "", "", "def helper(a, b):  # a device function, its comment \\"]
    lines += ["    return a * 0.5 + b", ""]
    starts = {}
    for case in cases:
        lines += ["", ""]
        starts[case.name] = len(lines) + 1
        lines += case.lines
    return "\n".join(lines) + "\n", starts


def inputs(seed: int) -> dict:
    """The arguments (NumPy) every case runs on."""
    rng = np.random.default_rng(seed)
    f32 = lambda lo, hi: rng.uniform(lo, hi, N).astype(np.float32)  # noqa: E731
    return {
        "x": f32(0.5, 2.0), "y": f32(-2.0, 2.0), "out": f32(-1.0, 1.0),
        "m": rng.integers(-50, 50, N).astype(np.int32), "r": np.zeros(N, np.int32),
        "s": np.float32(rng.uniform(0.5, 1.5)),
    }  # fmt: skip


def reference(source: str, name: str, args: dict) -> dict[str, np.ndarray]:
    """What Python computes from the module's text for kernel ``name`` (float32, and the
    same in float64 to judge rounding)."""
    results = {}
    for dtype in (np.float32, np.float64):
        ember = Reference(dtype)
        namespace = {"ember": ember, "__name__": "fuzz_reference"}
        text = source.replace("import ember\n", "", 1)  # ember is the Reference here
        exec(compile(text, "<fuzz>", "exec"), namespace)  # noqa: S102
        fn = namespace[name]
        a = {k: (v.astype(dtype) if v.dtype.kind == "f" else v.copy()) if isinstance(v, np.ndarray)
             else dtype(v) for k, v in args.items()}  # fmt: skip
        with np.errstate(all="ignore"):
            for i in range(N):
                ember.i = i
                fn(a["x"], a["y"], a["out"], a["m"], a["r"], a["s"])
        results[np.dtype(dtype).name] = {k: a[k] for k in ("y", "out", "r")}
    return results
