"""The compiled launch path without a device: ``kernel[grid, block]`` in C
(``ember.compiler._dispatch``) and a specialization's guarded launch in C (the CUDA stub's
``runner``), checked against the Python functions they replace.  The stub's launches go to
its own probe, which records the argument slots the driver would read."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from fake_backend import FAKE_DEVICE, FakeBase, FakeBufferBase, FakeModuleBase, run_threads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.compiler import args as argmod
from ember.compiler import launchers
from ember.errors import LaunchError
from ember.runtime.sync import Waitable

pytest.importorskip("cuda.bindings", reason="cuda-bindings is not installed")
stub = pytest.importorskip("ember.backends.cuda._ccall", reason="C stub not built")

from ember.backends.cuda import direct  # noqa: E402
from ember.backends.cuda.driver import cu  # noqa: E402
from ember.backends.cuda.launch import CudaFunction  # noqa: E402

pytestmark = pytest.mark.cold_cache  # the fake backend counts its compiles


class _DictStream:
    """A stream that keeps its counter and handle in its __dict__ (the launcher's path for a
    stream without ember.runtime._waitable's C fields)."""

    def __init__(self, address):
        self._handle = cu.CUstream(address)
        self._address = address
        self.submitted = 0


class _CountedStream(Waitable):
    """A stream as the backends make them: its counter and handle are the C fields the
    launcher reads and adds to in place (where ember.runtime._waitable is built)."""

    def __init__(self, address):
        self._handle = cu.CUstream(address)
        self._address = address


_Stream = _CountedStream  # the stream kind of the running test (the `fake` fixture's)


class _Context:
    made_current = 0

    def ensure_current(self):
        self.made_current += 1

    def retry_on_invalid_context(self, err):
        return False


class FakeBuffer(FakeBufferBase):
    def __init__(self, nbytes: int):
        super().__init__(nbytes)
        self.handle = id(self)  # an int address, as a CUDA buffer's


class ProbeFunction(CudaFunction):
    """A CudaFunction that asks the driver nothing about itself (the report's questions)."""

    def attributes(self):
        return {}

    def resources(self):
        return {}

    def occupancy(self, block_threads, shared_mem=0):
        return 0


class FakeModule(FakeModuleBase):
    def __init__(self, backend):
        self.backend = backend
        self.context = _Context()
        self.default_stream = backend.stream

    def function(self, name, params):
        stub.probe_arm(len(params), 0)  # the probe copies exactly this many slots
        return ProbeFunction(cu.CUfunction(0xF00), name, params, self)


class FakeBackend(FakeBase):
    device = FAKE_DEVICE

    def __init__(self):
        self.stream = _Stream(0x1000)
        self.compiles = 0

    def compile(self, source, name, options=()):
        self.compiles += 1
        return source.encode()

    def load_module(self, binary):
        return FakeModule(self)

    def library_versions(self):
        return {"fake": "1.0"}

    def native_pointer(self, buffer, offset=0):
        return buffer.handle


@pytest.fixture(params=[_CountedStream, _DictStream], ids=["c-counters", "dict"])
def fake(monkeypatch, request):
    """A fake backend whose functions are CudaFunctions launching through the C stub into
    its probe (the ctypes path, taken for what the stub does not pack, records too); its
    streams of either kind the launcher reads."""
    monkeypatch.setitem(globals(), "_Stream", request.param)
    slow = []

    def fake_ex(config, function, params, extra):
        slow.append(config)
        return 0

    monkeypatch.setattr(direct, "entry", lambda name: fake_ex)
    monkeypatch.setattr(direct, "address", lambda fn: stub.probe_address())
    backend = FakeBackend()
    backend.slow = slow
    return backend


def array(fake, shape, dtype=ember.float32, strides=None, offset=0):
    return ember.ndarray(tuple(shape), ember.dtype(dtype), FakeBuffer(4096), fake, strides,
                         offset)  # fmt: skip


def slots(n):
    """The first ``n`` argument slots of the probe's last launch, as 8-byte words."""
    return struct.unpack_from(f"<{n}Q", stub.probe_recorded()[-1])


def packed(values):
    """``values`` as the stub packs them (float64 scalars, int64 and addresses)."""
    out = []
    for v in values:
        raw = struct.pack("<d", v) if isinstance(v, float) else struct.pack("<q", v)
        out.append(struct.unpack("<Q", raw)[0])
    return tuple(out)


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@ember.kernel
def copy2d(x, y):
    i, j = ember.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        y[i, j] = x[i, j]


def test_launches_take_the_compiled_guards_and_pack_what_python_packs(fake):
    k = ember.kernel(axpy.py_func)
    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    k[2, 8](2.0, x, y)  # compiles; the first launch packs in Python
    spec = k._last
    assert type(spec.run).__name__ == "builtin_function_or_method"  # the stub's runner
    expected = packed(spec.pack(3.0, x, y))
    k[2, 8](3.0, x, y)
    assert slots(len(expected)) == expected
    assert stub.probe_recorded()[4:6] == ((2, 1, 1), (8, 1, 1))
    assert fake.stream.submitted == 2 and fake.compiles == 1 and fake.slow == []


def test_the_compiled_runner_agrees_with_the_python_one(fake):
    """Every argument kind the guards know, matching and not: the same answers and slots."""
    k = ember.kernel(axpy.py_func)
    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    k[1, 1](2.0, x, y)
    spec = k._last
    tys, backend, foreign = k._types((2.0, x, y))
    py = argmod.make_runner(spec.abi, tys, foreign, backend, spec.function.launch)
    native = argmod.make_runner(spec.abi, tys, foreign, backend, spec.function.launch,
                                function=spec.function)  # fmt: skip
    assert native is not py and hasattr(py, "source")
    f64 = array(fake, (10,), ember.float64)
    strided = array(fake, (5,), strides=(8,))
    cases = [
        (2.0, x, y), (2.5, y, x),  # match; each array's view is made on its first use
        (np.float32(2.0), x, y), (2, x, y), (2.0, f64, y), (2.0, x, strided),  # types
        (2.0, x), (2.0, x, y, y), [2.0, x, y],  # arity, and a list is not a tuple
        (2.0, np.zeros(10, np.float32), y),  # a host array
    ]  # fmt: skip
    for args in cases:
        got = native((1, 1, 1), (4, 1, 1), 0, None, args)
        seen = stub.probe_recorded()[-1]
        want = py((1, 1, 1), (4, 1, 1), 0, None, args)
        assert got is want, args
        if want:
            assert stub.probe_recorded()[-1] == seen  # both launched the same slots
            assert slots(7) == packed(spec.pack(*args))
    assert fake.slow == []


def test_strided_specializations_take_c_strides_too(fake):
    k = ember.kernel(copy2d.py_func)
    t, out = array(fake, (4, 3), strides=(4, 16)), array(fake, (4, 3))
    k[1, (4, 4)](t, out)
    k[1, (4, 4)](t, out)  # the strided specialization's runner
    assert slots(3) == (t.buffer.handle, 0, 4)
    c, d = array(fake, (4, 3)), array(fake, (4, 3))
    k[1, (4, 4)](c, d)  # a C-strided pair passes the strided guard (no new compile)
    assert fake.compiles == 1
    assert slots(7) == packed((c.buffer.handle, 0, 4, 3, 3, 1, d.buffer.handle))


def _axpy_guards(x, y):
    """An axpy specialization for ``x``, ``y``'s types, and its native guards and sources."""
    k = ember.kernel(axpy.py_func)
    k[1, 4](2.0, x, y)
    tys, backend, _ = k._types((2.0, x, y))
    return k._last, *argmod._native_guards(k._last.abi, tys, backend)


def axpy_runner(fake, view, note):
    """An axpy specialization's compiled runner with the given ``view`` and ``note``, and
    two arrays for it."""
    x, y = array(fake, (10,)), array(fake, (10,))
    spec, guards, sources = _axpy_guards(x, y)
    return spec.function.guarded_runner(guards, sources, view, note), x, y


def test_a_given_stream_is_launched_on_and_noted(fake):
    noted = []
    run, x, y = axpy_runner(fake, argmod.launch_view, lambda args, s: noted.append((args, s)))
    other = _Stream(0x2000)
    assert run((1, 1, 1), (4, 1, 1), 64, other, (2.0, x, y)) is True
    assert stub.probe_recorded()[6:8] == (64, 0x2000) and other.submitted == 1
    assert noted == [((2.0, x, y), other)]
    assert run((1, 1, 1), (4, 1, 1), 0, None, (2.0, x, y)) is True
    assert len(noted) == 1  # the default stream needs no note


def test_a_closed_stream_is_refused_and_counts_nothing(fake):
    """A stream closed after the launcher read it last (its handle None in the C field or
    the __dict__): the launch goes down the Python path, which refuses it."""
    run, x, y = axpy_runner(fake, argmod.launch_view, lambda args, s: None)
    other = _Stream(0x2000)
    assert run((1, 1, 1), (4, 1, 1), 0, other, (2.0, x, y)) is True
    other._handle = other._address = None  # what CudaStream.close() does
    with pytest.raises(LaunchError, match="closed stream"):
        run((1, 1, 1), (4, 1, 1), 0, other, (2.0, x, y))
    assert other.submitted == 1 and fake.slow == []


def test_what_the_stub_does_not_pack_goes_to_the_ctypes_path(fake):
    """NumPy scalars of the parameter's own type are packed in C (read in place); a value
    the guards pass but the parameter cannot hold is not: the ctypes path explains it."""

    @ember.kernel
    def unsigned(a, y):
        if ember.global_id() == 0:
            y[0] = a

    y = array(fake, (2,), ember.uint32)
    unsigned[1, 1](np.uint32(7), y)
    unsigned[1, 1](np.uint32(8), y)  # the guards pass; packed in C
    assert type(unsigned._last.run).__name__ == "builtin_function_or_method"
    assert fake.slow == [] and fake.stream.submitted == 2
    assert stub.probe_recorded()[-1][:4] == np.uint32(8).tobytes()

    @ember.kernel
    def wide(a, y):
        if ember.global_id() == 0:
            y[0] = a

    z = array(fake, (2,), ember.int64)
    wide[1, 1](5, z)
    with pytest.raises(LaunchError, match=r"must be a int64 value, got int 1180591620717411303424"):
        wide[1, 1](2**70, z)  # a Python int, as the guard wants, out of the type's range
    assert fake.stream.submitted == 3 and fake.slow == []  # refused before the driver


def test_the_guard_specification_is_checked(fake):
    with pytest.raises(TypeError, match="launcher"):  # not a launch of the stub
        stub.runner(print, (), b"", None, None)
    fn = FakeModule(fake).function("k", [ember.int32])
    with pytest.raises(ValueError, match="guard 0 is malformed"):
        stub.runner(fn.launch, ((7, int, None),), b"\x00\x00", None, None)
    with pytest.raises(ValueError, match="names argument 1 of 1"):
        stub.runner(fn.launch, ((0, int, None),), b"\x01\x00", None, None)
    run = stub.runner(fn.launch, ((0, int, None),), b"\x00\x00", None, None)
    assert run((1, 1, 1), (1, 1, 1), 0, None, (5,)) is True
    assert slots(1) == (5,)
    assert run((1, 1, 1), (1, 1, 1), 0, None, (5.0,)) is False


def test_the_launcher_reads_each_new_grid_and_block(fake):
    """It keeps the values of the last tuples it was given: new tuples are read, and the
    same ones again launch with their values."""
    fn = FakeModule(fake).function("k", [ember.int32])
    configs = [((2, 1, 1), (8, 1, 1)), ((3, 1, 1), (8, 1, 1)), ((3, 1, 1), (16, 2, 1))]
    for grid, block in configs * 2 + [(tuple([4, 1, 1]), tuple([8, 1, 1]))]:
        fn.launch(grid, block, [5])
        assert stub.probe_recorded()[4:6] == (grid, block)
    with pytest.raises(ember.LaunchError):  # a bad grid after good ones: not cached
        fn.launch((-1, 1, 1), (8, 1, 1), [5])
    fn.launch((4, 1, 1), (8, 1, 1), [5])
    assert stub.probe_recorded()[4:6] == ((4, 1, 1), (8, 1, 1))


def test_errors_in_the_guards_propagate(fake):
    def broken(a):
        raise RuntimeError("no view")

    run, x, y = axpy_runner(fake, broken, None)
    fresh = array(fake, (10,))  # no launch view yet: the runner asks broken() for one
    with pytest.raises(RuntimeError, match="no view"):
        run((1, 1, 1), (4, 1, 1), 0, None, (2.0, fresh, y))


# ------------------------------------------------------------------ reused packings
# The runner keeps each argument's packed slots with the object they came from (a scalar,
# or an array's launch view) and copies them when the same object comes again.


def _runner_and_spec(x, y):
    """A new compiled runner of an axpy specialization, and the specialization."""
    spec, guards, sources = _axpy_guards(x, y)
    return spec.function.guarded_runner(guards, sources, argmod.launch_view, None), spec


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)),
                min_size=1, max_size=12))  # fmt: skip
