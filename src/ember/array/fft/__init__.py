"""Discrete Fourier transforms: the Array API ``fft`` extension and ``numpy.fft``'s surface.

``fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft`` with
NumPy's arguments (``n`` /
``s``, ``axis`` / ``axes``, ``norm`` of ``"backward"``, ``"ortho"`` or ``"forward"``,
``out``), results and dtypes (NumPy 2: float32 and complex64 stay single precision), and
``fftfreq rfftfreq fftshift ifftshift``.  NumPy's own functions run these on ember arrays
(``numpy.fft.fft(x)`` stays on the device, through ``__array_function__``).

Two engines compute them (``docs/design/fft.md``):

* the device's vendor library when the backend offers one (``Backend.fft()``: cuFFT on
  CUDA), with a bounded plan cache (:func:`get_plan_cache`);
* Ember's own kernels everywhere else, and on CUDA with ``EMBER_FFT=ember``: Stockham
  passes with radix-2/3/4/5/7/8 butterflies in shared memory, Bluestein's algorithm for
  lengths with other prime factors (:mod:`ember.array.fft.kernels`).

Inputs may be any view (strided, transposed, negative strides); transforms run along any
axis without moving it.  Results are new C-contiguous arrays (or ``out``).
"""

from __future__ import annotations

from ember.array.fft import args as _args
from ember.array.fft import dispatch as _dispatch
from ember.array.fft.helpers import fftfreq, fftshift, ifftshift, rfftfreq
from ember.array.ndarray import ndarray as _ndarray
from ember.config import settings as _settings

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
    "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift", "get_plan_cache",
]  # fmt: skip


# --------------------------------------------------------------------- one axis
def fft(x, /, n=None, axis=-1, norm=None, out=None):
    """The one-dimensional discrete Fourier transform along ``axis``.

    Parameters
    ----------
    x : ember.ndarray
        Input, real or complex (real input is transformed as complex).
    n : int, optional
        Length of the transform: the input is cropped or zero-padded to it along ``axis``
        (default: the input's length).
    axis : int
        The axis to transform (default: the last).
    norm : {"backward", "ortho", "forward"}, optional
        Which direction is scaled: ``"backward"`` (default) leaves this one unscaled and
        divides the inverse by ``n``; ``"ortho"`` scales both by ``1/sqrt(n)``.
    out : ember.ndarray, optional
        Where to write the result (its shape and dtype must be the result's).

    Returns
    -------
    ember.ndarray
        Complex (complex64 for float32/complex64 input, complex128 otherwise), with
        ``n`` elements along ``axis``.
    """
    return _one(x, n, axis, norm, out, "fft", "c2c", inverse=False)


def ifft(x, /, n=None, axis=-1, norm=None, out=None):
    """The inverse of :func:`fft` (``ifft(fft(x)) == x``): same arguments."""
    return _one(x, n, axis, norm, out, "ifft", "c2c", inverse=True)


def rfft(x, /, n=None, axis=-1, norm=None, out=None):
    """:func:`fft` of real input, keeping the ``n // 2 + 1`` non-negative frequencies (the
    others are their complex conjugates)."""
    return _one(x, n, axis, norm, out, "rfft", "r2c", inverse=False)


def irfft(x, /, n=None, axis=-1, norm=None, out=None):
    """The inverse of :func:`rfft`: ``x`` holds non-negative frequencies of a Hermitian
    spectrum; the result is real, of length ``n`` (default ``2 * (m - 1)`` for ``m`` input
    points; pass ``n`` for odd lengths).  The imaginary parts of the zero (and, for even
    ``n``, the Nyquist) frequency are ignored, as NumPy does."""
    return _one(x, n, axis, norm, out, "irfft", "c2r", inverse=True)


def hfft(x, /, n=None, axis=-1, norm=None, out=None):
    """The transform of a signal with Hermitian symmetry, given by its first half: real
    output of length ``n`` (default ``2 * (m - 1)``); ``ihfft(hfft(x, n)) == x``."""
    return _one(x, n, axis, norm, out, "hfft", "c2r", inverse=False)


def ihfft(x, /, n=None, axis=-1, norm=None, out=None):
    """The inverse of :func:`hfft`: of real input, the ``n // 2 + 1`` first outputs of the
    inverse transform."""
    return _one(x, n, axis, norm, out, "ihfft", "r2c", inverse=True)


# --------------------------------------------------------------------- several axes
def fftn(x, /, s=None, axes=None, norm=None, out=None):
    """The n-dimensional transform over ``axes`` (default: all, or the last ``len(s)``),
    each cropped or zero-padded to ``s``; the 1-d arguments otherwise."""
    return _many(x, s, axes, norm, out, "fftn", "c2c", inverse=False)


def ifftn(x, /, s=None, axes=None, norm=None, out=None):
    """The inverse of :func:`fftn`."""
    return _many(x, s, axes, norm, out, "ifftn", "c2c", inverse=True)


