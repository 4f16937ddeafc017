"""Error messages for user mistakes in kernels: the text, ``file:line:col``, the source line
with a caret, the stage and a hint - all before any device work (no device needed here)."""

from __future__ import annotations

import math
import pathlib
import re

import numpy as np
import pytest

import ember
from ember.codegen import dialects
from ember.compiler import driver
from ember.errors import CompileError, InternalError

THIS = pathlib.Path(__file__)
SOURCE = THIS.read_text().splitlines()
F32 = np.zeros(4, np.float32)
I8 = np.zeros(4, np.int8)
U8 = np.zeros(4, np.uint8)
M32 = np.zeros((4, 4), np.float32)
LIMIT = 8  # a module-level constant


def line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (a comment at the mistake)."""
    return next(i for i, text in enumerate(SOURCE, 1) if text.rstrip().endswith(marker))


def compile_error(kernel, *args, dialect="opencl"):
    """Run the front end on ``kernel`` for ``args``; return the error it raises."""
    with pytest.raises(ember.EmberError) as info:
        kernel.inspect(*args, stage="ir", dialect=dialect)
    return info.value


def check(exc, cls, message: str, marker: str, stage: str, hint: str | None = None):
    assert isinstance(exc, cls), f"{type(exc).__name__}: {exc}"
    text = str(exc)
    assert re.search(message, text), text
    line = line_of(marker)
    assert f"{THIS}:{line}:" in text, text
    assert exc.line == line
    source_line = SOURCE[line - 1].rstrip()
    assert f"{line} | {source_line}" in text
    caret = text.splitlines()[text.splitlines().index(f"  {line} | {source_line}") + 1]
    assert caret.strip().startswith("|") and "^" in caret
    assert caret.index("^") == len(f"  {' ' * len(str(line))} | ") + exc.col - 1
    assert f"stage: {stage}" in text
    if hint:
        assert re.search(hint, text), text


# ------------------------------------------------------------------------- names & syntax
@ember.kernel
def unknown_name(x):
    x[0] = LIMTI  # mistake: unknown-name  # noqa: F821


def test_unknown_name_suggests_the_close_one():
    e = compile_error(unknown_name, F32)
    check(
        e,
        ember.KernelSyntaxError,
        "name 'LIMTI' is not defined",
        "# mistake: unknown-name  # noqa: F821",
        "syntax",
        "did you mean 'LIMIT'",
    )
    assert e.col == SOURCE[e.line - 1].index("LIMTI") + 1


@ember.kernel
def comprehension(x):
    x[0] = [v for v in range(3)][0]  # mistake: comprehension


def test_list_comprehension_is_unsupported_syntax():
    check(
        compile_error(comprehension, F32),
        ember.KernelSyntaxError,
        "list comprehensions cannot be used in kernels",
        "# mistake: comprehension",
        "syntax",
        "write a loop",
    )


@ember.kernel
def uses_try(x):
    try:  # mistake: try
        x[0] = 1
    except ValueError:
        pass


def test_try_statement_is_refused():
    check(
        compile_error(uses_try, F32),
        ember.KernelSyntaxError,
        "'try' is not supported",
        "# mistake: try",
        "syntax",
        "cannot catch exceptions",
    )


@ember.kernel
def slicing(x):
    x[1:3] = x[0]  # mistake: slice


def test_assigning_to_a_slice_is_refused_with_a_hint():
    check(
        compile_error(slicing, F32),
        ember.KernelSyntaxError,
        "assigning to a slice is not supported",
        "# mistake: slice",
        "syntax",
        "one at a time",
    )


@ember.kernel
def returns_value(x):
    return x[0]  # mistake: return


def test_kernel_returning_a_value():
    check(
        compile_error(returns_value, F32),
        ember.KernelSyntaxError,
        "a kernel cannot return a value",
        "# mistake: return",
        "syntax",
        "write the result into an array",
    )


@ember.kernel
def prints(x):
    print("x =", x)  # mistake: print


def test_print_of_a_whole_array_is_refused():
    check(
        compile_error(prints, F32),
        ember.KernelTypeError,
        r"print\(\) in a kernel cannot show array\(float32, 1d, contiguous\)",
        "# mistake: print",
        "typing",
        r"print single elements, e.g. print\(x\[i\]\)",
    )


@ember.kernel
def loops_over_array(x):
    for v in x:  # mistake: for-array
        x[0] = v


def test_for_loop_must_use_range():
    check(
        compile_error(loops_over_array, F32),
        ember.KernelSyntaxError,
        r"must iterate over range\(\.\.\.\)",
        "# mistake: for-array",
        "syntax",
    )


@ember.kernel
def before_assignment(x):
    if x[0] > 0:
        x[1] = later  # mistake: unbound  # noqa: F821
    later = 2.0
    x[2] = later


def test_variable_used_before_assignment():
    check(
        compile_error(before_assignment, F32),
        ember.KernelSyntaxError,
        "local variable 'later' is used before it is assigned",
        "# mistake: unbound  # noqa: F821",
        "syntax",
    )


@ember.kernel
def loop_carried(x, out):
    total = 0.0
    for k in range(x.shape[0]):
        if k > 0:
            total += previous  # noqa: F821 (assigned by an earlier iteration: fine)
        previous = x[k]  # noqa: F841
    out[0] = total


def test_loop_carried_values_are_not_flagged():
    assert "total" in loop_carried.inspect(F32, F32, stage="source", dialect="opencl")


# ------------------------------------------------------------------------- types
@ember.kernel
def array_arithmetic(a, x, y):
    i = ember.global_id()
    y[i] = a * x + y[i]  # mistake: array-times-scalar


def test_arithmetic_on_a_whole_array():
    e = compile_error(array_arithmetic, 2.0, F32, F32)
    check(
        e,
        ember.KernelTypeError,
        r"cannot use array\(float32, 1d, contiguous\) in '\*'",
        "# mistake: array-times-scalar",
        "typing",
        r"index the array .* x\[i\]",
    )


@ember.kernel
def unify_failure(x):
    v = 1.0
    if x[0] > 0:
        v = x  # mistake: unify  # noqa: F841


def test_variable_that_changes_kind():
    check(
        compile_error(unify_failure, F32),
        ember.KernelTypeError,
        r"variable 'v' holds Python float elsewhere but is assigned array\(float32.*\) here",
        "# mistake: unify  # noqa: F841",
        "typing",
        "use a new name",
    )


@ember.kernel
def too_few_indices(m):
    m[0] = 1.0  # mistake: one-index


def test_two_d_array_indexed_once():
    check(
        compile_error(too_few_indices, M32),
        ember.KernelTypeError,
        "needs 2 indices, got 1",
        "# mistake: one-index",
        "typing",
        r"x\[i, j\]",
    )


@ember.kernel
def float_index(x):
    x[x[0]] = 1.0  # mistake: float-index


def test_float_index():
    check(
        compile_error(float_index, F32),
        ember.KernelTypeError,
        "array indices must be integers, got float32",
        "# mistake: float-index",
        "typing",
        r"int\(x\)",
    )


@ember.kernel
def float_bits(x):
    x[0] = x[1] ^ 3  # mistake: float-xor


def test_bitwise_operator_on_floats():
    check(
        compile_error(float_bits, F32),
        ember.KernelTypeError,
        r"'\^' needs integers",
        "# mistake: float-xor",
        "typing",
    )


@ember.kernel
def overflowing_literal(u):
    u[0] = u[1] + 300  # mistake: overflow


def test_python_int_out_of_range_for_uint8():
    check(
        compile_error(overflowing_literal, U8),
        ember.KernelTypeError,
        "Python integer 300 is out of bounds for uint8",
        "# mistake: overflow",
        "typing",
        r"ember\.uint8",
    )


@ember.kernel
def negative_power(x):
    x[0] = 2**-1 + x[1]  # mistake: negative-power


def test_integer_to_negative_constant_power():
    check(
        compile_error(negative_power, I8),
        ember.KernelTypeError,
        "integers to negative integer powers are not allowed",
        "# mistake: negative-power",
        "typing",
        "make the base a float",
    )


@ember.kernel
def small_atomic(x):
    ember.atomic_add(x, 0, 1)  # mistake: int8-atomic


def test_atomics_on_int8_elements():
    check(
        compile_error(small_atomic, I8),
        ember.KernelTypeError,
        r"atomic_add\(\) is not available for int8",
        "# mistake: int8-atomic",
        "typing",
        "int32, uint32, int64",
    )


@ember.kernel
def dynamic_shared(x):
    s = ember.shared(int(x[0]), ember.float32)  # mistake: shared-shape
    s[0] = 1.0


def test_shared_memory_size_must_be_known_at_launch():
    check(
        compile_error(dynamic_shared, F32),
        ember.KernelTypeError,
        "must be a constant or computable at launch",
        "# mistake: shared-shape",
        "typing",
        r"ember\.shared\(ember\.block_dim\.x, ember\.float32\)",
    )


def add_one(v):
    return v + undefined_in_helper  # mistake: in-device-function  # noqa: F821


@ember.kernel
def calls_bad_helper(x):
    x[0] = add_one(x[1])  # the call site


def test_errors_inside_device_functions_name_the_call_site():
    e = compile_error(calls_bad_helper, F32)
    check(
        e,
        ember.KernelSyntaxError,
        "name 'undefined_in_helper' is not defined",
        "# mistake: in-device-function  # noqa: F821",
        "syntax",
    )
    assert f"called from {THIS}:{line_of('# the call site')}" in str(e)


def wrong_arity(a, b):
    return a + b


@ember.kernel
def calls_with_wrong_count(x):
    x[0] = wrong_arity(x[1])  # mistake: arity


def test_device_function_argument_count():
    check(
        compile_error(calls_with_wrong_count, F32),
        ember.KernelTypeError,
        "wrong_arity\\(\\) is missing argument 'b'",
        "# mistake: arity",
        "typing",
    )


def recursive(n):
    return 1 if n <= 1 else n * recursive(n - 1)  # mistake: recursion


@ember.kernel
def calls_recursive(x):
    x[0] = recursive(5)


def test_recursion_is_refused():
    check(
        compile_error(calls_recursive, F32),
        ember.KernelSyntaxError,
        "recursive call of 'recursive' is not supported",
        "# mistake: recursion",
        "typing",
        "as a loop",
    )


@ember.kernel
def shuffles(x):
    x[0] = ember.shfl_down(x[1], 1)  # mistake: no-subgroups


def test_shuffle_on_subgroups_without_the_relative_shuffle_extension():
    from ember.compiler import driver
    from ember.frontend.types import Target

    target = Target("opencl", None, 16, frozenset({"subgroups", "subgroup_shuffle"}))
    types, _, _ = shuffles._types((shuffles_example(),), need_backend=False)
    with pytest.raises(ember.EmberError) as info:
        driver.typed_ir(shuffles.captured, types, target)
    check(
        info.value,
        ember.UnsupportedFeatureError,
        r"ember\.shfl_down\(\) needs cl_khr_subgroup_shuffle_relative",
        "# mistake: no-subgroups",
        "target check",
        "width=",
    )
    assert "shfl_down" in shuffles.inspect(F32, stage="source", dialect="cuda")
    # a device without sub-groups emulates it through shared memory
    assert "em_wxchg" in shuffles.inspect(F32, stage="source", dialect="opencl")


def shuffles_example():
    from ember.compiler.kernel import _NumpyExample

    return _NumpyExample(F32)


@ember.kernel
def calls_math_wrongly(x):
    x[0] = math.gamma  # mistake: function-as-value


def test_function_used_as_a_value():
    check(
        compile_error(calls_math_wrongly, F32),
        ember.KernelTypeError,
        "builtin_function_or_method 'gamma' is not a value",
        "# mistake: function-as-value",
        "typing",
    )


# ------------------------------------------------------------------------- launch arguments
@ember.kernel
def two_params(x, y):  # mistake: launch
    x[0] = y[0]


def test_wrong_argument_count_at_launch():
    check(
        compile_error(two_params, F32),
        ember.ArgumentError,
        r"kernel 'two_params' takes 2 argument\(s\) \(x, y\), got 1",
        "# mistake: launch",
        "launch",
        "one value per parameter",
    )


def test_numpy_array_at_launch_names_asarray():
    # (in inspect() a NumPy array stands for an array type; at launch it is refused)
    with pytest.raises(
        ember.ArgumentError, match=r"(?s)NumPy array is host memory.*ember\.asarray"
    ):
        two_params._types((F32, F32))


def test_unsupported_argument_type_at_launch():
    with pytest.raises(
        ember.ArgumentError,
        match=r"argument 'y' \(#1\): a list cannot be "
        r"passed to a kernel",
    ) as info:
        two_params._types((ember.float32(1), [1, 2]), need_backend=False)
    assert info.value.line == line_of("# mistake: launch")
    assert "hint: pass a tuple of numbers" in str(info.value)


def test_calling_a_kernel_like_a_function():
    with pytest.raises(ember.LaunchError, match=r"two_params\[blocks, threads\]"):
        two_params(F32, F32)


def test_intrinsics_outside_kernels():
    with pytest.raises(ember.EmberError, match=r"ember\.global_id\(\) can only be used inside"):
        ember.global_id()
    with pytest.raises(ember.EmberError, match=r"ember\.thread_idx\.x can only be used inside"):
        ember.thread_idx.x  # noqa: B018
    assert ember.sqrt(4.0) == 2.0  # math works on the host


def test_lambda_kernels_are_refused():
    with pytest.raises(ember.KernelSyntaxError, match="cannot compile a lambda"):
        ember.kernel(lambda x: None).inspect(F32, dialect="cuda")


# ------------------------------------------------------------------------- internal errors
class _BrokenCompiler:
    dialect = dialects.get("opencl")

    def compile(self, source, name, options):
        raise CompileError("build failed", log="error: expected ';'", source=source)


def test_generated_source_that_does_not_compile_is_an_internal_error():
    with pytest.raises(InternalError) as info:
        driver.build(_BrokenCompiler(), "int broken(\n", "broken", ())
    text = str(info.value)
    assert "does not compile" in text and "error: expected ';'" in text
    assert "1 | int broken(" in text and "please report" in text


# ------------------------------------------------------------------------- issue 18
@ember.kernel
async def async_kernel(x):  # mistake: async-kernel
    x[0] = 1.0


def test_an_async_kernel_is_refused_at_its_def_line():
    exc = compile_error(async_kernel, F32)
    check(exc, ember.KernelSyntaxError, "cannot compile async function", "# mistake: async-kernel",
          "capture", "plain 'def'")  # fmt: skip


# A decorator from another module (its wrapper's globals are that module's, without LIMIT).
_ELSEWHERE: dict = {}
exec(  # noqa: S102
    "import functools\n"
    "def wrapping(fn):\n"
    "    @functools.wraps(fn)\n"
    "    def wrapper(*args):\n"
    "        return fn(*args)\n"
    "    return wrapper\n",
    _ELSEWHERE,
)
_wrapping = _ELSEWHERE["wrapping"]


@_wrapping
def decorated_helper(v):
    return v * LIMIT  # a global of this module, not of the decorator's


@ember.kernel
def uses_decorated(x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = decorated_helper(x[i])


def test_a_decorated_device_function_reads_its_own_globals():
    source = uses_decorated.inspect(F32, F32, stage="source", dialect="opencl")
    helper = source[source.index("static float decorated_helper") :]
    assert re.search(r"return v \* 8", helper), helper  # LIMIT = 8, read from this module


def _deep_kernel(terms: int, tmp_path):
    path = tmp_path / f"deep{terms}.py"
    body = " + ".join(f"x[{k % 4}]" for k in range(terms))
    path.write_text(f"import ember\n\n\n@ember.kernel\ndef deep(x, y):\n    y[0] = {body}\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"deep{terms}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.deep


@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_a_250_term_expression_compiles(tmp_path, dialect):
    """A left-leaning sum 250 levels deep: a raw RecursionError before issue 18."""
    source = _deep_kernel(250, tmp_path).inspect(F32, F32, stage="source", dialect=dialect)
    assert source.count("x.data[") == 250


def test_chained_assignment_evaluates_its_value_once():
    @ember.kernel
    def chained(x, y):
        i = ember.global_id()
        if i < x.shape[0]:
            x[i] = y[i] = x[i] + 1.0

    body = chained.inspect(F32, F32, stage="source", dialect="opencl").split("x[i] = y[i]")[-1]
    # one evaluation into a temporary, then two stores of it (never x[i] + 1 read twice)
    assert body.count("+ 1.0f") == 1, body


@ember.kernel
def double_negation(x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = -(-x[i]) + -(-1.5)  # noqa: B002 - double negation on purpose


@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_a_double_negation_is_not_a_decrement(dialect):
    """The fuzz test found ``-(-x)`` emitted as ``--x`` (C's decrement: no compile)."""
    source = double_negation.inspect(F32, F32, stage="source", dialect=dialect)
    statement = next(ln for ln in source.splitlines() if "y.data[i] =" in ln)
    assert "--" not in statement and statement.count("-") == 2, statement


@ember.kernel
def oversized_tiles(x):
    tile = ember.shared((128, 100), ember.float32)
    spare = ember.shared(4096, ember.float64)
    i = ember.thread_idx.x
    tile[0, i] = x[i]
    spare[i] = x[i]
    ember.barrier()
    x[i] = tile[0, i] + spare[i]


def test_static_shared_memory_past_cudas_limit_is_refused_with_the_arrays_named():
    # 51200 + 32768 bytes > CUDA's 48 KiB of fixed-size __shared__ arrays a block (NVRTC's
    # ptxas would refuse it with a message about generated code)
    with pytest.raises(ember.UnsupportedFeatureError) as info:
        oversized_tiles.inspect(np.zeros(8, np.float32), stage="source", dialect="cuda")
    message = str(info.value)
    assert "83968 bytes" in message and "49152" in message
    assert "'tile' 51200 bytes at" in message and "test_compiler_errors.py" in message
    assert "size the largest at launch" in message
    # the same kernel is fine where the language sets no such limit
    assert "__kernel" in oversized_tiles.inspect(
        np.zeros(8, np.float32), stage="source", dialect="opencl"
    )
