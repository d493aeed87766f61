#!/usr/bin/env python3
"""Points a shared library's own library search path at its folder, in place.

  python3 tools/elf_rpath.py LIB.so...

For scripts/device_bundle.sh: a bundled library such as Debian's libmpi.so.40
carries DT_RUNPATH /usr/lib/x86_64-linux-gnu/openmpi/lib, and a library with a
DT_RUNPATH is searched for its own dependencies there and never in the
executable's DT_RPATH ($ORIGIN/lib), so on a machine without Open MPI its
libopen-rte.so.40 is "not found" although it lies beside it. This rewrites the
entry's string to "$ORIGIN" (the library's own folder) and its tag to DT_RPATH,
which glibc's loader also consults after it (the executable's RPATH chain).
What patchelf --force-rpath --set-rpath '$ORIGIN' does, for the case where the
new string is not longer than the old one (it is written over the old string
in .dynstr, NUL-terminated; the file's size and layout do not change). A
library without such an entry is left alone.

The ELF64 little-endian layout used (the System V ABI's gABI, "Dynamic
Section"): the program headers (e_phoff at 0x20, e_phentsize 0x36, e_phnum
0x38) give PT_DYNAMIC (type 2), whose entries are (d_tag int64, d_val uint64);
DT_STRTAB (5) is the string table's address, mapped to a file offset through
the PT_LOAD (type 1) segment holding it; DT_RPATH is 15, DT_RUNPATH 29.
Prints one line per file; exits 1 naming a file it cannot handle.
"""
import struct
import sys

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 5, 15, 29
NEW = b"$ORIGIN"


def segments(data):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        yield p_type, p_offset, p_vaddr, p_filesz


def file_offset(data, vaddr):
    for p_type, p_offset, p_vaddr, p_filesz in segments(data):
        if p_type == PT_LOAD and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    raise ValueError("address 0x%x is in no PT_LOAD segment" % vaddr)


def set_origin_rpath(path):
    data = bytearray(open(path, "rb").read())
    dynamic = [s for s in segments(data) if s[0] == PT_DYNAMIC]
    if not dynamic:
        return "no dynamic section"
    _, offset, _, size = dynamic[0]
    entries, strtab = [], None
    for at in range(offset, offset + size, 16):
        tag, val = struct.unpack_from("<qQ", data, at)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = file_offset(data, val)
        if tag in (DT_RPATH, DT_RUNPATH):
            entries.append((at, tag, val))
    if not entries:
        return "no RPATH/RUNPATH: left alone"
    if strtab is None:
        raise ValueError("no DT_STRTAB")
    done = []
    for at, tag, val in entries:
        start = strtab + val
        end = data.index(b"\0", start)
        old = bytes(data[start:end])
        if len(old) < len(NEW):
            raise ValueError("its path %r is shorter than %r" % (old.decode(), NEW.decode()))
        data[start:end] = NEW + b"\0" * (len(old) - len(NEW))
        struct.pack_into("<q", data, at, DT_RPATH)
        done.append("%s %s -> RPATH %s" % ("RUNPATH" if tag == DT_RUNPATH else "RPATH",
                                           old.decode(), NEW.decode()))
    open(path, "wb").write(data)
    return "; ".join(done)


def main():
    status = 0
    for path in sys.argv[1:]:
        try:
            print("%s: %s" % (path, set_origin_rpath(path)))
        except (ValueError, OSError, struct.error) as e:
            print("elf_rpath: %s: %s" % (path, e), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
