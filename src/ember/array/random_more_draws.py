"""The host side of :mod:`ember.array.random_more`' distributions: NumPy's checks (with
NumPy's messages) and the launches, the :class:`MoreDistributions` methods that
:class:`ember.array.random.Generator` inherits, and its ``bit_generator``
(:class:`BitGenerator`).

Parameters may be numbers or arrays (ember arrays, host arrays, lists), broadcast with
each other and ``size`` as NumPy's (:func:`.random_draws.array_params`); array parameters
are checked element by element and read per value in the kernel, on the same sub-stream
as scalar ones (equal parameters, equal numbers)."""

from __future__ import annotations

import threading

import ember
from ember import dtypes
from ember.array.ndarray import ndarray, normalize_shape
from ember.array.random_more import SAMPLERS, row_kernel

F64 = dtypes.float64
HYPERGEOM_MAX = 10**9  # NumPy's bound on ngood and nbad (HRUA's log-factorials in float64)
INT64_MAX = (1 << 63) - 1


def _draw(rng, name: str, size, out_dt, values, checks, prep=None) -> ndarray:
    """One value per element from :data:`.random_more.SAMPLERS`' ``name``: ``values`` the
    parameters, ``checks`` ``(bad, message)`` pairs (``bad`` maps the parameters, as
    float64 NumPy scalars or ember arrays, to a bool (array): NumPy's ValueError where it
    holds), ``prep`` the parameters the sampler takes (default: as they are)."""
    import numpy as np

    from ember.array import random_arrays, random_draws

    sample = SAMPLERS[name]
    if random_draws.is_array(*values):
        shape, params = random_draws.array_params(name, size, F64, *values)
        for bad, message in checks:
            random_arrays._refuse(bad(*params), message)
        params = (*(prep(*params) if prep else params), 0.0, 0.0, 0.0)[:4]
        return random_arrays._draw(rng, name, shape, out_dt, params, F64, sample)
    params = [np.float64(random_draws.scalar(v, f"parameter {i}", name))
              for i, v in enumerate(values)]  # fmt: skip
    for bad, message in checks:
        if bad(*params):
            raise ValueError(message)
    params = (*(prep(*params) if prep else params), 0.0, 0.0, 0.0)[:4]
    return random_draws.each_draw(rng, name, size, out_dt, tuple(np.float64(v) for v in params),
                                  sample)  # fmt: skip


def hypergeometric(rng, ngood, nbad, nsample, size) -> ndarray:
    """NumPy's checks in NumPy's order: the bound on ``ngood``/``nbad``, the sum, then the
    signs; float counts are truncated."""
    import numpy as np

    from ember.array import random_draws

    if random_draws.is_array(ngood, nbad, nsample):
        trunc = ember.trunc
        values = [trunc(ember.asarray(v, dtype=F64)) for v in (ngood, nbad, nsample)]
    else:
        trunc = np.trunc
        values = [trunc(np.float64(v)) for v in (ngood, nbad, nsample)]
    checks = [
        (lambda g, b, s: (g >= HYPERGEOM_MAX) | (b >= HYPERGEOM_MAX),
         f"both ngood and nbad must be less than {HYPERGEOM_MAX}"),
        (lambda g, b, s: g + b < s, "ngood + nbad < nsample"),
        (lambda g, b, s: g < 0, "ngood < 0"),
        (lambda g, b, s: b < 0, "nbad < 0"),
        (lambda g, b, s: s < 0, "nsample < 0"),
    ]  # fmt: skip
    return _draw(rng, "hypergeometric", size, dtypes.int64, values, checks)


def logseries(rng, p, size) -> ndarray:
    checks = [(lambda p: ~((p >= 0) & (p < 1)), "p < 0, p >= 1 or p is NaN")]
    return _draw(rng, "logseries", size, dtypes.int64, [p], checks, lambda p: (p, _log1p(-p)))


def _log1p(x):
    """``log1p`` of a NumPy scalar on the host, of an ember array on the device."""
    import numpy as np

    return ember.log1p(x) if isinstance(x, ndarray) else np.log1p(x)


