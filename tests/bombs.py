"""Decompression bombs for the readers' tests, and a peak-memory probe.

A bomb is a few megabytes of deflate data that inflate to gigabytes of
zeros. Compressing gigabytes would take seconds, so one megabyte of zeros
is compressed once, ending in a full flush (which resets the compressor's
history, making the block self-contained and byte-identical each time), and
that block is repeated. The gzip trailer's CRC is left zero: a reader checks
it only after inflating the whole member, which is the cost a bomb imposes.

`peak_rss_mb` runs a snippet in a fresh interpreter and reports how much its
peak resident memory grew while the snippet ran: the honest figure, since it
counts NumPy and zlib buffers as well as Python objects.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

MIB = 1 << 20
GIB = 1 << 30

_BLOCK = zlib.compressobj(9, zlib.DEFLATED, -15)
_ZEROS_MIB = _BLOCK.compress(bytes(MIB)) + _BLOCK.flush(zlib.Z_FULL_FLUSH)
_FINAL = _BLOCK.flush(zlib.Z_FINISH)


def deflate_zeros(prefix: bytes, mebibytes: int) -> bytes:
    """A raw deflate stream of `prefix` followed by `mebibytes` MiB of zeros."""
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH) if prefix else b""
    return start + _ZEROS_MIB * mebibytes + _FINAL


def gzip_bomb(path: Path, prefix: bytes, mebibytes: int) -> int:
    """Write a gzip file of `prefix` then `mebibytes` MiB of zeros; the inflated size."""
    size = len(prefix) + mebibytes * MIB
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    path.write_bytes(header + deflate_zeros(prefix, mebibytes) + struct.pack("<II", 0, size & 0xFFFFFFFF))
    return size


def zeros_crc(mebibytes: int) -> int:
    """The CRC-32 of `mebibytes` MiB of zeros."""
    crc, block = 0, bytes(MIB)
    for _ in range(mebibytes):
        crc = zlib.crc32(block, crc)
    return crc


def zip_archive(path: Path, members: dict[str, bytes | tuple]) -> None:
    """Write a zip by hand. A member is its content (deflated, true CRC) or a
    bomb `(deflate data, inflated size, declared size[, crc])`; a declared
    size other than the inflated one makes a lying header, and a bomb without
    a CRC fails its check only once fully inflated."""
    body, central = bytearray(), bytearray()
    for name, member in members.items():
        if isinstance(member, bytes):
            packer = zlib.compressobj(6, zlib.DEFLATED, -15)
            data, declared, crc = packer.compress(member) + packer.flush(), len(member), zlib.crc32(member)
        else:
            data, _size, declared, crc = (*member, 0)[:4]
        raw = name.encode()
        fields = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0x21, crc, len(data), declared)
        central += b"PK\x01\x02" + struct.pack("<H", 20) + fields + struct.pack(
            "<HHHHHII", len(raw), 0, 0, 0, 0, 0, len(body)) + raw
        body += b"PK\x03\x04" + fields + struct.pack("<HH", len(raw), 0) + raw + data
    count = len(members)
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, count, count, len(central), len(body), 0)
    path.write_bytes(bytes(body + central + end))


def peak_rss_mb(setup: str, code: str, timeout: float = 60.0) -> tuple[float, str]:
    """Run `setup` then `code` in a fresh Python; the growth of its peak RSS
    (MiB) during `code`, and what `code` printed. `setup` does the imports, so
    they are not counted."""
    script = "\n".join([
        "import resource, sys",
        textwrap.dedent(setup),
        "_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss",
        "def _run():",
        textwrap.indent(textwrap.dedent(code), "    "),
        "_run()",
        "_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss",
        "import json",
        f"print(json.dumps((_after - _before) / {1 << 20 if sys.platform == 'darwin' else 1 << 10}))",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                          cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        raise AssertionError(f"the probe failed:\n{done.stdout}\n{done.stderr}")
    *printed, last = done.stdout.strip().splitlines()
    return json.loads(last), "\n".join(printed)
