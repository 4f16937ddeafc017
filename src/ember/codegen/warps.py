"""Warp / sub-group operations and grid synchronization, for every dialect (a base class of
:class:`~ember.codegen.emitter.Emitter`).

Native (CUDA; OpenCL devices with sub-groups): the dialect's spellings
(:attr:`~.Dialect.shuffle`, :attr:`~.Dialect.shuffle_sync`, :attr:`~.Dialect.votes`).  A
shuffle with a ``width`` on a dialect without a width argument computes CUDA's source lane
itself (``em_src_*`` helpers) and shuffles from it.

Emulated (``ir.Program.warp_emulated``: a device without sub-groups): a warp is 32
consecutive threads of the block in CUDA's numbering; every operation goes through
``em_wscratch``, one 64-bit word per thread of the block at the end of the dynamic shared
memory.  An exchange is: write my word, block barrier, read the source lane's word, block
barrier (so every thread of the block must reach it, like a barrier).  Values travel as
their bit pattern; a lane past the end of the block reads its own value, as an inactive
lane would give nothing better.
"""

from __future__ import annotations

from ember import dtypes
from ember.codegen import atomics
from ember.codegen.helpers import SHORT
from ember.frontend import ir

WARP = 32  # lanes of an emulated warp
_REDUCE = {
    "warp_sum": "v + o",
    "warp_min": "(o < v) ? o : v",
    "warp_max": "(o > v) ? o : v",
}