def zipf(rng, a, size) -> ndarray:
    checks = [(lambda a: ~(a > 1), "a <= 1 or a is NaN")]
    return _draw(rng, "zipf", size, dtypes.int64, [a], checks)


def vonmises(rng, mu, kappa, size) -> ndarray:
    checks = [(lambda mu, k: k < 0, "kappa < 0")]  # a NaN passes, as NumPy's, and gives NaN
    return _draw(rng, "vonmises", size, F64, [mu, kappa], checks)


def wald(rng, mean, scale, size) -> ndarray:
    checks = [(lambda m, s: m <= 0, "mean <= 0"), (lambda m, s: s <= 0, "scale <= 0")]
    return _draw(rng, "wald", size, F64, [mean, scale], checks)


def noncentral_chisquare(rng, df, nonc, size) -> ndarray:
    checks = [(lambda d, n: d <= 0, "df <= 0"), (lambda d, n: n < 0, "nonc < 0")]
    return _draw(rng, "noncentral_chisquare", size, F64, [df, nonc], checks)


def noncentral_f(rng, dfnum, dfden, nonc, size) -> ndarray:
    checks = [(lambda a, b, n: a <= 0, "dfnum <= 0"), (lambda a, b, n: b <= 0, "dfden <= 0"),
              (lambda a, b, n: n < 0, "nonc < 0")]  # fmt: skip
    return _draw(rng, "noncentral_f", size, F64, [dfnum, dfden, nonc], checks)


# --------------------------------------------------------------------- rows
def _host(v, dt=None):
    import numpy as np

    return np.asarray(v.to_numpy() if isinstance(v, ndarray) else v, dtype=dt)


def _rows(rng, name: str, shape: tuple[int, ...], k: int, *args) -> ndarray:
    """``shape + (k,)`` int64 counts, row ``r`` from the blocks of values ``r k + j``."""
    from ember.array.creation import empty
    from ember.array.random import _grid

    out = empty(shape + (k,), dtypes.int64)
    rows = out.size // k if k else 0
    lo, hi = rng._take(rows * k)
    if rows:
        grid, block = _grid(rows)
        row_kernel(name)[grid, block](out.reshape(-1), rows, k, *args, *rng.key, lo, hi)
    return out


def multinomial(rng, n, pvals, size) -> ndarray:
    """``pvals``: the last axis the categories, the others broadcast with ``n`` (and
    ``size``) as NumPy's; shape ``size + (k,)`` or the broadcast shape ``+ (k,)``.  ``n``
    and ``pvals`` are checked on the host (an ember array is read back: they are small)."""
    import numpy as np

    from ember.array.creation import asarray

    p = _host(pvals, np.float64)
    if p.ndim == 0 or p.shape[-1] == 0:
        raise ValueError("pvals must have at least 1 dimension and the last dimension of "
                         "pvals must be greater than 0.")  # fmt: skip
    counts = _host(n)
    if counts.dtype.kind == "f":
        counts = np.trunc(counts)
    counts = counts.astype(np.int64)
    if np.any(counts < 0):
        raise ValueError("n < 0")
    if np.any(~((p >= 0) & (p <= 1))):
        raise ValueError("pvals < 0, pvals > 1 or pvals contains NaNs")
    if np.any(p[..., :-1].sum(axis=-1) > 1.0 + 1e-12):
        raise ValueError("sum(pvals[:-1]) > 1.0")
    k = p.shape[-1]
    from ember.array.random_draws import sized

    shape = sized("multinomial", np.broadcast_shapes(counts.shape, p.shape[:-1]), size)
    ns, ps = (0, 0) if counts.size == 1 and p.ndim == 1 else (1, k)
    if ns:
        counts = np.broadcast_to(counts, shape)
        p = np.broadcast_to(p, shape + (k,))
    n_dev = asarray(np.ascontiguousarray(counts).reshape(-1))
    p_dev = asarray(np.ascontiguousarray(p).reshape(-1))
    return _rows(rng, "multinomial", shape, k, n_dev, ns, p_dev, ps)