def test_any_sequence_of_launches_packs_each_launch_s_own_arguments(fake, sequence):
    """Launches drawn from a few scalars (one of another type) and arrays (one made new
    each time, one of another dtype): each launch the runner makes gives the driver exactly
    the slots Python packs for its arguments, whatever came before (the fixture's patches
    hold for every example)."""
    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    z, f64 = array(fake, (3,)), array(fake, (10,), ember.float64)
    run, spec = _runner_and_spec(x, y)
    scalars = [2.0, 2.5, -1.0, 1e300, np.float32(1.0)]

    def arrays(i):
        return [x, y, z, f64][i] if i < 4 else array(fake, (7,))

    for a, i, j in sequence:
        args = (scalars[a], arrays(i), arrays(j))
        fits = a != 4 and 3 not in (i, j)
        assert run((1, 1, 1), (4, 1, 1), 0, None, args) is fits
        if fits:
            assert slots(7) == packed(spec.pack(*args))


def test_threads_sharing_a_runner_each_launch_their_own_values(fake):
    """Four threads launch one specialization again and again, each with its own scalar
    and arrays: whatever the runner kept from another thread's launch, each launch gives
    the driver its own thread's values (the probe records per thread)."""
    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    run, spec = _runner_and_spec(x, y)
    args = [(0.5 + i, array(fake, (10,)), array(fake, (10,), offset=4 * i)) for i in range(4)]
    wants = [packed(spec.pack(*a)) for a in args]
    stub.probe_arm(7, 0)

    def work(i):
        for _ in range(300):
            assert run((1, 1, 1), (4, 1, 1), 0, None, args[i]) is True
            assert slots(7) == wants[i]

    assert run_threads(work) == []


