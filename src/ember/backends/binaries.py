"""Structural checks of compiled binaries, made before a driver is handed one.

Drivers trust the images they load: a cubin whose section table points past its end, a
PoCL program binary cut short, a shared object with a truncated segment crash the process
inside ``cuModuleLoadData``, ``clBuildProgram`` or ``dlopen`` (SIGSEGV, or an ``assert`` in
PoCL: issue 18).  A binary from the cache or a bundle passed its checksum, but a checksum
recomputed over damaged bytes proves nothing about them.  So each backend's
``load_module`` first checks what the format lets one check without running anything:
that every size and offset in the image stays inside it and the pieces add up.

This is a guard against damage, not against malice: a well-formed binary can still do
anything (docs/precompiling.md, "What a cache or bundle is trusted with").

* :func:`check_elf`: ELF images (CUDA cubins; the native CPU backend's shared objects;
  AMD and Intel OpenCL binaries): header, program and section tables, every section and
  segment inside the file, string and symbol tables consistent, the machine expected.
* :func:`check_cuda_image`: a cubin (ELF for ``EM_CUDA``), a fatbinary or PTX text.
* :func:`check_pocl`: PoCL's ``poclbin`` archive: the program's bitcode file record and
  every kernel record (and the files inside it, shared objects checked as ELF) exactly
  fill the binary.
"""

from __future__ import annotations

import struct
from collections.abc import Collection

from ember.errors import BinaryError

ELF_MAGIC = b"\x7fELF"
EM_X86_64 = 62
EM_AARCH64 = 183
EM_CUDA = 190
FATBIN_MAGIC = 0xBA55ED50
POCL_MAGIC = b"poclbin\x00"
_SHT_NOBITS = 8
_SHT_SYMTAB, _SHT_STRTAB, _SHT_DYNSYM = 2, 3, 11
_MAX_COUNT = 1 << 16  # tables beyond this are not what a compiler makes
_MAX_ARGS = 4096  # kernel arguments (PoCL reserves stack space for each)


def _fail(what: str, problem: str) -> BinaryError:
    return BinaryError(f"{what} is damaged: {problem}; it was not loaded")


# ----------------------------------------------------------------------------- ELF


class _Elf:
    """The fields of an ELF header that locate everything else (32- or 64-bit, LSB/MSB)."""

    def __init__(self, data: bytes, what: str):
        if len(data) < 52 or not data.startswith(ELF_MAGIC):
            raise _fail(what, f"it is not an ELF image ({len(data)} bytes)")
        cls, order = data[4], data[5]
        if cls not in (1, 2) or order not in (1, 2):
            raise _fail(what, f"its ELF class/byte order ({cls}, {order}) is invalid")
        self.wide = cls == 2
        self.end = "<" if order == 1 else ">"
        head = "HHIQQQIHHHHHH" if self.wide else "HHIIIIIHHHHHH"
        size = struct.calcsize(self.end + head)
        if len(data) < 16 + size:
            raise _fail(what, "its ELF header is truncated")
        (self.type, self.machine, _, _, self.phoff, self.shoff, _, self.ehsize,
         self.phentsize, self.phnum, self.shentsize, self.shnum,
         self.shstrndx) = struct.unpack_from(self.end + head, data, 16)  # fmt: skip
        self.sh_format = self.end + ("IIQQQQIIQQ" if self.wide else "IIIIIIIIII")
        self.ph_format = self.end + ("IIQQQQQQ" if self.wide else "IIIIIIII")


def check_elf(data: bytes, what: str = "the binary", machines: Collection[int] = ()) -> None:
    """Raise :class:`BinaryError` unless ``data`` is a well-formed ELF image (for one of
    ``machines``, e.g. :data:`EM_CUDA`, when given)."""
    elf = _Elf(data, what)
    if machines and elf.machine not in machines:
        raise _fail(what, f"it is an ELF image for machine {elf.machine}, not {sorted(machines)}")
    _check_segments(data, elf, what)
    sections = _sections(data, elf, what)
    _check_sections(data, sections, elf, what)


def _table(data: bytes, offset: int, count: int, entsize: int, fmt: str, what: str, name: str):
    if count == 0:
        return []
    if count > _MAX_COUNT or entsize < struct.calcsize(fmt):
        raise _fail(what, f"its {name} table has {count} entries of {entsize} bytes")
    if offset <= 0 or offset + count * entsize > len(data):
        raise _fail(what, f"its {name} table (offset {offset}) runs past its end")
    return [struct.unpack_from(fmt, data, offset + i * entsize) for i in range(count)]


def _check_segments(data: bytes, elf: _Elf, what: str) -> None:
    for p in _table(data, elf.phoff, elf.phnum, elf.phentsize, elf.ph_format, what, "program"):
        offset, filesz = (p[2], p[5]) if elf.wide else (p[1], p[4])
        if offset + filesz > len(data):
            raise _fail(what, f"a segment [{offset}, {offset + filesz}) runs past its end")


def _sections(data: bytes, elf: _Elf, what: str) -> list[tuple]:
    count, strndx = elf.shnum, elf.shstrndx
    if count == 0 and elf.shoff:  # extended numbering: the count is in section 0
        first = _table(data, elf.shoff, 1, elf.shentsize, elf.sh_format, what, "section")
        count = first[0][5]
    sections = _table(data, elf.shoff, count, elf.shentsize, elf.sh_format, what, "section")
    if strndx == 0xFFFF and sections:
        strndx = sections[0][6]
    if sections and strndx >= len(sections):
        raise _fail(what, f"its section-name table index {strndx} is out of range")
    elf.strndx = strndx
    return sections


