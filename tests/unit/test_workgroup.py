"""The cpu dialect's work-group lowering (codegen/workgroup.py, regions.py, uniformity.py):
what the generated C looks like, and which kernels are refused.  No device: the source is
generated for the cpu dialect offline (kernel.inspect(..., dialect="cpu"))."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.codegen.uniformity import Uniformity
from ember.compiler import driver

F32 = np.zeros(8, np.float32)
I32 = np.zeros(8, np.int32)
B = 64


def c_source(kernel, *args) -> str:
    """The kernel's C, without the runtime header."""
    text = kernel.inspect(*args, stage="source", dialect="cpu")
    return text.split("// ---- end of the runtime ----", 1)[1]


def regions(text: str) -> int:
    return text.count("#define EM_EXIT")


# ---------------------------------------------------------------------- kernels


@ember.kernel
def axpy(a, x, y):
    i = ember.global_id()
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@ember.kernel
def early_exit(x, n):
    i = ember.global_id()
    if i >= n:
        return
    x[i] = 1.0


@ember.kernel
def reduce_block(x, out):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    buf[t] = x[ember.global_id()]
    ember.barrier()
    step = B // 2
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        ember.barrier()
        step //= 2
    if t == 0:
        out[ember.block_idx.x] = buf[0]


@ember.kernel
def tiles(x, out, k):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    acc = 0.0
    for j in range(k):
        buf[t] = x[j * B + t]
        ember.barrier()
        acc += buf[B - 1 - t]
        ember.barrier()
    out[ember.global_id()] = acc


@ember.kernel
def recomputed(x, out):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    row = ember.block_idx.x * B + t  # from indices only: recomputed where it is read
    buf[t] = x[row]
    ember.barrier()
    out[row] = buf[B - 1 - t]


@ember.kernel
def local_only(x, out):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    v = x[t] * 2.0  # set and used before the barrier only
    buf[t] = v
    ember.barrier()
    w = buf[B - 1 - t]  # set and used after it only
    out[t] = w


@ember.kernel
def carried(x, out):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    last = 0.0
    for j in range(4):
        buf[t] = x[t] + last  # reads the previous pass's value of `last`
        ember.barrier()
        last = buf[(t + j) % B]
        ember.barrier()
    out[t] = last


@ember.kernel
def returns_first(x, out, n):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    if t >= n:
        return
    buf[t] = x[t]
    ember.barrier()
    out[t] = buf[n - 1 - t]


@ember.kernel
def divergent_if(x):
    t = ember.thread_idx.x
    if t < 5:
        ember.barrier()
    x[t] = 1.0


@ember.kernel
def divergent_loop(x):
    t = ember.thread_idx.x
    while t < x.shape[0]:
        ember.barrier()
        t += 1


@ember.kernel
def divergent_break(x):
    t = ember.thread_idx.x
    for j in range(10):
        ember.barrier()
        if t == j:
            break
    x[t] = 1.0


@ember.kernel
def uniform_break(x, limit):
    t = ember.thread_idx.x
    for j in range(10):
        x[t] += 1.0
        ember.barrier()
        if j == limit:
            break


@ember.kernel
def impure_condition(x, counter):
    while ember.atomic_add(counter, 0, 1) < 3:
        ember.barrier()
    x[0] = 1.0


def sync_helper(x):
    ember.barrier()
    return x


def sync_early(x):
    if x > 0:
        return x
    ember.barrier()
    return -x


@ember.kernel
def returns_inside(x):
    x[0] = sync_early(x[0])


@ember.kernel
def barrier_in_function(x):
    t = ember.thread_idx.x
    x[t] = sync_helper(x[t])