def test_a_packing_that_fails_midway_reuses_nothing_it_wrote(fake):
    """The second scalar does not fit after the first was packed anew: the next launch
    with the first's earlier object packs it again (its slot holds the failed launch's)."""

    @ember.kernel
    def two(a, b, y):
        if ember.global_id() == 0:
            y[0] = a + b

    y = array(fake, (2,), ember.int64)
    two[1, 1](1, 2, y)
    two[1, 1](1, 2, y)  # the runner: packs and keeps all three arguments
    assert slots(2) == (1, 2)
    with pytest.raises(LaunchError, match="int64"):
        two[1, 1](3, 2**70, y)  # 3 is packed, then 2**70 is not
    two[1, 1](1, 2, y)
    assert slots(2) == (1, 2)
    two[1, 1](1, 2, y)
    assert slots(2) == (1, 2)


def test_the_python_paths_get_every_value_of_a_reused_packing(fake, monkeypatch):
    """A launch whose every argument was packed before still hands all its values to the
    Python path (several devices open) and to the driver error's report."""
    from ember.backends.cuda import device, launch

    seen = []

    def slow(grid, block, values, shared_mem, stream):
        seen.append(("slow", tuple(values)))

    def failed(err, grid, block, shared_mem, stream, values):
        seen.append(("failed", err, tuple(values)))

    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    spec, guards, sources = _axpy_guards(x, y)
    kinds = spec.function._plan.kinds
    go = stub.launcher(stub.probe_address(), 0xF00, kinds, fake.stream, launch._cuda_device,
                       slow, failed)  # fmt: skip
    run = stub.runner(go, guards, sources, argmod.launch_view, None)
    args, want = (2.0, x, y), tuple(spec.pack(2.0, x, y))
    stub.probe_arm(7, 0)
    assert run((1, 1, 1), (4, 1, 1), 0, None, args) and run((1, 1, 1), (4, 1, 1), 0, None, args)
    assert seen == [] and slots(7) == packed(want)
    monkeypatch.setattr(device, "opened", 2)
    assert run((1, 1, 1), (4, 1, 1), 0, None, args) is True
    monkeypatch.setattr(device, "opened", 1)
    stub.probe_arm(7, 1)  # the driver refuses: CUDA_ERROR_INVALID_VALUE
    assert run((1, 1, 1), (4, 1, 1), 0, None, args) is True
    assert seen == [("slow", want), ("failed", 1, want)]
    stub.probe_arm(7, 0)
    assert fake.slow == []


