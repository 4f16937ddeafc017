"""``ember.einsum``: Einstein summation on top of the batched matrix product.

Subscripts follow NumPy: ``"ij,jk->ik"``, implicit outputs (``"ij,jk"``: the letters used
once, sorted), ``...`` for leading broadcast axes, repeated letters in one operand for a
diagonal (``"ii->i"``, ``"ii"`` is the trace).  The operands are folded left to right; each
pairwise step maps the letters to ``(batch, M, K) @ (batch, K, N)`` (letters in both
operands that are still needed are the batch, those in both that are not are summed, the
others are free) and runs :func:`ember.array.matmul.gemm`.  A letter only one operand has
and the output does not is summed first (a product with a vector of ones).  No
contraction-order optimization is attempted (NumPy's ``optimize=False``).
"""

from __future__ import annotations

import math
import string

from ember.array.ndarray import ndarray


def einsum(subscripts: str, /, *operands: ndarray) -> ndarray:
    """Evaluate the Einstein summation ``subscripts`` on ``operands`` (see the module)."""
    from ember.array.matmul import _check

    if not operands:
        raise ValueError("einsum: at least one operand is needed")
    for x in operands:
        _check(x, operands[0], "einsum")
    inputs, output = _parse(subscripts.replace(" ", ""), operands)
    sizes = _sizes(inputs, operands)
    terms = [_diagonal(x, letters) for x, letters in zip(operands, inputs, strict=True)]
    terms = [_drop_broadcast(x, letters, sizes) for x, letters in terms]
    x, letters = terms[0]
    for k, (y, other) in enumerate(terms[1:], 1):
        later = set(output).union(*(t[1] for t in terms[k + 1 :]))
        x, letters = _contract(x, letters, y, other, later)
    x, letters = _sum_out(x, letters, set(output))
    missing = [c for c in output if c not in letters]
    if missing:  # a broadcast letter of size 1 everywhere: reinsert it
        from ember.array.manipulation import expand_dims

        for c in missing:
            x, letters = expand_dims(x, 0), c + letters
    from ember.array.manipulation import permute_dims

    out = permute_dims(x, [letters.index(c) for c in output])
    return out.copy() if any(out.buffer is t.buffer for t in operands) else out


def _parse(spec: str, operands) -> tuple[list[str], str]:
    lhs, arrow, rhs = spec.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise ValueError(
            f"einsum: {len(inputs)} operand subscripts in {spec!r} for {len(operands)} operands"
        )
    for term in inputs + ([rhs] if arrow else []):
        bad = set(term.replace("...", "")) - set(string.ascii_letters)
        if bad:
            raise ValueError(f"einsum: invalid subscript characters {sorted(bad)} in {spec!r}")
    spare = [c for c in string.ascii_uppercase[::-1] if c not in spec]
    ell = max((x.ndim - len(t.replace("...", "")) for t, x in zip(inputs, operands, strict=True)
               if "..." in t), default=0)  # fmt: skip
    fill = "".join(reversed(spare[:ell]))
    expanded = []
    for t, x in zip(inputs, operands, strict=True):
        named = len(t.replace("...", ""))
        if "..." in t:
            t = t.replace("...", fill[len(fill) - (x.ndim - named) :] if x.ndim > named else "")
        if len(t) != x.ndim:
            raise ValueError(
                f"einsum: operand of shape {x.shape} has {x.ndim} dimensions but subscripts "
                f"{t!r} name {len(t)}"
            )
        expanded.append(t)
    if arrow:
        output = rhs.replace("...", fill)
    else:
        counts = "".join(expanded)
        output = fill + "".join(sorted(c for c in set(counts) if counts.count(c) == 1
                                       and c not in fill))  # fmt: skip
    if len(set(output)) != len(output):
        raise ValueError(f"einsum: output subscript {output!r} repeats a letter")
    unknown = set(output) - set("".join(expanded))
    if unknown:
        raise ValueError(f"einsum: output letters {sorted(unknown)} appear in no operand")
    return expanded, output