def multivariate_hypergeometric(rng, colors, nsample, size, method) -> ndarray:
    """Sequential hypergeometric draws ("marginals"); ``method="count"`` is accepted and
    checked as NumPy's, and gives the same distribution by the same draws."""
    import operator

    import numpy as np

    from ember.array.creation import asarray

    if method not in ("count", "marginals"):
        raise ValueError('method must be "count" or "marginals".')
    try:
        nsample = operator.index(nsample)
    except TypeError:
        raise ValueError("nsample must be an integer") from None
    if nsample < 0:
        raise ValueError("nsample must be nonnegative.")
    if nsample > INT64_MAX:
        raise ValueError(f"nsample must not exceed {INT64_MAX}")
    c = _host(colors)
    if c.ndim != 1 or (c.size and (c.dtype.kind not in "iu" or np.any(c < 0))):
        raise ValueError("colors must be a one-dimensional sequence of nonnegative integers "
                         f"not exceeding {INT64_MAX}.")  # fmt: skip
    total = sum(int(v) for v in c)
    if total > INT64_MAX:
        raise ValueError(f"sum(colors) must not exceed the maximum value of a 64 bit signed "
                         f"integer ({INT64_MAX})")  # fmt: skip
    if total > 1 << 53:  # the samplers count in float64
        raise ValueError("multivariate_hypergeometric: sum(colors) must not exceed 2**53 "
                         "in Ember (counts are float64 on the device)")  # fmt: skip
    if method == "count" and total > 100000000:
        raise ValueError("When method is 'count', sum(colors) must not exceed 100000000")
    if nsample > total:
        raise ValueError("nsample > sum(colors)")
    shape = () if size is None else normalize_shape(size)
    k = c.size
    c_dev = asarray(c.astype(np.int64) if k else np.zeros(1, np.int64))
    return _rows(rng, "multivariate_hypergeometric", shape, k, c_dev, np.float64(total),
                 np.float64(nsample))  # fmt: skip


# --------------------------------------------------------------------- the Generator's methods
class MoreDistributions:
    """:class:`ember.array.random.Generator`'s methods of this module's distributions."""

    def hypergeometric(self, ngood, nbad, nsample, size=None) -> ndarray:
        """Hypergeometric int64: good items in ``nsample`` drawn from ``ngood + nbad``
        without replacement (the urn below 10 draws, Stadlober's HRUA above)."""
        return hypergeometric(self, ngood, nbad, nsample, size)

    def logseries(self, p, size=None) -> ndarray:
        """Logarithmic series int64 (>= 1) of parameter ``p`` in [0, 1) (Kemp's LK)."""
        return logseries(self, p, size)

    def zipf(self, a, size=None) -> ndarray:
        """Zipf int64 (>= 1) of exponent ``a > 1`` (Devroye's rejection; below 2**63)."""
        return zipf(self, a, size)

    def vonmises(self, mu, kappa, size=None) -> ndarray:
        """Von Mises floats on [-pi, pi] of mode ``mu`` and concentration ``kappa`` (Best &
        Fisher)."""
        return vonmises(self, mu, kappa, size)

    def wald(self, mean, scale, size=None) -> ndarray:
        """Wald (inverse Gaussian) floats (Michael, Schucany & Haas)."""
        return wald(self, mean, scale, size)

    def noncentral_chisquare(self, df, nonc, size=None) -> ndarray:
        """Noncentral chi-square floats of ``df`` degrees of freedom, noncentrality
        ``nonc``."""
        return noncentral_chisquare(self, df, nonc, size)

    def noncentral_f(self, dfnum, dfden, nonc, size=None) -> ndarray:
        """Noncentral F floats: ``(X / dfnum) / (Y / dfden)``, ``X`` noncentral
        chi-square."""
        return noncentral_f(self, dfnum, dfden, nonc, size)

    def multinomial(self, n, pvals, size=None) -> ndarray:
        """Multinomial int64 counts of ``n`` trials over ``len(pvals)`` categories (the last
        takes what the others leave: ``pvals[-1]`` is not read), shape ``size + (k,)``."""
        return multinomial(self, n, pvals, size)

    def multivariate_hypergeometric(self, colors, nsample, size=None,
                                    method="marginals") -> ndarray:  # fmt: skip
        """Int64 counts of each colour in ``nsample`` items drawn without replacement from
        ``colors[j]`` items of colour ``j``, shape ``size + (len(colors),)``."""
        return multivariate_hypergeometric(self, colors, nsample, size, method)

    def bytes(self, length: int) -> bytes:
        """``length`` random bytes (``integers(0, 256, length, dtype=uint8)``'s, read back)."""
        return self.integers(0, 256, int(length), dtype=dtypes.uint8).to_numpy().tobytes()

    @property
    def bit_generator(self) -> BitGenerator:
        """The Philox stream's state, as NumPy code reads a bit generator's (one object per
        generator)."""
        bits = self.__dict__.get("_bit_generator")
        if bits is None:
            bits = self.__dict__["_bit_generator"] = BitGenerator(self)
        return bits


