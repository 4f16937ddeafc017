"""The statements of a kernel lowered for a CPU work-group (:mod:`ember.codegen.workgroup`
makes them, :mod:`ember.codegen.regions` and the cpu dialect read them): loops over the
work-items of a region and the per-work-item storage around them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ember.frontend import ir


@dataclass(eq=False)
class ItemLoop(ir.Stmt):
    """Run ``body`` for every work-item of the group, in order (a region).

    ``stop``: a uniform bound on ``thread_idx.x`` that replaced the region's guard
    (``if i < n``: work-items past it have nothing to do); ``item``: keep the work-item
    struct that device functions read up to date; ``done``: skip work-items that returned;
    ``failed``: the error flag of a kernel that can fail is ``"reset"`` for each work-item
    or kept per work-item (``"kept"``, when a failed work-item runs on past barriers)."""

    body: list[ir.Stmt]
    label: int
    stop: ir.Expr | None = None
    item: bool = False
    done: bool = False
    failed: str = ""
    # per-thread arrays (``ember.local``) of the kernel: declared in the loop's body when
    # this is the kernel's only region (``declares``), else pointers into one block of
    # storage per array (:class:`ItemStorage`), one slice per work-item
    arrays: list[ir.Variable] = field(default_factory=list)
    declares: bool = False


@dataclass(eq=False)
class ItemExit(ir.Stmt):
    """``return`` of one work-item inside an :class:`ItemLoop` (``done``: remember it)."""

    done: bool = False


@dataclass(eq=False)
class ItemArray(ir.Stmt):
    """Declare ``var.name`` as an array of one ``var.type`` value per work-item (``zero``:
    set to 0s), or, for a ``scratch`` array (``var.type`` an Array), one element of its
    dtype per work-item."""

    var: ir.Variable
    zero: bool = False
    scratch: bool = False


@dataclass(eq=False)
class ItemStorage(ir.Stmt):
    """The storage of per-thread array ``var`` for the whole group: one slice of its size
    per work-item (each :class:`ItemLoop` points ``var.name`` at its work-item's slice)."""

    var: ir.Variable


@dataclass(eq=False)
class LeadUpdate(ir.Stmt):
    """After a region where work-items may return: the first one still running becomes the
    one uniform code reads values from; the group ends when none is left."""