@ember.kernel
def warp_sums(x, out):
    i = ember.global_id()
    s = ember.warp_sum(x[i])
    if ember.lane_id() == 0:
        out[i // 32] = s


@ember.kernel
def warp_in_branch(x, out):
    i = ember.global_id()
    v = x[i]
    if ember.thread_idx.x < 32:  # the first warp only: uniform per warp
        v = ember.warp_max(v)
    out[i] = v


@ember.kernel
def assigns_param(x, n):
    buf = ember.shared(B, ember.float32)
    t = ember.thread_idx.x
    n = n + t
    buf[t] = 1.0
    ember.barrier()
    x[t] = buf[t] + n


def index_of():
    return ember.global_id()


@ember.kernel
def calls_function(x):
    i = index_of()
    if i < x.shape[0]:
        x[i] = 2.0


# ---------------------------------------------------------------------- structure


def test_guard_becomes_the_bound_of_the_item_loop():
    text = c_source(axpy, np.float32(2), F32, F32)
    assert regions(text) == 1
    assert "int64_t em_x1 = x.shape[0] - em_gx * em_bx;  // the guard, as a bound" in text
    assert "for (int64_t em_lx = 0; em_lx < em_x1; em_lx++)" in text
    assert "if (i < x.shape[0])" not in text  # the branch is gone: a plain counted loop
    assert "y.data[i] = a * x.data[i] + y.data[i];" in text


def test_early_return_becomes_the_bound():
    text = c_source(early_exit, F32, 5)
    assert "int64_t em_x1 = n - em_gx * em_bx;" in text
    assert "EM_EXIT" in text and "em_done" not in text


def test_barriers_split_the_kernel_and_uniform_loops_run_once_per_group():
    text = c_source(reduce_block, F32, F32)
    assert regions(text) == 3  # before the loop, if t < step, after it
    # step is the same for every work-item and set only between regions: one scalar
    assert "    step_ = 32;\n    // test_workgroup.py:54  while step > 0:\n" in text
    assert "while (step_ > 0) {" in text and "step_ = em_floordiv_i64(step_, 2);" in text
    assert "int64_t em_x1 = step_;  // the guard, as a bound" in text  # if t < step
    assert "buf[t] = buf[t] + buf[t + step_];" in text
    assert "barrier" not in text.replace("// barrier", "")


def test_a_group_level_for_loop_runs_once_per_group():
    text = c_source(tiles, F32, F32, 3)
    assert "for (j = 0; j < k; j++) {" in text and "buf[t] = x.data[j * 64 + t];" in text
    assert "float acc_w[em_wg];" in text  # carried across the barriers


def test_values_inside_one_region_stay_plain_locals():
    text = c_source(local_only, F32, F32)
    assert "v_w[" not in text and "w_w[" not in text
    assert "    float v;" in text and "    float w;" in text


def test_values_computed_from_indices_are_recomputed_in_each_region():
    text = c_source(recomputed, F32, F32)
    assert "_w[em_wg]" not in text
    assert "row = em_gx * 64 + t;" in text  # where it was set
    assert "row = em_gx * 64 + em_lx;" in text  # in the region after the barrier


def test_a_value_carried_round_a_group_loop_gets_one_slot_per_work_item():
    text = c_source(carried, F32, F32)
    assert "float last_w[em_wg];" in text


def test_return_before_a_barrier_keeps_the_work_item_out_of_later_regions():
    text = c_source(returns_first, F32, F32, 10)
    assert "bool em_done[em_wg];" in text
    assert "em_done[em_wi] = 1; EM_EXIT;" in text  # not a bound: the region after must know
    assert "if (em_done[em_wi]) continue;  // it returned" in text
    assert "while (em_lead < em_wg && em_done[em_lead]) em_lead++;" in text


def test_uniform_break_of_a_group_loop_is_a_group_level_break():
    text = c_source(uniform_break, F32, 3)
    assert "        if (j == limit) {\n            // test_workgroup.py:154  break\n" in text


def test_assigned_parameters_become_per_work_item_copies():
    text = c_source(assigns_param, F32, 4)
    # the copy is set once for the group; the new value, a web of its own, per work-item
    assert "n_v = n;" in text
    assert "n_v_1_w[em_wi] = n_v + t;" in text  # t = em_lx is recomputed


def test_device_functions_receive_the_work_item():
    text = c_source(calls_function, F32)
    assert "static int64_t index_of(const em_item_t* em_it)" in text
    assert "(em_it->g[0] * em_it->d->b[0] + em_it->l[0])" in text
    assert "em_item.l[0] = em_lx;" in text  # the kernel keeps em_item up to date
    assert "index_of(em_it)" in text


# ---------------------------------------------------------------------- sub-groups


def test_warp_sum_reads_a_scratch_array_in_the_next_region():
    text = c_source(warp_sums, F32, F32)
    assert "float em_lanes_float32[em_wg];" in text
    assert "em_lanes_float32[em_wi] = x.data[i];" in text
    assert "em_lane1 < em_min_i64(32, em_wg - (em_wi - (em_wi & 31)))" in text
    assert regions(text) == 2


def test_sub_group_operation_in_a_warp_uniform_branch_is_predicated():
    text = c_source(warp_in_branch, F32, F32)
    assert "em_p0 = em_lx < 32;" in text  # the condition, recomputed in each region
    assert text.count("if (em_p0) {") == 2


def test_barrier_under_a_varying_if_synchronizes_the_work_items_that_take_it():
    text = c_source(divergent_if, F32)
    assert "em_p0 = t < 5;" in text  # the condition, per work-item
    assert regions(text) == 2  # the barrier still splits the kernel


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "kernel, args, what",
    [
        (divergent_loop, (F32,), r"this while contains ember.barrier\(\)"),
        (divergent_break, (F32,), r"this for contains ember.barrier\(\)"),
    ],
    ids=["while", "break"],
)
def test_barrier_under_a_varying_condition_is_refused(kernel, args, what):
    with pytest.raises(ember.KernelSyntaxError, match=what) as info:
        kernel.inspect(*args, stage="source", dialect="cpu")
    text = str(info.value)
    assert "differs between the work-items of a block" in text or "leave it early" in text
    assert "test_workgroup.py" in text and "hint:" in text


