"""What a C dialect is: the spellings the one emitter asks for, and the few methods where a
spelling is not enough.

The emitter (:mod:`ember.codegen.emitter`) is written once.  Everything that differs between
CUDA C++, OpenCL C (and any other C-like target) is here: qualifiers, address spaces, type
names, literal suffixes, thread indices, the barrier, math function names, float16 loads and
stores, shuffles - as *class attributes* of a :class:`Dialect` subclass - and, as *methods*,
the pieces of code that differ in more than a word: the body of an atomic helper, the float16
conversion helpers, a thread index that needs a helper function.

A new dialect is a subclass in its own module of this package that sets every attribute
below without a default and implements the abstract methods, plus one line in
:data:`ember.codegen.dialects.REGISTRY`.  Nothing outside its module names it: code that
needs to know what a dialect can do reads an attribute (``separate_offsets``,
``address_spaces``...), never its :attr:`~Dialect.name`.
"""

from __future__ import annotations

import abc
import re
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # the helpers module imports this one
    from ember.codegen.helpers import Helpers
    from ember.dtypes import DType

# The unit of the "index" templates: ``{axis}`` is 0/1/2, ``{xyz}`` is x/y/z.
INDEX_NAMES = (
    "thread_idx", "block_idx", "block_dim", "grid_dim", "global_id", "global_size",
    "warp_size", "lane_id",
)  # fmt: skip