def _check_sections(data: bytes, sections: list[tuple], elf: _Elf, what: str) -> None:
    n = len(sections)
    for i, (name, kind, _, _, offset, size, link, _, _, entsize) in enumerate(sections):
        if kind != _SHT_NOBITS and offset + size > len(data):
            raise _fail(what, f"section {i} [{offset}, {offset + size}) runs past its end")
        if kind in (_SHT_SYMTAB, _SHT_DYNSYM):
            if not entsize or size % entsize or link >= n or sections[link][1] != _SHT_STRTAB:
                raise _fail(what, f"symbol table {i} is inconsistent")
        if i and n and name >= sections[elf.strndx][5]:
            raise _fail(what, f"section {i} names a string outside the section-name table")


# ----------------------------------------------------------------------------- CUDA


def check_cuda_image(data: bytes) -> None:
    """A cubin (ELF for the CUDA machine), a fatbinary, or PTX text (NUL-terminated or not:
    the caller adds the NUL the driver needs)."""
    what = f"the {len(data)}-byte CUDA module image"
    if data.startswith(ELF_MAGIC):
        check_elf(data, what, (EM_CUDA,))
    elif len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC:
        if len(data) < 16:
            raise _fail(what, "its fatbinary header is truncated")
        _, header, size = struct.unpack_from("<HHQ", data, 4)
        if header < 16 or header + size > len(data):
            raise _fail(what, f"its fatbinary ({header} + {size} bytes) runs past its end")
    else:
        text = data.split(b"\x00", 1)[0]
        try:
            text.decode("ascii")
        except UnicodeDecodeError:
            raise _fail(what, "it is neither a cubin, a fatbinary nor PTX text") from None
        if b".version" not in text or b".target" not in text:
            raise _fail(what, "it is neither a cubin, a fatbinary nor complete PTX text")


# ----------------------------------------------------------------------------- PoCL


def check_pocl(data: bytes) -> None:
    """PoCL's program binary: a header, the program's files (its bitcode first) as file
    records, then one record per kernel (its size first) holding its metadata and the files
    of its compiled code.  Walked without trusting any size; the records must fill the
    binary exactly.

    Header layouts: up to version 7 (PoCL's ``pocl_binary.c``), 73 bytes, then the bitcode's
    record; version 9 (PoCL 3.x, read off its binaries), 77 bytes with a count of *root*
    file records at byte 32, then their total size (u64), then those records.  Other
    versions: the record named ``/program.bc`` is looked for after the header."""
    what = f"the {len(data)}-byte PoCL program binary"
    if len(data) < 32 or not data.startswith(POCL_MAGIC):
        raise _fail(what, "it does not start with PoCL's header")
    version, kernels = struct.unpack_from("<II", data, 16)
    if kernels > _MAX_COUNT:
        raise _fail(what, f"it claims {kernels} kernels")
    if version == 9:
        offset = _pocl_roots(data, what)
    else:
        at = data.find(b"/program.bc", 24, 256)
        if at < 4 or struct.unpack_from("<I", data, at - 4)[0] != len(b"/program.bc"):
            raise _fail(what, "its program bitcode record is missing")
        offset = _pocl_file(data, at - 4, len(data), what)
    for _ in range(kernels):
        offset = _pocl_kernel(data, offset, what)
    if offset != len(data):
        raise _fail(what, f"its records end at byte {offset}, not at its end")


def _pocl_roots(data: bytes, what: str) -> int:
    """Version 9's root file records: their count (byte 32) and total size (byte 77)."""
    if len(data) < 85:
        raise _fail(what, "its header is truncated")
    (count,) = struct.unpack_from("<I", data, 32)
    (size,) = struct.unpack_from("<Q", data, 77)
    end = 85 + size
    if not 1 <= count <= _MAX_COUNT or end > len(data):
        raise _fail(what, f"its {count} root records of {size} bytes do not fit in it")
    offset = 85
    for _ in range(count):
        offset = _pocl_file(data, offset, end, what)
    if offset != end:
        raise _fail(what, f"its root records end at byte {offset}, not {end}")
    return end


def _u32(data: bytes, offset: int, end: int, what: str) -> int:
    if offset + 4 > end:
        raise _fail(what, f"a record at byte {offset} is truncated")
    return struct.unpack_from("<I", data, offset)[0]


def _pocl_file(data: bytes, offset: int, end: int, what: str) -> int:
    """Check one file record (path, content: each a u32 length and bytes); its end."""
    for part in ("path", "content"):
        size = _u32(data, offset, end, what)
        if size == 0 or offset + 4 + size > end:
            raise _fail(what, f"a file record's {part} at byte {offset} runs past its end")
        if part == "content" and data.startswith(ELF_MAGIC, offset + 4):
            check_elf(data[offset + 4 : offset + 4 + size], f"a shared object inside {what}")
        offset += 4 + size
    return offset


def _pocl_kernel(data: bytes, offset: int, what: str) -> int:
    """Check one kernel record: its sizes, its name, the file records of its code."""
    if offset + 24 > len(data):
        raise _fail(what, f"the kernel record at byte {offset} is truncated")
    total, files, _ = struct.unpack_from("<QQI", data, offset)
    end = offset + total
    if total < 24 or end > len(data) or files > total - 24:
        raise _fail(what, f"the kernel record at byte {offset} ({total} bytes) runs past its end")
    name = _u32(data, offset + 20, end, what)
    if name == 0 or offset + 32 + name > end - files:
        raise _fail(what, f"the kernel name at byte {offset + 20} is damaged")
    args, locals_ = struct.unpack_from("<II", data, offset + 24 + name)
    if args > _MAX_ARGS or locals_ > _MAX_ARGS:
        raise _fail(what, f"a kernel record claims {args} arguments and {locals_} locals")
    at = end - files
    while at < end:
        at = _pocl_file(data, at, end, what)
    return end