# ------------------------------------------------------------------ kernel[grid, block]


@pytest.fixture(params=["compiled", "python"])
def dispatch(request, monkeypatch):
    """Both forms of ``kernel[grid, block]``: the stub's and the Python closure."""
    if request.param == "python":
        monkeypatch.setattr(launchers, "_dispatch", lambda: None)
    elif launchers._dispatch() is None:
        pytest.skip("ember.compiler._dispatch is not built")
    return request.param


def test_configured_launch_keywords_and_slow_paths(fake, dispatch):
    k = ember.kernel(axpy.py_func)
    launch = k[2, 8, fake.stream, 16]
    assert (type(launch).__name__ == "builtin_function_or_method") == (dispatch == "compiled")
    x, y = array(fake, (10,)), array(fake, (10,))
    launch(2.0, x, y)  # first: the slow path compiles
    launch(2.0, x, y)
    assert stub.probe_recorded()[6:8] == (16, 0x1000)
    other = _Stream(0x3000)
    launch(2.0, x, y, stream=other, shared_mem=32)
    assert stub.probe_recorded()[6:8] == (32, 0x3000) and other.submitted == 1
    launch(np.float32(2.0), x, y)  # another signature: the slow path again
    assert len(k.specializations) >= 2
    with pytest.raises(TypeError, match="block|keyword"):
        launch(2.0, x, y, block=3)