class WarpEmitter:
    """Needs ``self.d`` (dialect), ``self.h`` (helpers), ``self.program``, ``expr``."""

    # ------------------------------------------------------------------ dispatch
    def warp_op(self, e: ir.Intrinsic) -> str:
        """The C expression of a warp operation (or ``grid_sync``)."""
        if e.name == "grid_sync":
            return f"{self._grid_sync()}(em_gbar)"
        emulated = self.program.warp_emulated
        if e.name.startswith("shfl"):
            return self._emulated_shuffle(e) if emulated else self._native_shuffle(e)
        if e.name.startswith("warp_"):
            return self._emulated_reduce(e) if emulated else self._warp_reduce(e)
        if e.name == "match_any_sync" and (emulated or e.name not in self.d.votes):
            return self._match_any(e, emulated)
        if emulated:
            return self._emulated_vote(e)
        m = self.expr(e.args[-1]) if e.args else ""
        p = self.expr(e.args[0]) if e.args[:-1] else ""
        self.h.features.add("subgroups")
        return self.d.votes[e.name].format(p=p, m=m)

    def warp_index(self, name: str) -> str | None:
        """``lane_id``/``warp_size`` where warps are emulated (None: the dialect's own)."""
        if not self.program.warp_emulated:
            return None
        if name == "warp_size":
            return str(WARP)
        return f"({self._tid()}() & {WARP - 1})"

    # ------------------------------------------------------------------ native
    def _native_shuffle(self, e: ir.Intrinsic) -> str:
        value, lane, width, mask = e.args
        default = _is_const(width, 0) and _is_const(mask, 0xFFFFFFFF)
        relative = e.name in ("shfl_up", "shfl_down") and default
        self.h.features.add("subgroup_shuffle_relative" if relative else "subgroup_shuffle")
        dt = e.type.dtype
        v, k = self.expr(value), self.expr(lane)
        via_int = dt.name not in self.d.shuffle_types
        if via_int:
            v = f"(int){self.expr(value, 15)}"
        if default:
            text = self.d.shuffle[e.name].format(v=v, k=k)
        elif self.d.shuffle_sync:
            w = "32" if _is_const(width, 0) else self.expr(width)
            text = self.d.shuffle_sync[e.name].format(v=v, k=k, w=w, m=self.expr(mask))
        else:  # no width argument: shuffle from the lane CUDA would read
            w = self.d.lanes if _is_const(width, 0) else self.expr(width)
            lane_id = self.d.index_expr(self.h, "lane_id", 0)
            src = f"{self._source(e.name)}({lane_id}, {k}, {w})"
            text = self.d.shuffle["shfl"].format(v=v, k=src)
        return f"({self.h.c(dt)}){text}" if via_int else text

    def _source(self, kind: str) -> str:
        """``em_src_<kind>(lane, k, width)``: the lane a CUDA shuffle reads."""
        name = f"em_src_{kind}"
        i64 = self.h.c(dtypes.int64)
        body = {
            "shfl": "    return (lane & ~(w - 1)) + (k & (w - 1));",
            "shfl_up": "    return ((lane & (w - 1)) >= k) ? lane - k : lane;",
            "shfl_down": "    return ((lane & (w - 1)) + k < w) ? lane + k : lane;",
            # CUDA: a lane may read earlier groups of `w` lanes, never later ones
            "shfl_xor": "    return (((lane ^ k) & ~(w - 1)) > (lane & ~(w - 1)))"
            " ? lane : lane ^ k;",
        }[kind]
        return self.h.use(name, lambda: self.h.fn(i64, name, f"{i64} lane, {i64} k, {i64} w", body))

    def _warp_reduce(self, e: ir.Intrinsic) -> str:
        t = e.type
        dt = t.dtype
        helper = atomics.warp_reduce(self.h, e.name, dt, self._combine(e.name, t))
        return f"{helper}({self.expr(e.args[0])})"

    def _combine(self, name: str, t) -> str:
        """``v <op> o`` for a warp reduction, wrapping or rounding like the element type."""
        dt = t.dtype
        if name != "warp_sum":
            return _REDUCE[name]
        if dt.is_narrow:
            return f"{self.h.narrow(dt, 'round')}(v + o)"
        if dt.is_integer and (dt.is_signed or dt.itemsize < 4):
            u = self.d.unsigned[max(dt.itemsize, 4)]
            return f"({self.h.c(dt)})(({u})v + ({u})o)"
        return "v + o"

    # ------------------------------------------------------------------ emulated
    def _tid(self) -> str:
        """``em_tid()``: the thread's number in its block, x fastest (CUDA's order)."""

        def make() -> str:
            i64 = self.h.c(dtypes.int64)
            t = [self.d.index_expr(self.h, "thread_idx", k) for k in range(3)]
            n = [self.d.index_expr(self.h, "block_dim", k) for k in range(3)]
            body = f"    return {t[0]} + {n[0]} * ({t[1]} + {n[1]} * {t[2]});"
            return self.h.fn(i64, "em_tid", "void", body)

        return self.h.use("em_tid", make)

    def _threads(self) -> str:
        n = [self.d.index_expr(self.h, "block_dim", k) for k in range(3)]
        return f"{n[0]} * {n[1]} * {n[2]}"

    def _scratch(self) -> str:
        return f"{self.d.shared_space}{self.d.unsigned[8]}*"

    def _exchange(self) -> str:
        """``em_wxchg(s, bits, src)``: every thread publishes ``bits``; returns thread
        ``src``'s."""

        def make() -> str:
            u64, i64 = self.d.unsigned[8], self.h.c(dtypes.int64)
            body = (
                f"    {i64} t = {self._tid()}();\n"
                "    s[t] = v;\n"
                f"    {self.d.barrier};\n"
                f"    {u64} r = s[src];\n"
                f"    {self.d.barrier};\n"
                "    return r;"
            )
            return self.h.fn(u64, "em_wxchg", f"{self._scratch()} s, {u64} v, {i64} src", body)

        return self.h.use("em_wxchg", make)

    def _bits(self, dt) -> tuple[str, str]:
        """(to 64 bits, from 64 bits) templates with ``{x}`` for a value of ``dt``."""
        u64 = self.d.unsigned[8]
        if dt.is_float:
            size = 8 if dt.name == "float64" else 4
            bits, to_bits, from_bits, _ = self.d.cas_bits[size]
            return f"({u64}){to_bits}({{x}})", f"{from_bits}(({bits}){{x}})"
        return f"({u64}){{x}}", f"({self.h.c(dt)}){{x}}"

    def _emulated_shuffle(self, e: ir.Intrinsic) -> str:
        value, lane, width, _ = e.args
        dt = e.type.dtype
        name = f"em_wsrc_{e.name}"
        i64 = self.h.c(dtypes.int64)
        rule = {
            "shfl": "(lane & ~(w - 1)) + (k & (w - 1))",
            "shfl_up": "((lane & (w - 1)) >= k) ? lane - k : lane",
            "shfl_down": "((lane & (w - 1)) + k < w) ? lane + k : lane",
            "shfl_xor": "(((lane ^ k) & ~(w - 1)) > (lane & ~(w - 1))) ? lane : lane ^ k",
        }[e.name]

        def make() -> str:
            body = (
                f"    {i64} t = {self._tid()}();\n"
                f"    {i64} lane = t & {WARP - 1};\n"
                f"    {i64} src = t - lane + ({rule});\n"
                # outside the block (or a garbage lane from an inactive thread): my own
                f"    return (src >= 0 && src < {self._threads()}) ? src : t;"
            )
            return self.h.fn(i64, name, f"{i64} k, {i64} w", body)

        src = self.h.use(name, make)
        w = str(WARP) if _is_const(width, 0) else self.expr(width)
        to_bits, from_bits = self._bits(dt)
        bits = to_bits.format(x=self.expr(value))
        moved = f"{self._exchange()}(em_wscratch, {bits}, {src}({self.expr(lane)}, {w}))"
        return from_bits.format(x=moved)

    def _ballot(self) -> str:
        def make() -> str:
            i64, u32 = self.h.c(dtypes.int64), self.d.unsigned[4]
            body = (
                f"    {i64} t = {self._tid()}();\n"
                f"    {i64} base = t - (t & {WARP - 1});\n"
                f"    {i64} n = {self._threads()};\n"
                "    s[t] = p ? 1 : 0;\n"
                f"    {self.d.barrier};\n"
                f"    {u32} m = 0;\n"
                f"    for (int k = 0; k < {WARP} && base + k < n; k++) {{\n"
                f"        if (s[base + k]) m |= 1u << k;\n"
                "    }\n"
                f"    {self.d.barrier};\n"
                "    return m;"
            )
            return self.h.fn(u32, "em_wballot", f"{self._scratch()} s, bool p", body)

        return self.h.use("em_wballot", make)

    def _active(self) -> str:
        def make() -> str:
            i64, u32 = self.h.c(dtypes.int64), self.d.unsigned[4]
            body = (
                f"    {i64} t = {self._tid()}();\n"
                f"    {i64} left = {self._threads()} - (t - (t & {WARP - 1}));\n"
                f"    return left >= {WARP} ? 0xffffffffu : ((1u << left) - 1u);"
            )
            return self.h.fn(u32, "em_wactive", "void", body)

        return self.h.use("em_wactive", make)

    def _block_any(self) -> str:
        """``em_wany(s, p)``: whether any thread of the block has ``p`` (a flag word after
        the threads' words; three barriers, so it can be called again at once)."""

        def make() -> str:
            i64 = self.h.c(dtypes.int64)
            body = (
                f"    {i64} n = {self._threads()};\n"
                f"    if ({self._tid()}() == 0) s[n] = 0;\n"
                f"    {self.d.barrier};\n"
                "    if (p) s[n] = 1;\n"
                f"    {self.d.barrier};\n"
                "    bool any = s[n] != 0;\n"
                f"    {self.d.barrier};\n"
                "    return any;"
            )
            return self.h.fn("bool", "em_wany", f"{self._scratch()} s, bool p", body)

        return self.h.use("em_wany", make)

    def _emulated_vote(self, e: ir.Intrinsic) -> str:
        if e.name == "block_any":
            return f"{self._block_any()}(em_wscratch, {self.expr(e.args[0])})"
        if e.name == "syncwarp":
            return self.d.barrier
        if e.name == "activemask":
            return f"{self._active()}()"
        # lanes that do not run the call (frontend/uniform.py hands over the predicate)
        # take no part, as CUDA's inactive lanes with a mask of activemask()
        p = self.expr(e.args[0])
        on = self.expr(e.args[2]) if len(e.args) > 2 else "true"
        if e.name == "all_sync":  # no lane running it says no
            return f"({self._ballot()}(em_wscratch, ({on}) && !({p})) == 0u)"
        votes = f"{self._ballot()}(em_wscratch, ({on}) && ({p}))"
        return votes if e.name == "ballot" else f"({votes} != 0u)"

    def _emulated_reduce(self, e: ir.Intrinsic) -> str:
        t = e.type
        dt = t.dtype
        name = f"em_w{e.name[5:]}_{SHORT[dt.name]}"
        to_bits, from_bits = self._bits(dt)
        combine = self._combine(e.name, t)

        def make() -> str:
            c, i64 = self.h.c(dt), self.h.c(dtypes.int64)
            body = (
                "    // every lane reads the warp's values in lane order: all get the same\n"
                f"    {i64} t = {self._tid()}();\n"
                f"    {i64} base = t - (t & {WARP - 1});\n"
                f"    {i64} n = {self._threads()};\n"
                f"    s[t] = {to_bits.format(x='x')};\n"
                f"    {self.d.barrier};\n"
                f"    {c} v = {from_bits.format(x='s[base]')};\n"
                f"    for (int k = 1; k < {WARP} && base + k < n; k++) {{\n"
                f"        {c} o = {from_bits.format(x='s[base + k]')};\n"
                f"        v = {combine};\n"
                "    }\n"
                f"    {self.d.barrier};\n"
                "    return v;"
            )
            return self.h.fn(c, name, f"{self._scratch()} s, {c} x", body)

        return f"{self.h.use(name, make)}(em_wscratch, {self.expr(e.args[0])})"

    def _match_any(self, e: ir.Intrinsic, emulated: bool) -> str:
        """``match_any_sync`` where the dialect has no instruction for it: each lane
        compares its value with every lane's of its warp (read by shuffles of the
        sub-group, or through ``em_wscratch`` where warps are emulated)."""
        dt = e.args[0].type.dtype  # an integer (floats arrive as their bits)
        c, u32, i64 = self.h.c(dt), self.d.unsigned[4], self.h.c(dtypes.int64)
        name = f"em_wmatch{'_emu' if emulated else ''}_{SHORT[dt.name]}"

        def make() -> str:
            if emulated:
                body = (
                    f"    {i64} t = {self._tid()}();\n"
                    f"    {i64} base = t - (t & {WARP - 1});\n"
                    f"    {i64} n = {self._threads()};\n"
                    f"    s[t] = ({self.d.unsigned[8]})x;\n"
                    f"    {self.d.barrier};\n"
                    f"    {u32} m = 0;\n"
                    f"    for (int k = 0; k < {WARP} && base + k < n; k++) {{\n"
                    f"        if (({c})s[base + k] == x) m |= 1u << k;\n"
                    "    }\n"
                    f"    {self.d.barrier};\n"
                    "    return m;"
                )
                return self.h.fn(u32, name, f"{self._scratch()} s, {c} x", body)
            self.h.features.add("subgroup_shuffle")
            lanes = self.d.votes["activemask"]
            shfl = self.d.shuffle["shfl"].format(v="x", k="k")
            body = (
                f"    {u32} m = 0;\n"
                f"    {u32} lanes = {lanes};\n"
                f"    for (int k = 0; k < 32; k++) {{\n"
                f"        {c} o = {shfl};\n"
                "        if (((lanes >> k) & 1u) && o == x) m |= 1u << k;\n"
                "    }\n"
                "    return m;"
            )
            return self.h.fn(u32, name, f"{c} x", body)

        helper = self.h.use(name, make)
        x = self.expr(e.args[0])
        if not emulated:
            return f"{helper}({x})"
        # the lanes running this call (frontend/uniform.py adds that predicate): the others
        # pass 0, which must match nobody
        on = self.expr(e.args[2]) if len(e.args) > 2 else "true"
        return f"({self._ballot()}(em_wscratch, {on}) & {helper}(em_wscratch, {x}))"

    # ------------------------------------------------------------------ grid
    def _grid_sync(self) -> str:
        def make() -> str:
            u32 = self.d.unsigned[4]
            body = self.d.grid_sync_body(self.h)
            return self.h.fn("void", "em_grid_sync", f"{self.d.global_space}{u32}* bar", body)

        return self.h.use("em_grid_sync", make)


def _is_const(e: ir.Expr, value: int) -> bool:
    return isinstance(e, ir.Const) and e.value == value
