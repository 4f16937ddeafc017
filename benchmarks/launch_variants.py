"""Why :class:`CudaFunction` keeps its argument buffers per thread: the measurement.

``python -m benchmarks.launch_variants`` times ``launch`` of the 1-pointer and 3-argument
kernels three ways on a CUDA device: the shipped ``threading.local`` buffers, one shared
buffer under a per-function lock (``acquire``/``release``), and one shared buffer with no
protection at all (wrong with threads; the lower bound).  Not a registered case: it checks
a design decision rather than tracking a figure.
"""

from __future__ import annotations

import threading

from benchmarks.harness import per_call_us
from benchmarks.runtime import N_SMALL, SOURCE
from ember.backends.cuda.launch import CudaFunction, _launch
from ember.runtime.backend import PTR


class LockedFunction(CudaFunction):
    """One shared argument buffer, guarded by a lock held across ``cuLaunchKernel``."""

    def __init__(self, base: CudaFunction, unsafe: bool = False):
        super().__init__(base.handle, base.name, base.params, base.module, direct=False)
        del self.launch  # the instance's own launch (the bindings path): use this class's
        self._slots, self._pointers, self._address = self._plan.new_buffers()
        self._lock = threading.Lock()
        self._unsafe = unsafe

    def launch(self, grid, block, args, shared_mem=0, stream=None) -> None:
        gx, gy, gz = grid
        bx, by, bz = block
        s = stream or self._default_stream
        if self._unsafe:
            self._pack(self._slots, 0, *args)
            (err,) = _launch(
                self.handle, gx, gy, gz, bx, by, bz, shared_mem, s._handle, self._address, 0
            )
        else:
            lock = self._lock
            lock.acquire()
            try:
                self._pack(self._slots, 0, *args)
                (err,) = _launch(
                    self.handle, gx, gy, gz, bx, by, bz, shared_mem, s._handle, self._address, 0
                )
            finally:
                lock.release()
        if err:
            raise RuntimeError(repr(err))
        s.submitted += 1


def main() -> None:
    from ember.runtime import backend as registry

    try:
        be = registry.get("cuda")
    except Exception as exc:
        print(f"skipped: no CUDA device ({exc})")
        return
    module = be.load_module(be.compile(SOURCE, "variants"))
    x, y = be.alloc(N_SMALL * 4), be.alloc(N_SMALL * 4)
    cases = {
        "noop": (module.function("noop", (PTR,)), [y.handle], (32, 1, 1)),
        "axpy3": (
            module.function("axpy3", ("float32", PTR, PTR)),
            [2.0, x.handle, y.handle],
            (N_SMALL, 1, 1),
        ),
    }
    sync = be.default_stream.synchronize
    print("kernel  thread-local  lock   unprotected   (us/launch, median of 7)")
    for name, (fn, args, block) in cases.items():
        variants = [fn, LockedFunction(fn), LockedFunction(fn, unsafe=True)]
        times = [
            per_call_us(lambda f=f, b=block, a=args: f.launch((1, 1, 1), b, a), 20000, 7, sync)
            for f in variants
        ]
        print(f"{name:6s}  {times[0]:12.3f}  {times[1]:5.3f}  {times[2]:11.3f}")


if __name__ == "__main__":
    main()