def test_configured_launch_errors_hide_internal_frames(fake, dispatch):
    k = ember.kernel(axpy.py_func)
    x = array(fake, (10,))
    with pytest.raises(ember.ArgumentError) as info:
        k[1, 4](2.0, x, "not an array")
    frames = [tb.name for tb in info.traceback]
    assert not any(name in ("_launch_slow", "_slow_dispatch") for name in frames)


def test_the_compiled_launcher_is_collected_with_its_kernel(fake, dispatch):
    import gc
    import weakref

    k = ember.kernel(axpy.py_func)
    k[1, 4]  # kernel -> its configurations -> launcher -> kernel: a cycle
    gone = weakref.ref(k)
    del k
    gc.collect()
    assert gone() is None


def test_ndrange_launches_keep_the_grid_and_take_keywords(fake, dispatch):
    k = ember.kernel(axpy.py_func)
    launch = k.launch(1000)
    assert (type(launch).__name__ == "builtin_function_or_method") == (dispatch == "compiled")
    assert k.launch(1000) is launch  # kept per (n, block)
    x, y = array(fake, (1000,)), array(fake, (1000,))
    launch(2.0, x, y)  # first: the slow path compiles
    launch(3.0, x, y)
    assert stub.probe_recorded()[4:6] == ((4, 1, 1), (256, 1, 1))
    k.launch(1000, block=100)(2.0, x, y)
    assert stub.probe_recorded()[4:6] == ((10, 1, 1), (100, 1, 1))
    other = _Stream(0x4000)
    launch(2.0, x, y, stream=other, shared_mem=8)
    assert stub.probe_recorded()[6:8] == (8, 0x4000) and other.submitted == 1
    submitted = fake.stream.submitted
    k.launch(0)(2.0, x, y)  # no threads: nothing launched
    assert fake.stream.submitted == submitted
    with pytest.raises(TypeError, match="grid|keyword"):
        launch(2.0, x, y, grid=3)
    with pytest.raises(ember.ArgumentError) as info:
        launch(2.0, x, "not an array")
    assert not any(tb.name == "_slow_dispatch" for tb in info.traceback)


