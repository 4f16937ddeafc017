"""Structural checks of binaries before a driver loads them (ember.backends.binaries).

Drivers crash on damaged images (issue 18: a truncated cubin or PoCL binary whose
checksum was recomputed took the process down).  Here: every truncation of a real cubin
(NVRTC, no GPU needed) and of a real host shared object is refused; offsets and tables
pointing outside the image are refused; intact images pass.  PoCL archives are checked
in tests/backend/test_crash_guards.py, where PoCL makes them.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ember.backends import binaries
from ember.errors import BinaryError

SOURCE = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }'


@pytest.fixture(scope="module")
def cubin() -> bytes:
    try:
        from ember.backends.cuda.nvrtc import compile_cubin

        return compile_cubin(SOURCE, "sm_90", "k")
    except Exception as exc:  # no NVRTC here
        pytest.skip(f"NVRTC unavailable: {exc}")


@pytest.fixture(scope="module")
def shared_object() -> bytes:
    """A real shared object of this machine (NumPy's core extension), as the native CPU
    backend's kernels are."""
    path = np._core._multiarray_umath.__file__
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(binaries.ELF_MAGIC):
        pytest.skip("not an ELF platform")
    return data


def test_an_intact_cubin_and_shared_object_pass(cubin, shared_object):
    binaries.check_cuda_image(cubin)
    binaries.check_elf(cubin, machines=(binaries.EM_CUDA,))
    binaries.check_elf(shared_object)


def test_every_truncation_of_a_cubin_is_refused(cubin):
    for n in range(0, len(cubin), max(1, len(cubin) // 400)):
        with pytest.raises(BinaryError, match="damaged"):
            binaries.check_cuda_image(cubin[:n])


def test_truncations_of_a_shared_object_are_refused(shared_object):
    size = len(shared_object)
    for n in (0, 10, 63, 64, 1000, size // 3, size // 2, size - 4096):  # (the end may be padding)
        with pytest.raises(BinaryError):
            binaries.check_elf(shared_object[:n])


def _section_header(data: bytes, index: int) -> int:
    (shoff,) = struct.unpack_from("<Q", data, 40)
    (shentsize,) = struct.unpack_from("<H", data, 58)
    return shoff + index * shentsize


@pytest.mark.parametrize(
    "field, offset, value, message",
    [
        ("e_shoff", 40, 2**40, "section table"),
        ("e_phoff", 32, 2**40, "program table"),
        ("e_shnum", 60, 60000, "section table"),
        ("e_shstrndx", 62, 999, "section-name table index"),
        ("e_shentsize", 58, 8, "section table"),
    ],
)
def test_header_fields_pointing_outside_the_image_are_refused(cubin, field, offset, value, message):
    bad = bytearray(cubin)
    fmt = "<Q" if offset in (32, 40) else "<H"
    struct.pack_into(fmt, bad, offset, value)
    with pytest.raises(BinaryError, match=message):
        binaries.check_cuda_image(bytes(bad))


def test_a_section_past_the_end_is_refused(cubin):
    bad = bytearray(cubin)
    at = _section_header(cubin, 1)
    struct.pack_into("<Q", bad, at + 32, len(cubin))  # sh_size of section 1
    with pytest.raises(BinaryError, match="section 1"):
        binaries.check_cuda_image(bytes(bad))


def test_an_elf_for_another_machine_is_refused(cubin, shared_object):
    with pytest.raises(BinaryError, match="machine"):
        binaries.check_cuda_image(shared_object)
    with pytest.raises(BinaryError, match="machine"):
        binaries.check_elf(cubin, machines=(binaries.EM_X86_64, binaries.EM_AARCH64))


def test_ptx_and_fatbinaries():
    ptx = b"//\n.version 8.0\n.target sm_90\n.address_size 64\n"
    binaries.check_cuda_image(ptx)
    binaries.check_cuda_image(ptx + b"\0")
    with pytest.raises(BinaryError, match="PTX"):
        binaries.check_cuda_image(b"\x00\x01\x02 not ptx")
    with pytest.raises(BinaryError, match="complete PTX"):
        binaries.check_cuda_image(b"//\n.version 8.0\n")  # cut before .target
    fat = struct.pack("<IHHQ", binaries.FATBIN_MAGIC, 1, 16, 100) + bytes(100)
    binaries.check_cuda_image(fat)
    with pytest.raises(BinaryError, match="fatbinary"):
        binaries.check_cuda_image(fat[:-1])


def test_a_pocl_binary_that_is_not_one_is_refused():
    with pytest.raises(BinaryError, match="PoCL"):
        binaries.check_pocl(b"poclbin\x00" + bytes(10))
    with pytest.raises(BinaryError, match="bitcode"):
        binaries.check_pocl(b"poclbin\x00" + bytes(200))