def _sizes(inputs, operands) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for letters, x in zip(inputs, operands, strict=True):
        for c, n in zip(letters, x.shape, strict=True):
            if n != 1 and sizes.get(c, 1) not in (1, n):
                raise ValueError(
                    f"einsum: letter {c!r} has sizes {sizes[c]} and {n} in different operands"
                )
            if n != 1 or c not in sizes:
                sizes[c] = n
    return sizes


def _diagonal(x: ndarray, letters: str) -> tuple[ndarray, str]:
    """A repeated letter in one operand: the diagonal (a view)."""
    shape, strides, out = list(x.shape), list(x.strides), ""
    for c in letters:
        if c in out:
            continue
        out += c
    if out == letters:
        return x, letters
    new_shape, new_strides = [], []
    for c in out:
        where = [k for k, d in enumerate(letters) if d == c]
        sizes = {shape[k] for k in where}
        if len(sizes) > 1:
            raise ValueError(f"einsum: repeated letter {c!r} spans axes of different sizes")
        new_shape.append(shape[where[0]])
        new_strides.append(sum(strides[k] for k in where))
    view = ndarray(tuple(new_shape), x.dtype, x.buffer, x.backend, tuple(new_strides), x.offset)
    return view, out


def _drop_broadcast(x: ndarray, letters: str, sizes) -> tuple[ndarray, str]:
    """Length-1 axes of letters that are longer elsewhere: dropped (they broadcast)."""
    keep = [k for k, c in enumerate(letters) if not (x.shape[k] == 1 and sizes[c] != 1)]
    if len(keep) == len(letters):
        return x, letters
    from ember.array.manipulation import squeeze

    drop = tuple(k for k in range(len(letters)) if k not in keep)
    return squeeze(x, drop), "".join(letters[k] for k in keep)


def _sum_out(x: ndarray, letters: str, needed: set[str]) -> tuple[ndarray, str]:
    """Sum the axes whose letters are not ``needed`` (a product with ones)."""
    from ember.array.creation import ones
    from ember.array.manipulation import permute_dims
    from ember.array.matmul import gemm

    gone = [c for c in letters if c not in needed]
    if not gone:
        return x, letters
    kept = [c for c in letters if c in needed]
    x = permute_dims(x, [letters.index(c) for c in kept + gone])
    outer = x.shape[: len(kept)]
    s = math.prod(x.shape[len(kept) :])
    flat = x.reshape(math.prod(outer), s)
    summed = gemm(flat, ones((s, 1), x.dtype), ())
    return summed.reshape(outer), "".join(kept)


def _contract(x, lx: str, y, ly: str, later: set[str]):
    """One pairwise step: ``x`` (letters ``lx``) times ``y`` (``ly``)."""
    from ember.array.manipulation import permute_dims
    from ember.array.matmul import gemm

    x, lx = _sum_out(x, lx, later | set(ly))
    y, ly = _sum_out(y, ly, later | set(lx))
    batch = [c for c in lx if c in ly and c in later]
    summed = [c for c in lx if c in ly and c not in later]
    fx = [c for c in lx if c not in ly]
    fy = [c for c in ly if c not in lx]
    size = dict(zip(lx, x.shape, strict=True)) | dict(zip(ly, y.shape, strict=True))
    nb = tuple(size[c] for c in batch)
    m, k, n = (math.prod(size[c] for c in group) for group in (fx, summed, fy))
    a = permute_dims(x, [lx.index(c) for c in batch + fx + summed]).reshape(*nb, m, k)
    b = permute_dims(y, [ly.index(c) for c in batch + summed + fy]).reshape(*nb, k, n)
    out = gemm(a, b, nb)
    letters = "".join(batch + fx + fy)
    return out.reshape(tuple(size[c] for c in letters)), letters