def test_the_compiled_launch_calls_the_runner_in_c_and_follows_the_inline_cache(fake):
    """kernel[grid, block] keeps the last specialization's run and calls its C entry; a
    launch of another signature moves the kernel's _last, and the launch follows it."""
    k = ember.kernel(axpy.py_func)
    launch = k[1, 4]
    x = array(fake, (10,))
    y32, y64 = array(fake, (10,)), array(fake, (10,), ember.float64)
    x64 = array(fake, (10,), ember.float64)
    for a, xs, ys in [(2.0, x, y32), (3.0, x64, y64)] * 3:
        launch(a, xs, ys)
        want = packed(k._last.pack(a, xs, ys))
        assert slots(len(want)) == want
    assert fake.compiles == 2
    if launchers._dispatch() is not None:
        assert type(k._last.run.__self__).__ember_flat__ is not None  # the C entry
    slow = k._launch_slow
    k._launch_slow = lambda *a: pytest.fail("the launch left the fast path")
    launch(4.0, x64, y64)  # the signature of _last: launched by the runner alone
    assert slots(len(want)) == packed(k._last.pack(4.0, x64, y64))
    k._launch_slow = slow
    with pytest.raises(ember.ArgumentError):  # a mismatch after the cache: the slow path
        launch(2.0, x, "not an array")


def test_the_compiled_paths_read_the_slots_they_keep_as_they_are_now(fake, dispatch):
    """kernel._last and each array's _lv are read in place (ember/_slots.h): a slot set
    anew is seen by the next launch, and an unset one raises as the attribute read does."""
    k = ember.kernel(axpy.py_func)
    launch = k[1, 4]
    x, y = array(fake, (10,)), array(fake, (10,), offset=8)
    launch(2.0, x, y)
    view = x._lv
    x._lv = None  # forgotten: the guard makes the view again
    launch(3.0, x, y)
    assert x._lv == view and slots(7) == packed(k._last.pack(3.0, x, y))
    spec = k._last
    del k._last
    with pytest.raises(AttributeError):
        launch(2.0, x, y)
    k._last = spec
    launch(4.0, x, y)
    assert slots(7) == packed(spec.pack(4.0, x, y))
    del x._lv
    with pytest.raises(AttributeError):
        launch(2.0, x, y)
    x._lv = None
    launch(5.0, x, y)
    assert slots(7) == packed(spec.pack(5.0, x, y)) and fake.slow == []


def test_threads_launching_one_kernel_count_every_launch(fake):
    """Four threads share one kernel[grid, block] (the kept specialization, the launcher's
    kept grid and block, the stream's counter): every launch is counted once."""

    k = ember.kernel(axpy.py_func)
    launch = k[1, 4]
    x, y = array(fake, (10,)), array(fake, (10,))
    launch(2.0, x, y)
    before = fake.stream.submitted

    def work(_):
        for _ in range(500):
            launch(2.0, x, y)

    errors = run_threads(work)
    assert errors == [] and fake.stream.submitted == before + 2000
    assert fake.slow == [] and fake.compiles == 1