def rfftn(x, /, s=None, axes=None, norm=None, out=None):
    """:func:`fftn` of real input: :func:`rfft` along the last of ``axes``, then complex
    transforms along the others."""
    return _many(x, s, axes, norm, out, "rfftn", "r2c", inverse=False)


def irfftn(x, /, s=None, axes=None, norm=None, out=None):
    """The inverse of :func:`rfftn`: inverse complex transforms along all but the last of
    ``axes``, then :func:`irfft` along it (length ``s[-1]``, default ``2 * (m - 1)``)."""
    return _many(x, s, axes, norm, out, "irfftn", "c2r", inverse=True)


def fft2(x, /, s=None, axes=(-2, -1), norm=None, out=None):
    """:func:`fftn` over two axes (NumPy's default: the last two)."""
    return _many(x, s, axes, norm, out, "fft2", "c2c", inverse=False)


def ifft2(x, /, s=None, axes=(-2, -1), norm=None, out=None):
    """The inverse of :func:`fft2`."""
    return _many(x, s, axes, norm, out, "ifft2", "c2c", inverse=True)


def rfft2(x, /, s=None, axes=(-2, -1), norm=None, out=None):
    """:func:`rfftn` over two axes (the last two by default)."""
    return _many(x, s, axes, norm, out, "rfft2", "r2c", inverse=False)


def irfft2(x, /, s=None, axes=(-2, -1), norm=None, out=None):
    """The inverse of :func:`rfft2`."""
    return _many(x, s, axes, norm, out, "irfft2", "c2r", inverse=True)


def get_plan_cache(device=None):
    """The vendor library's plan cache of the current backend (or of ``device``'s), like
    CuPy's ``cupy.fft.config.get_plan_cache()``: ``size``, ``max_size`` (settable),
    ``hits``, ``misses``, ``memory`` (bytes of work area the cached plans need),
    ``clear()``, ``info()``.  None where the backend has no vendor FFT."""
    return _dispatch.plan_cache(device)


# --------------------------------------------------------------------- shared
_FAST: dict = {}  # (function, input signature, arguments, EMBER_FFT) -> vendor recipe
FAST_KEPT = 256


def _one(x, n, axis, norm, out, name, kind, inverse):
    key = None
    if out is None and type(x) is _ndarray:  # a call seen before: straight to its recipe
        key = (name, x.shape, x.strides, x.dtype, x.offset % 16, x.backend, n, axis, norm,
               _settings.values["fft"])  # fmt: skip
        try:
            recipe = _FAST.get(key)
        except TypeError:  # (unhashable arguments: the checks below say what is wrong)
            recipe = key = None
        if recipe is not None:
            return recipe(x, None)
    x = _args.array(x, name)
    if x.ndim == 0:
        raise IndexError(f"ember.fft.{name}: a transform needs an array of at least 1 dimension")
    a = _args.axis(axis, x.ndim)
    mode = _args.norm(norm)
    if kind == "c2r":
        length = _args.points(n, 2 * (x.shape[a] - 1))
    else:
        if kind == "r2c":
            _args.real_input(x, name)
        length = _args.points(n, x.shape[a])
    y, recipe = _dispatch.run(x, [a], [length], kind, inverse, mode, out, name)
    if key is not None and recipe:
        if len(_FAST) >= FAST_KEPT:
            _FAST.clear()
        _FAST[key] = recipe.fast()
    return y


def _many(x, s, axes, norm, out, name, kind, inverse):
    x = _args.array(x, name)
    lengths, ax = _args.shape_axes(x, s, axes, c2r=kind == "c2r")
    mode = _args.norm(norm)
    if kind == "r2c":
        _args.real_input(x, name)
    if not ax:  # no axes: the input itself, as NumPy
        return _dispatch.no_axes(x, kind, out, name)
    if len(set(ax)) != len(ax):
        return _repeated(x, ax, lengths, kind, inverse, mode, out, name)
    return _dispatch.run(x, ax, lengths, kind, inverse, mode, out, name)[0]


def _repeated(x, ax, lengths, kind, inverse, mode, out, name):
    """Axes named more than once are transformed again, one 1-d transform after another
    in NumPy's order: the complex ones from the last axis to the first; ``rfftn`` its real
    transform (the last axis) first, ``irfftn`` last."""
    run = _dispatch.run
    steps = list(range(len(ax)))
    if kind == "c2c":
        order = [(i, "c2c") for i in reversed(steps)]
    elif kind == "r2c":
        order = [(steps[-1], "r2c")] + [(i, "c2c") for i in reversed(steps[:-1])]
    else:
        order = [(i, "c2c") for i in steps[:-1]] + [(steps[-1], "c2r")]
    for k, (i, step) in enumerate(order):
        last = k == len(order) - 1
        x = run(x, [ax[i]], [lengths[i]], step, inverse, mode, out if last else None, name)[0]
    return x