def test_impure_condition_of_a_group_level_loop_is_refused():
    with pytest.raises(ember.KernelSyntaxError, match="assign the condition's value"):
        impure_condition.inspect(F32, I32, stage="source", dialect="cpu")


def test_device_functions_with_barriers_are_inlined():
    text = c_source(barrier_in_function, F32)
    assert "float sync_helper(" not in text and regions(text) == 2  # no C function left
    assert "x_sync_helper1_w[em_wi] = x.data[t];" in text  # the parameter, from the argument


def test_an_inlined_function_returning_early_is_refused():
    with pytest.raises(ember.KernelSyntaxError, match="returns before its end"):
        returns_inside.inspect(F32, stage="source", dialect="cpu")


def test_other_dialects_keep_barriers_in_device_functions():
    assert "barrier(" in barrier_in_function.inspect(F32, stage="source", dialect="opencl")


@ember.kernel
def loaded_bound_in_branch(x, sizes):
    t = ember.thread_idx.x
    v = x[t]
    if t < 32:
        k = sizes[0]  # uniform, but computed per work-item inside the branch
        while k > 0:
            v += ember.shfl_down(v, k)
            k //= 2
    x[t] = v


@ember.kernel
def reused_counter(x):
    t = ember.thread_idx.x
    v = x[t]
    k = 1
    while k < 32:
        v += ember.shfl_xor(v, k)
        k *= 2
    if t < 5:
        k = t  # a varying value in the same variable: another web
        v += k
    x[t] = v


def test_a_reused_variable_is_split_into_webs():
    text = c_source(reused_counter, F32)
    assert "while (k < 32)" in text and "k_1 = t;" in text


def test_a_branch_local_bound_computed_per_work_item_is_refused():
    with pytest.raises(ember.KernelSyntaxError, match="reads 'k'.*per work-item") as info:
        loaded_bound_in_branch.inspect(F32, I32, stage="source", dialect="cpu")
    assert "hint: compute 'k' from arguments" in str(info.value)


# ---------------------------------------------------------------------- uniformity


def _typed(kernel, *args):
    types, target, _ = kernel._inspect_types(args, "cpu")
    return driver.typed_ir(kernel.captured, types, target, kernel._captures, False)


def test_uniformity_of_variables():
    program = _typed(reduce_block, F32, F32)
    varying = {v.pyname for v in Uniformity(program.kernel).varying}
    assert "t" in varying and "step" not in varying


def test_a_variable_set_under_a_varying_condition_is_varying():
    program = _typed(returns_first, F32, F32, 10)
    u = Uniformity(program.kernel)
    assert {v.pyname for v in u.varying} >= {"t"}
    ifs = [s for s in program.kernel.body if type(s).__name__ == "If"]
    assert u.is_varying(ifs[0].cond)


def _scale_into(src, dst, i, w):
    """A helper taking ``__local`` pointers (and one that does not, below)."""
    v = src[i]
    if i > 0:
        v = v * w
    dst[i] = v


def _twice(v):
    return v + v


@ember.kernel
def shared_helpers(x, y):
    sa = ember.shared(64, x.dtype)
    sb = ember.shared(64, x.dtype)
    t = ember.thread_idx.x
    sa[t] = x[t]
    ember.barrier()
    _scale_into(sa, sb, t, x[0])
    _scale_into(sa, sb, t + 32, x[1])
    ember.barrier()
    y[t] = _twice(sb[t])


def test_opencl_helpers_taking_local_pointers_are_always_inlined():
    """PoCL (3.0, 3.1) lowers a kernel's ``__local`` arrays in the kernel's body only; a
    helper clang left out of line and specialized to use the array stored to a dead copy
    (the specialized FFT pass's wrong ``rfft`` on PoCL).  Such helpers are always inlined."""
    text = shared_helpers.inspect(F32, F32, stage="source", dialect="opencl")
    head = next(line for line in text.splitlines() if " _scale_into(" in line)
    assert head.startswith("static inline __attribute__((always_inline)) void"), head
    assert "\nstatic float _twice(" in text  # other helpers: the compiler's choice
    cuda = shared_helpers.inspect(F32, F32, stage="source", dialect="cuda")
    assert "always_inline" not in cuda