def test_a_compiled_launch_on_a_given_stream_notes_the_arguments(fake, monkeypatch):
    noted = []
    monkeypatch.setattr(argmod, "note_uses", lambda args, s: noted.append((args, s)))
    k = ember.kernel(axpy.py_func)
    x, y = array(fake, (10,)), array(fake, (10,))
    other = _Stream(0x5000)
    k[1, 4](2.0, x, y)  # compiles: the runner is made with the patched note
    k[1, 4](2.0, x, y, stream=other)
    assert noted[-1] == ((2.0, x, y), other) and other.submitted == 1


def test_a_subclass_of_ndarray_is_not_taken_by_the_array_guard(fake):
    class Sub(ember.ndarray):
        __slots__ = ()

        @property
        def _lv(self):  # noqa: PLR6301 - shadows nothing: the guard wants ndarray exactly
            raise AssertionError("the guard read a subclass's _lv")

    run, x, y = axpy_runner(fake, argmod.launch_view, None)
    sub = Sub.__new__(Sub)
    assert run((1, 1, 1), (4, 1, 1), 0, None, (2.0, sub, y)) is False


def test_the_runner_hands_several_devices_and_driver_errors_on(fake, monkeypatch):
    from ember.backends.cuda import device
    from ember.errors import DriverError

    run, x, y = axpy_runner(fake, argmod.launch_view, None)
    monkeypatch.setattr(device, "opened", 2)  # the Python path makes the context current
    assert run((1, 1, 1), (4, 1, 1), 0, None, (2.0, x, y)) is True
    assert len(fake.slow) == 1 and fake.stream.submitted == 2
    monkeypatch.setattr(device, "opened", 1)
    stub.probe_arm(7, 1)  # the driver refuses: CUDA_ERROR_INVALID_VALUE
    with pytest.raises(DriverError, match="CUDA_ERROR_INVALID_VALUE"):
        run((1, 1, 1), (4, 1, 1), 0, None, (2.0, x, y))
    assert fake.stream.submitted == 2  # nothing enqueued, nothing counted


@ember.kernel
def corner(s, t, out):
    if ember.global_id() == 0:
        out[0] = s[()] + t[1, 2, 3]


def test_zero_d_and_three_d_views_pack_as_python_packs(fake):
    s = array(fake, ())
    base = np.zeros((4, 5, 6), np.float32)
    view = base.transpose(2, 0, 1)[::2]  # 3-d, strided, not C
    t = array(fake, view.shape, strides=view.strides)
    out = array(fake, (1,))
    k = ember.kernel(corner.py_func)
    k[1, 1](s, t, out)
    spec = k._last
    assert type(spec.run).__name__ == "builtin_function_or_method"
    k[1, 1](s, t, out)  # the runner: a 0-d view has no shape items, a strided one strides
    assert slots(len(spec.abi)) == packed(spec.pack(s, t, out))


