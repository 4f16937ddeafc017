"""User text that reaches generated C (comments, strings, names) never changes what runs.

Regression for the reliability probe's silent wrong result: a kernel line ending in a Python
line continuation, or a comment ending in a backslash or a trigraph, once continued the C
``//`` comment over the next line of generated code, which then silently vanished.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.codegen.text import c_string, comment


def _run(kernel, n=37):
    x = ember.asarray(np.arange(n, dtype=np.float32))
    y = ember.zeros(n, ember.float32)
    kernel.launch(n)(x, y)
    return y.to_numpy()


def test_line_continuation_keeps_the_statement(backend):
    @ember.kernel
    def k(x, y):
        i = ember.global_id()
        if i < x.shape[0]:
            y[i] = x[i] + \
                1.0  # fmt: skip

    np.testing.assert_array_equal(_run(k), np.arange(37, dtype=np.float32) + 1)


def test_comments_ending_in_backslash_or_trigraph(backend):
    @ember.kernel
    def k(x, y):
        i = ember.global_id()  # C:\temp\
        if i < x.shape[0]:  # what??/
            y[i] = x[i] * 2.0  # ends with a backslash \
        if i < x.shape[0]:  # ??=??(??)??'??<??!??>??-
            y[i] = y[i] + 3.0

    np.testing.assert_array_equal(_run(k), np.arange(37, dtype=np.float32) * 2 + 3)


def test_continued_condition_and_call(backend):
    @ember.kernel
    def k(x, y):
        i = ember.global_id()
        if i < x.shape[0] and \
                i >= 0:  # fmt: skip
            y[i] = max(x[i], \
                       3.0)  # fmt: skip

    np.testing.assert_array_equal(_run(k), np.maximum(np.arange(37, dtype=np.float32), 3))


def test_parameters_named_like_cpp_keywords(backend):
    @ember.kernel
    def k(xor, bitand):
        compl = ember.global_id()
        if compl < xor.shape[0]:
            not_eq = xor[compl]
            bitand[compl] = not_eq + 1.0

    np.testing.assert_array_equal(_run(k), np.arange(37, dtype=np.float32) + 1)


def test_print_with_trigraph_and_backslash_compiles(backend, capfd):
    @ember.kernel
    def k(x, y):
        i = ember.global_id()
        if i == 0:
            print("odd??/ text \\ end\\")
        if i < x.shape[0]:
            y[i] = x[i]

    np.testing.assert_array_equal(_run(k), np.arange(37, dtype=np.float32))
    ember.synchronize()
    assert "odd??/ text \\ end\\" in capfd.readouterr().out


# ---------------------------------------------------------------------- the escaping itself


@pytest.mark.parametrize(
    "text",
    ["x = 1 \\", "C:\\temp\\", "what??/", "tab\there", "a\u2028b", "bell\x07", "\udc80x", "ok"],
)
def test_comment_is_one_safe_line(text):
    out = comment(text)
    assert "\n" not in out and "\r" not in out
    assert not out.rstrip().endswith("\\")
    assert "??" not in out
    assert out.isprintable()
    out.encode("utf-8")


def test_c_string_escapes_everything_that_could_end_or_bend_it():
    assert c_string('a"b') == '"a\\"b"'
    assert c_string("??/") == '"\\?\\?/"'
    assert c_string("back\\") == '"back\\\\"'
    assert c_string("é") == '"\\303\\251"'
    assert "\n" not in c_string("two\nlines\r")


# ---------------------------------------------------------------------- CUDA C++ (NVRTC, no GPU)


def _nvrtc_ok() -> bool:
    try:
        from ember.backends.cuda import nvrtc

        nvrtc.nvrtc_version()
    except Exception:
        return False
    return True


@pytest.mark.skipif(not _nvrtc_ok(), reason="NVRTC is not available")
def test_cuda_compiles_continuations_and_cpp_keyword_names():
    @ember.kernel
    def k(xor, bitand, typeid):
        compl = ember.global_id()  # C:\temp\
        if compl < xor.shape[0]:  # ??/
            not_eq = xor[compl] + \
                typeid  # fmt: skip
            bitand[compl] = not_eq
        if compl == 0:
            print("??/ \\")

    x = np.zeros(4, np.float32)
    ptx = k.inspect(x, x, np.float32(1), stage="ptx", dialect="cuda")
    assert ".entry" in ptx
    src = k.inspect(x, x, np.float32(1), stage="source", dialect="cuda")
    assert "not_eq_ = xor_.data[compl_] + typeid_;" in src  # the continued statement, whole
    assert not any(line.rstrip().endswith("\\") for line in src.splitlines())