class BitGenerator:
    """``Generator.bit_generator``: a view of the generator's Philox key and counter with
    the parts of NumPy's ``BitGenerator`` that NumPy code commonly reads (``state``,
    ``lock``, ``random_raw``, ``advance``, ``spawn``); the state layout is Ember's, not
    NumPy's ``Philox``'s.  NumPy's C interfaces (``capsule``, ``ctypes``, ``cffi``) and
    ``jumped`` are refused with an AttributeError that says why."""

    def __init__(self, generator):
        self._gen = generator
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return f"BitGenerator(Philox4x32-10, {self.state['state']})"

    @property
    def state(self) -> dict:
        """``{"bit_generator": "Philox4x32-10", "state": {"key": (k0, k1), "counter": c}}``;
        assigning such a dict restores it."""
        key, counter = self._gen.key, self._gen.counter
        return {"bit_generator": "Philox4x32-10", "state": {"key": key, "counter": counter}}

    @state.setter
    def state(self, value: dict) -> None:
        key, counter = parse_state(value)
        self._gen.key, self._gen.counter = key, counter

    def advance(self, delta: int) -> BitGenerator:
        """Skip ``delta`` Philox blocks (the counter modulo 2**64)."""
        self._gen.counter = (self._gen.counter + int(delta)) % (1 << 64)
        return self

    def random_raw(self, size=None, output: bool = True):
        """Raw 64-bit words (``integers(0, 2**64, size, dtype=uint64)``'s), an ember array;
        ``output=False`` draws and returns None."""
        words = self._gen.integers(0, 1 << 64, size, dtype=dtypes.uint64)
        return words if output else None

    def spawn(self, n_children: int) -> list[BitGenerator]:
        """The bit generators of ``Generator.spawn(n_children)``'s generators."""
        return [child.bit_generator for child in self._gen.spawn(n_children)]

    def __getattr__(self, name: str):
        if name in ("capsule", "ctypes", "cffi", "jumped", "seed_seq"):
            raise AttributeError(f"bit_generator.{name}: Ember's Philox stream runs on the "
                                 "device and has no NumPy C interface or jump table; use "
                                 "Generator.spawn for independent streams")  # fmt: skip
        raise AttributeError(f"'BitGenerator' object has no attribute {name!r}")


def parse_state(value) -> tuple[tuple[int, int], int]:
    """``(key, counter)`` of a state dict of :attr:`BitGenerator.state`; NumPy's states
    (MT19937 tuples, other bit generators) refused with what to pass instead."""
    ok = isinstance(value, dict) and value.get("bit_generator") == "Philox4x32-10"
    inner = value.get("state") if ok else None
    if not ok or not isinstance(inner, dict) or not {"key", "counter"} <= inner.keys():
        name = (
            value[0]
            if isinstance(value, tuple) and value
            else (value.get("bit_generator") if isinstance(value, dict) else type(value).__name__)
        )
        raise ValueError(f"set_state: Ember's stream is Philox4x32-10 (a key and a counter), "
                         f"so a {name!r} state cannot be set; pass a state from "
                         "ember.random.get_state() or rng.bit_generator.state")  # fmt: skip
    k0, k1 = (int(w) for w in inner["key"])
    counter = int(inner["counter"])
    if not (0 <= k0 < 1 << 32 and 0 <= k1 < 1 << 32 and 0 <= counter < 1 << 64):
        raise ValueError("set_state: the key words must be 32-bit and the counter 64-bit")
    return (k0, k1), counter