# ------------------------------------------------------------------ RawKernel's native launch
RAW_AXPY = """
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


class _CudaLikeFake(FakeBackend):
    """The fake backend with CUDA's pointers: an address with the view's offset added (the
    only kind RawKernel's native launch takes)."""

    from ember.codegen import dialects as _dialects

    dialect = _dialects.get("cuda")
    pointer_offsets = True

    def native_pointer(self, buffer, offset=0):
        return buffer.handle + offset


def _raw_kernel(fake):
    be = _CudaLikeFake()
    be.stream, be.slow = fake.stream, fake.slow
    k = ember.RawKernel(RAW_AXPY, "axpy")
    k._load(be)  # the fake device is the kernel's device
    return k, be


def test_raw_kernel_launches_take_the_native_runner_and_pack_what_python_packs(fake):
    from ember.runtime import rawkernel

    k, be = _raw_kernel(fake)
    x, y = array(be, (10,)), array(be, (10,), offset=8)
    launch = k[2, 8]
    assert type(launch).__name__ != "function"  # the compiled launcher (ember.compiler._dispatch)
    launch(np.float32(2.0), x, y, 10)  # the Python path, which then makes the runner
    python = stub.probe_recorded()[-1]
    assert k._last is not rawkernel._NO_RUNNER and be.stream.submitted == 1
    assert type(k._last.run).__name__ == "builtin_function_or_method"  # the stub's runner
    counted = k._last = rawkernel._Runner(_counting(k._last.run))
    launch(np.float32(2.0), x, y, 10)
    assert counted.run.hits == 1 and stub.probe_recorded()[-1] == python  # the same slots
    f32 = struct.unpack("<I", struct.pack("<f", 3.5))[0]
    launch(np.float32(3.5), y, x, 7)
    assert slots(4) == (f32, y.buffer.handle + 8, x.buffer.handle, 7)
    assert counted.run.hits == 2 and be.stream.submitted == 3 and fake.slow == []
    k((2,), (8,), (np.float32(3.5), y, x, 7))  # CuPy's form: the same runner
    assert counted.run.hits == 3 and slots(4) == (f32, y.buffer.handle + 8, x.buffer.handle, 7)


def test_raw_kernel_other_types_take_the_python_path_then_a_runner_of_their_own(fake):
    from ember.runtime import rawkernel

    k, be = _raw_kernel(fake)
    x, y = array(be, (10,)), array(be, (10,))
    k[1, 32](np.float32(1.0), x, y, 10)
    first = k._last
    k[1, 32](1.5, x, y, 10)  # a Python float: another runner, tried first from now on
    assert k._older is first and k._last not in (first, rawkernel._NO_RUNNER)
    f15 = struct.unpack("<I", struct.pack("<f", 1.5))[0]
    k[1, 32](1.5, x, y, 10)
    assert slots(4) == (f15, x.buffer.handle, y.buffer.handle, 10)
    k[1, 32](np.float32(1.0), x, y, 10)  # the older runner takes it, and goes first
    assert k._last is first and k._built == 2
    strided = array(be, (5,), strides=(8,))
    k[1, 32](1.5, strided, y, 5)  # another layout: the Python path's pointer, then a runner
    assert slots(2)[1] == strided.buffer.handle and k._built == 3
    with pytest.raises(LaunchError, match="argument 0 must be a float32 scalar"):
        k[1, 32](x, x, y, 10)  # the runners refuse, the Python path explains
    with pytest.raises(LaunchError, match="4"):
        k[1, 32](1.5, x, y)
    host = np.zeros(10, np.float32)
    with pytest.raises(LaunchError, match="argument 1"):
        k[1, 32](1.5, host, y, 10)
    assert be.stream.submitted == 5 and fake.slow == []


def test_raw_kernel_closure_launcher_does_what_the_compiled_one_does(fake, monkeypatch):
    from ember.runtime import argtypes

    monkeypatch.setattr(argtypes, "_launcher_getter", None)  # no ember.compiler._dispatch
    k, be = _raw_kernel(fake)
    x, y = array(be, (10,)), array(be, (10,))
    launch = k[1, 32]
    assert type(launch).__name__ == "function"
    launch(np.float32(1.0), x, y, 10)
    launch(np.float32(2.0), x, y, 10)  # the runner
    assert k._built == 1 and be.stream.submitted == 2
    with pytest.raises(LaunchError, match="argument 0 must be a float32 scalar"):
        launch(x, x, y, 10)


def test_raw_kernel_native_launch_on_a_given_stream_is_noted(fake, monkeypatch):
    from ember.runtime import rawkernel

    noted = []
    monkeypatch.setattr(rawkernel, "note_uses", lambda args, s: noted.append((args, s)))
    k, be = _raw_kernel(fake)
    x, y = array(be, (10,)), array(be, (10,))
    other = _Stream(0x2000)
    k[1, 32](np.float32(1.0), x, y, 10, stream=other)  # Python path
    k[1, 32](np.float32(1.0), x, y, 10, stream=other, shared_mem=64)  # the runner
    assert stub.probe_recorded()[6:8] == (64, 0x2000) and other.submitted == 2
    assert [s for _, s in noted] == [other, other]


def _counting(run):
    """``run`` that counts the launches it took."""

    def counted(*args):
        took = run(*args)
        counted.hits += took
        return took

    counted.hits = 0
    return counted
