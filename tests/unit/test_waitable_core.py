"""ember.runtime.sync.Waitable's counters: C fields (ember.runtime._waitable) or, without
that stub, class defaults shadowed by instance attributes; the same behaviour either way."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from ember.runtime import sync
from ember.runtime.backend import Stream
from ember.runtime.sync import Waitable

core = pytest.importorskip("ember.runtime._waitable", reason="the C stub was not built")


class Counted(Waitable, Stream):
    """A stream's shape: Waitable before the backend's abstract Stream."""

    def _native_query(self):
        return True

    def _native_block(self, blocking):
        pass

    def synchronize(self, blocking=None, spin=None):
        Waitable.synchronize(self, blocking, spin)

    def wait_event(self, event):
        pass

    def close(self):
        self._address = None

    @property
    def handle(self):
        return self._address


def test_the_counters_are_the_c_fields_and_start_at_zero():
    assert issubclass(Waitable, core.WaitableCore)
    s = Counted()
    assert (s.submitted, s.completed, s._address) == (0, 0, None)
    assert "submitted" not in vars(s) and "completed" not in vars(s)


def test_python_reads_and_writes_them_as_attributes():
    s = Counted()
    for _ in range(3):
        s.submitted += 1
    s._address = 0x7000
    assert (s.submitted, s._address) == (3, 0x7000)
    s.synchronize()  # _native_query says done: completed catches up
    assert s.completed == 3 and s.query()
    s.submitted = 2**63 - 1  # a 64-bit counter
    with pytest.raises(OverflowError):
        s.submitted += 1
    with pytest.raises(TypeError):
        s.completed = "3"
    with pytest.raises(AttributeError):
        del s.submitted
    assert (s.submitted, s.completed) == (2**63 - 1, 3)
    s.close()
    assert s._address is None
    del s._address  # an unset handle reads as None
    assert s._address is None


def test_an_instance_keeps_its_own_attributes_and_is_collected_in_a_cycle():
    s = Counted()
    s.note = "kept in the __dict__"
    ref = weakref.ref(s)
    s._address = [s]  # a cycle through the C field: the collector must see it
    del s
    gc.collect()
    assert ref() is None


def test_the_fallback_without_the_stub_counts_the_same():
    # an install without a C compiler: class defaults, instance attributes
    code = (
        "import sys; sys.modules['ember.runtime._waitable'] = None\n"
        "from ember.runtime.sync import Waitable\n"
        "class S(Waitable):\n"
        "    def _native_query(self): return True\n"
        "s = S(); print(s.submitted, s.completed, s._address)\n"
        "s.submitted += 2; s.synchronize(); s._address = 5\n"
        "print(s.submitted, s.completed, s._address, sorted(vars(s)))\n"
        "print(type(s).__mro__[2].__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == [
        "0 0 None",
        "2 2 5 ['_address', 'completed', 'submitted']",
        sync.__name__,
    ]