class Dialect(abc.ABC):
    """The spelling of one C dialect (class attributes) and its code snippets (methods).

    Instances are stateless; :func:`ember.codegen.dialects.get` hands out one per name.
    """

    # ---------------------------------------------------------------- identity
    name: ClassVar[str]  # registry key, cache entries, the header comment
    language: ClassVar[str] = "C"  # what users call the language ("CUDA C++", "OpenCL C")
    # spellings only this dialect's sources use: how a RawKernel source written for another
    # backend is recognised (runtime/rawkernel.py); None where a dialect has none of its own
    source_markers: ClassVar[re.Pattern | None] = None
    source_suffix: ClassVar[str] = ".c"  # file name suffix of the source (cache, bundles)
    preamble: ClassVar[str] = ""  # lines every program starts with (includes, typedefs)

    # ---------------------------------------------------------------- declarations
    kernel: ClassVar[str]  # prefix of a kernel definition
    device: ClassVar[str]  # prefix of a device function definition
    # ... of one with a pointer to per-block memory among its parameters (None: ``device``)
    device_shared: ClassVar[str | None] = None
    global_space: ClassVar[str] = ""  # address-space qualifier of device-memory pointers
    shared_space: ClassVar[str] = ""  # ... of pointers to per-block memory
    constant_space: ClassVar[str] = ""  # ... of pointers to constant memory
    shared_decl: ClassVar[str]  # declaration prefix of a static per-block array
    constant_decl: ClassVar[str]  # declaration prefix of a file-scope constant table
    global_table_decl: ClassVar[str] = ""  # ... of one in device memory (target feature
    # "global_tables"; only dialects that have program-scope device memory)
    # Dynamic shared memory (sized at launch): a declaration in the kernel body, or a
    # trailing kernel parameter (the backend binds the launch's bytes to it).  Either names
    # ``em_dyn``, a byte pointer that dynamic arrays are carved from.
    dynamic_shared_decl: ClassVar[str | None] = None
    dynamic_shared_param: ClassVar[str | None] = None
    # element types that per-block / per-thread arrays cannot be declared with, and the
    # type of the same size they are declared with instead (OpenCL's half without fp16)
    array_storage: ClassVar[dict[str, str]] = {}
    # Pointers carry their address space in their type, so a helper taking a pointer is
    # made once per space (``em_atomic_add_i32_global`` / ``..._shared``).
    address_spaces: ClassVar[bool] = False
    # The atomic helpers' bodies differ by space although pointers do not (the cpu
    # dialect's shared atomics are plain read-modify-writes: one thread runs a group), so
    # their names carry the space too: one name for both made a kernel using an atomic on
    # shared and on global memory run the plain one on global memory, losing updates.
    atomics_by_space: ClassVar[bool] = False
    # A kernel cannot receive a pointer into the middle of a buffer: an array view passes
    # its element offset as a separate ``<name>_start`` parameter (codegen/abi.py).
    separate_offsets: ClassVar[bool] = False
    pragmas: ClassVar[dict[str, str]] = {}  # feature -> line enabling it
    feature_names: ClassVar[dict[str, str]] = {}  # feature -> the device API's name for it

    # ---------------------------------------------------------------- code without a device
    # The target of ``kernel.inspect(..., dialect=name)``: a typical device of the dialect.
    offline_arch: ClassVar[str | None] = None
    offline_warp_size: ClassVar[int] = 1
    offline_features: ClassVar[frozenset[str]] = frozenset()

    # ---------------------------------------------------------------- types and literals
    types: ClassVar[dict[str, str]]  # dtype name -> C type of a value
    storage: ClassVar[dict[str, str]] = {}  # dtype name -> C type of an element, where it differs
    suffix: ClassVar[dict[str, str]]  # "int64" / "uint64" / "uint32" / "float32" -> suffix
    unsigned: ClassVar[dict[int, str]]  # width in bytes -> unsigned C type (wrapping arithmetic)
    inf: ClassVar[dict[str, str]]  # "float32"/"float64" -> +infinity expression
    nan: ClassVar[dict[str, str]]
    # A complex number (codegen/complexes.py) is a value type declared by ``complex_struct``
    # ({name}: em_c64 / em_c128, {t}: the C type of a part, {align}: its size in bytes),
    # real part first, read through the fields ``complex_fields``.
    complex_struct: ClassVar[str] = "typedef struct {{ {t} re; {t} im; }} {name};"
    complex_fields: ClassVar[tuple[str, str]] = ("re", "im")

    # ---------------------------------------------------------------- threads
    index: ClassVar[dict[str, str]]  # INDEX_NAMES -> template with {axis} / {xyz}
    barrier: ClassVar[str]
    fence: ClassVar[str] = ""  # ember.threadfence(): order this thread's global writes, device-wide
    lanes: ClassVar[str] = "warpSize"  # an int expression: the sub-group size, in loops

    # ---------------------------------------------------------------- math
    float_suffix_names: ClassVar[bool] = False  # float32 math has an 'f' suffix (sqrtf)
    math_names: ClassVar[dict[str, str]] = {}  # renames (before the suffix)
    predicate: ClassVar[str]  # how isnan(x) & co. are wrapped to give a bool
    missing_math: ClassVar[frozenset[str]] = frozenset()  # written in codegen/mathlib.py
    # popc clz ffs brev -> (32-bit, 64-bit) function; mulhi -> (int32, int64, uint32,
    # uint64); a missing name is written in codegen/mathlib.py
    bit_ops: ClassVar[dict[str, tuple[str, ...]]] = {}

    # ---------------------------------------------------------------- sub-groups
    shuffle: ClassVar[dict[str, str]]  # shfl, shfl_up, shfl_down, shfl_xor -> {v} {k}
    shuffle_types: ClassVar[frozenset[str]]  # dtypes shuffled directly (others via int)
    subgroup_reduce: ClassVar[dict[str, str]] = {}  # warp_sum/min/max -> built-in, if any
    # shfl... with a mask {m} and a width {w} (a power of two); empty where the dialect has
    # no width argument (the emitter then computes the source lane itself)
    shuffle_sync: ClassVar[dict[str, str]] = {}
    # ballot, all_sync, any_sync ({p}: a bool, {m}: the mask), syncwarp ({m}), activemask:
    # the native spellings on a device with sub-groups (others emulate them)
    votes: ClassVar[dict[str, str]] = {}
    # bytes of shared memory with sizes fixed at compile time a block may declare (None: no
    # limit of the language's own; the device's shared memory still bounds a launch)
    static_shared_limit: ClassVar[int | None] = None

    # ---------------------------------------------------------------- float16 in memory
    f16_load: ClassVar[str]  # template {ptr} {i}: a float from half storage
    f16_store: ClassVar[str]  # template {ptr} {i} {v}: a statement
    f16_helpers: ClassVar[tuple[str, ...]] = ()  # Helpers.narrow names the two templates call

    # ---------------------------------------------------------------- atomics
    atomic_volatile: ClassVar[str] = ""  # qualifier of the pointer an atomic helper takes
    address_type: ClassVar[str]  # an unsigned integer type that holds a pointer
    # itemsize -> (bits type, to bits, from bits, compare-and-swap): float CAS loops
    cas_bits: ClassVar[dict[int, tuple[str, str, str, str]]]

    # ---------------------------------------------------------------- run-time checks
    # codegen/runtime_checks.py and print: pointer types of the error claim word and record
    # ("claim", "record"), the claim's compare-and-swap ("claim_cas", template {p}), the
    # fence before the record is marked complete ("fence"), float bit patterns
    # ("f32_bits", "f64_bits", template {x}), printf conversions and casts ("int_fmt",
    # "uint_fmt", "int_cast", "uint_cast", "float_cast") and the no-inline qualifier ("cold")
    checks: ClassVar[dict[str, str]]

    # ---------------------------------------------------------------- work-groups
    # Extra trailing parameters of the kernel and of every device function, and the
    # arguments every call passes for the latter (the cpu dialect's current work-item).
    kernel_hidden: ClassVar[tuple[str, ...]] = ()
    device_hidden: ClassVar[tuple[str, ...]] = ()
    call_hidden: ClassVar[tuple[str, ...]] = ()
    # The statement that ends the current thread of a kernel (a failed check's bail).
    kernel_exit: ClassVar[str] = "return;"
    # Generating code with no device at hand (kernel.inspect(dialect=...)): the sub-group
    # size and the features to assume.
    offline_warp_size: ClassVar[int] = 1
    offline_features: ClassVar[frozenset[str]] = frozenset({"fp64", "int64_atomics"})

    # ================================================================ methods
    def lower(self, program):
        """The program as this dialect's emitter prints it.  Default: unchanged.  (The cpu
        dialect turns the work-items of a group into loops: ``codegen/workgroup.py``.)"""
        return program

    def kernel_prologue(self, program) -> list[str]:
        """Lines at the start of the kernel's body, before its locals.  Default: none."""
        return []

    def launch_bounds(self, bounds: tuple[int, int] | None) -> str:
        """The kernel's declaration of ``@ember.kernel(launch_bounds=)`` (max threads per
        block, min blocks per multiprocessor; a trailing space).  Default: none (the limit
        on threads is still checked at launch)."""
        return ""

    def kernel_entry(self, name: str, params: list, program) -> str:
        """Code after the kernel: an entry point calling it.  ``params`` holds (C type,
        :class:`~ember.codegen.abi.AbiParam`) of each kernel parameter; ``program`` is the
        lowered program.  Default: none."""
        return ""

    def statement(self, emitter, s, depth: int) -> None:
        """Print statement ``s`` of a kind only :meth:`lower` makes."""
        raise AssertionError(f"the {self.name} dialect cannot emit {type(s).__name__}")

    def space(self, space: str) -> str:
        """The qualifier of a pointer into ``space`` memory (``"global"``, ``"shared"``,
        ``"local"`` (per thread: the default space) or ``"constant"``)."""
        return {
            "global": self.global_space,
            "shared": self.shared_space,
            "local": "",
            "constant": self.constant_space,
        }[space]

    def atomic_pointer(self, ctype: str, space: str) -> str:
        """The type of the pointer an atomic helper on ``ctype`` elements takes."""
        return f"{self.atomic_volatile}{self.space(space)}{ctype}*"

    def index_expr(self, h: Helpers, name: str, axis: int) -> str:
        """A thread-index intrinsic (``thread_idx``, ``lane_id``...) along ``axis``."""
        return self.index[name].format(axis=axis, xyz="xyz"[axis])

    @abc.abstractmethod
    def atomic_body(self, h: Helpers, op: str, dt: DType, t: str, space: str) -> str:
        """The body of helper ``em_atomic_<op>``: atomically apply ``op`` to ``*p`` (a
        pointer of :meth:`atomic_pointer`, ``dt`` elements of C type ``t``) with ``v`` (and
        ``expected`` for ``cas``), returning the previous value.  Where the dialect has no
        instruction, :func:`ember.codegen.atomics.cas_loop` writes a compare-and-swap loop."""

    def grid_sync_body(self, h: Helpers) -> str | None:
        """The body of ``em_grid_sync(bar)`` (every thread of the grid waits; ``bar`` is a
        zero-based barrier word of the launch in device memory), or None where the dialect
        has no grid-wide synchronization (the typer refuses ``grid_sync`` there)."""
        return None

    def narrow_memory(self, dt: DType) -> tuple[str, str, tuple[str, ...]]:
        """How elements of 16-bit float ``dt`` are read and written: the load template
        ({ptr} {i}), the store template ({ptr} {i} {v}) and the :meth:`Helpers.narrow`
        names they call.  float16: the ``f16_*`` attributes; bfloat16: its bits, the same
        in every dialect (:meth:`Helpers._bf16`)."""
        if dt.name == "float16":
            return self.f16_load, self.f16_store, self.f16_helpers
        short = "bf16"
        load, store = (
            f"em_{short}_load({{ptr}}[{{i}}])",
            f"{{ptr}}[{{i}}] = em_{short}_store({{v}});",
        )
        return load, store, ("load", "store")

    @abc.abstractmethod
    def f16_helper(self, h: Helpers, name: str, what: str) -> str:
        """The definition of float16 helper ``name``: ``what`` is ``"round"`` (float ->
        nearest half, as a float), ``"round_d"`` (the same from double), or one of
        :attr:`f16_helpers` that the load/store templates call."""

    def __repr__(self) -> str:
        return f"<ember dialect {self.name}>"

    def __str__(self) -> str:
        return self.name

    # A dialect equals its name, so tables keyed by name (tests' sources per dialect) take
    # the object.  Ember's own code asks attributes instead (tests/unit/test_layers.py).
    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self.name
        return other is self

    def __hash__(self) -> int:
        return hash(self.name)
