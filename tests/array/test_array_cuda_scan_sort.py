"""The scan, compaction, search, gather, sort and set kernels compile for CUDA (NVRTC,
sm_90) without a GPU, in the shapes a GPU runs them (warp-shuffle block scans, warp-match
radix ranking with ballots, the single-pass look-back kernels), and their static shared
memory fits a block (48 KiB) with the launch geometry chosen for an H100-like device."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from gpu_standin import H100, SHARED_LIMIT, nvrtc_available, to_ptx

import ember
from ember import dtypes
from ember.array import compact_kernels, gather, ops, search, sets, sort, sort_kernels, sort_match
from ember.array import scan_kernels as sk

nvrtc = pytest.importorskip("ember.backends.cuda.nvrtc")


def _row_args(dt_in, dt_out):
    x, o = np.zeros(8, dt_in), np.zeros(8, dt_out)
    return (x, 0, 8, 1, o, 0, 8)


# slow: hundreds of NVRTC compiles (pytest -m slow; the GPU machine's batch runs them)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not available"),
]


def _barriers(ptx: str) -> int:
    return len(re.findall(r"\bbar\.sync\b", ptx))


def _shared_bytes(ptx: str) -> int:
    return sum(int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", ptx))


@pytest.mark.parametrize(
    "op, ct",
    [(ops.add, ember.float32), (ops.add, ember.float64), (ops.add, ember.float16),
     (ops.logical_or, ember.bool_), (ops.multiply, ember.int64), (ops.maximum, ember.uint8)],
)  # fmt: skip
def test_scan_kernels_compile_for_cuda(op, ct):
    # (the GPU's geometry: one warp does the look-back, tiles by block index, warps move
    # their own elements; the tiles from a counter; without warp shuffles)
    gpu = sk.Geometry(256, 16, 32, warp_lookback=True, ordered=True, segments=True)
    for g in (gpu, sk.Geometry(256, 16, 32, warp_lookback=True), sk.Geometry(256, 8, 0)):
        x = np.zeros(8, ct.numpy)
        st = sk.storage(ct).numpy
        head = (1, 8, 1, *_row_args(ct.numpy, ct.numpy))
        ptx = to_ptx(sk.scan_lookback(op, ct, g), (*head, np.zeros(4, np.uint64), 1))
        # a ticket (an atomic add on the state's first word) only where blocks may start
        # out of order
        assert ("atom.global.add.u64" in ptx) is not g.ordered, g
        # warp-owned loads and stores: the two barriers around them are warp syncs (the
        # block scan's and the look-back's stay)
        assert ptx.count("bar.warp.sync") == (2 if g.segments else 0), g
        if g.segments:
            striped = sk.scan_lookback(op, ct, dataclasses.replace(g, segments=False))
            plain = to_ptx(striped, (*head, np.zeros(4, np.uint64), 1))
            assert _barriers(ptx) == _barriers(plain) - 2 == 2
        # every value travels beside its flag (8 bytes: a half in each of two words): no
        # fence orders them
        assert ".entry" in ptx and "membar.gl" not in ptx
        assert _shared_bytes(ptx) <= SHARED_LIMIT
        assert ".entry" in to_ptx(sk.scan_carry(op, ct, g), (*head, np.zeros(4, st)))
        args = (1, 8, 1, x, 0, 8, 1, np.zeros(4, st))
        assert ".entry" in to_ptx(sk.tile_reduce(op, ct, g), args)
    assert ".entry" in to_ptx(sk.rows_serial(op, ct), (1, 1, *_row_args(ct.numpy, ct.numpy)))


@pytest.mark.parametrize("what", [sk.value_at, sk.index_of])
def test_ballot_compaction_kernels_compile_for_cuda(what):
    flags, values = np.zeros(8, np.bool_), np.zeros(8, np.float64)
    out = np.zeros(8, np.int64 if what is sk.index_of else np.float64)
    k = compact_kernels.flag_counts(256, sort_match.HARDWARE)
    ptx = to_ptx(k, (8, 1, 1, flags, 0, 1, np.zeros(8, np.int32)))
    assert ".entry" in ptx and "vote.sync.ballot" in ptx and "popc" in ptx
    k = compact_kernels.select_ballot(256, what, sort_match.HARDWARE)
    ptx = to_ptx(k, (8, 1, 1, flags, 0, 1, values, 0, 1, np.zeros(8, np.int64), out))
    assert ".entry" in ptx and "vote.sync.ballot" in ptx
    assert ".local" not in ptx  # the items' flags, masks and values stay in registers


@pytest.mark.parametrize("what", [sk.value_at, sk.index_of])
def test_compaction_kernels_compile_for_cuda(what):
    g = sk.Geometry(256, 16, 32)
    flags, v = np.zeros(8, bool), np.zeros(8, np.float32)
    out = np.zeros(8, np.float32 if what is sk.value_at else np.int64)
    args = (8, 1, flags, 0, 1, v, 0, 1, np.zeros(1, np.int64), out)
    assert ".entry" in to_ptx(sk.select(g, what), args)
    counts = sk.tile_reduce(ops.add, dtypes.int32, g, sk.flag)
    assert ".entry" in to_ptx(counts, (1, 8, 1, flags, 0, 8, 1, np.zeros(1, np.int32)))


@pytest.mark.parametrize("ndim, wide", [(1, False), (3, False), (2, True)])
def test_gather_kernels_compile_for_cuda(ndim, wide):
    lo, x = np.zeros(8, np.int64), np.zeros(8, np.float32)
    st = (0, *(1,) * ndim)
    dims = tuple(v for _ in range(ndim) for v in (2, 1, 1))
    args = (8, dims, lo, st, np.zeros(8, np.int16), st, 5, 3, True)
    assert ".entry" in to_ptx(gather.offsets_kernel(ndim, wide), args)
    for backwards in (False, True):
        k = gather.gather_kernel(ndim, wide, backwards)
        assert ".entry" in to_ptx(k, (8, dims, x, st, x, st, lo, st))


@pytest.mark.parametrize("ct, sorter", [(ember.float32, False), (ember.int64, True)])
def test_search_and_set_kernels_compile_for_cuda(ct, sorter):
    a = np.zeros(8, ct.numpy)
    s = np.zeros(8, np.int32)
    args = (8, 8, a, 0, 1, s, 0, 1, a, np.zeros(8, np.int64), True)
    assert ".entry" in to_ptx(search.search_kernel(ct, sorter), args)
    flags = np.zeros(8, np.uint8)
    assert ".entry" in to_ptx(sets.starts_kernel(ct.is_float), (8, a, flags))
    starts = np.zeros(8, np.int64)
    assert ".entry" in to_ptx(sets.counts_kernel(), (8, 8, starts, starts))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "uint8", "float64"])
def test_radix_kernels_compile_and_fit_for_cuda(dtype):
    dt = ember.dtype(dtype)
    U = sort_kernels.unsigned(dt.itemsize)
    kind = "f" if dt.is_float else "i" if dt.kind == "i" else "u"
    fns = sort_kernels.key_functions(kind, U, True)
    keys = np.zeros(8, U.numpy)
    for payload, pt, po in [("none", dtypes.int32, dtypes.int32),
                            ("iota", dtypes.int32, dtypes.int64),
                            ("load", dtypes.int32, dtypes.int32)]:  # fmt: skip
        # the tile an H100 gets (hardware warps), and the emulated warps' (their buffers
        # are larger: the tests run them on every device, CUDA too)
        g = sort.geometry(H100, U, pt if payload != "none" else None, sort_match.HARDWARE)
        ge = sort.geometry(H100, U, pt if payload != "none" else None, sort_match.EMULATED)
        head = (8, 1, keys, 0, 1, np.zeros(8, pt.numpy), 0, 1, 0, True, True, False)
        tail = (np.zeros(8, np.int64), np.zeros(8, np.uint32), 3, keys, np.zeros(8, po.numpy))
        k = sort_match.match_pass(U, fns, ge, payload, pt, po, "onesweep", sort_match.EMULATED)
        assert _shared_bytes(to_ptx(k, (*head, *tail))) <= SHARED_LIMIT, (payload, ge)
        for mode in ("onesweep", "onesweep-ordered", "classic"):
            k = sort_match.match_pass(U, fns, g, payload, pt, po, mode, sort_match.HARDWARE)
            ptx = to_ptx(k, (*head, *tail))
            assert ".entry" in ptx and "atom.shared.or" in ptx and "bar.warp.sync" in ptx
            assert _shared_bytes(ptx) <= SHARED_LIMIT, (mode, payload, g)
        copy = sort_match.copy_pass(U, fns, g, payload, pt, po)
        assert ".entry" in to_ptx(copy, (*head, np.zeros(8, np.uint32), 2, *tail[3:]))
        up = sort_kernels.upsweep(U, fns, g)
        assert ".entry" in to_ptx(up, (8, 1, keys, 0, 1, 0, True, False, np.zeros(8, np.uint32)))
    hist = sort_match.histogram(U, fns, sort.histogram_geometry(H100, g), dt.itemsize)
    assert ".entry" in to_ptx(hist, (8, 1, keys, 0, 1, False, np.zeros(8, np.uint32)))
    for p in sort.NETWORKS:
        bitonic = sort_kernels.bitonic_rows(U, fns, p, 256)
        args = (1, 8, keys, 0, 8, 1, False, True, keys, 0, 8, True, np.zeros(8, np.int64), 0, 8)
        ptx = to_ptx(bitonic, args)
        assert ".entry" in ptx and _shared_bytes(ptx) <= SHARED_LIMIT
