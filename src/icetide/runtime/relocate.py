"""A small, dependency-free jar relocator (what the Maven shade plugin does for packages).

The Iceberg Spark runtime jar on PyPI references shaded classes it does not contain
(``org.apache.iceberg.shaded.com.fasterxml.jackson...``). We rebuild them from jars we do
have by rewriting package names:

* in every class file's constant pool (``CONSTANT_Utf8`` entries: class names, descriptors,
  signatures, string literals); the pool is parsed entry by entry and each rewritten entry
  gets its new length, everything after the pool is copied unchanged (indices do not move);
* in entry names (``com/fasterxml/jackson/core/JsonFactory.class`` → ``org/apache/...``);
* in ``META-INF/services`` file names and contents.

``module-info.class``, ``META-INF/versions/`` (multi-release variants), signatures and
Maven metadata are dropped; the first copy of a duplicated entry wins.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from icetide.errors import RuntimeSetupError

log = logging.getLogger(__name__)

CLASS_MAGIC = b"\xca\xfe\xba\xbe"
# Constant-pool tag → size of the entry body in bytes (CONSTANT_Utf8 = 1 is variable).
_CP_BODY_SIZE = {
    3: 4,  # Integer
    4: 4,  # Float
    5: 8,  # Long (takes two pool slots)
    6: 8,  # Double (takes two pool slots)
    7: 2,  # Class
    8: 2,  # String
    9: 4,  # Fieldref
    10: 4,  # Methodref
    11: 4,  # InterfaceMethodref
    12: 4,  # NameAndType
    15: 3,  # MethodHandle
    16: 2,  # MethodType
    17: 4,  # Dynamic
    18: 4,  # InvokeDynamic
    19: 2,  # Module
    20: 2,  # Package
}
_WIDE_TAGS = frozenset({5, 6})
_UTF8_TAG = 1
_FIXED_TIME = (2000, 1, 1, 0, 0, 0)  # reproducible output: same input → same bytes
_MANIFEST = b"Manifest-Version: 1.0\r\nCreated-By: icetide relocator\r\n\r\n"
_SIGNATURE_RE = re.compile(r"^META-INF/[^/]+\.(SF|RSA|DSA|EC)$", re.IGNORECASE)


@dataclass(frozen=True)
class Relocation:
    """Move the Java package ``source`` (dotted, e.g. ``com.fasterxml.jackson``) to ``target``."""

    source: str
    target: str

    def patterns(self) -> list[tuple[re.Pattern[bytes], bytes]]:
        """Byte regexes for the slash and dot spellings, never re-relocating relocated names."""
        out = []
        for sep in ("/", "."):
            old = (self.source.replace(".", sep) + sep).encode()
            new = (self.target.replace(".", sep) + sep).encode()
            prefix = new[: -len(old)] if new.endswith(old) else b""
            guard = b"(?<!" + re.escape(prefix) + b")" if prefix else b""
            out.append((re.compile(guard + re.escape(old)), new))
        return out


class _Rewriter:
    """Applies a list of relocations to byte strings."""

    def __init__(self, relocations: Sequence[Relocation]) -> None:
        self.patterns = [p for r in relocations for p in r.patterns()]

    def __call__(self, data: bytes) -> bytes:
        for pattern, new in self.patterns:
            data = pattern.sub(new.replace(b"\\", b"\\\\"), data)
        return data

    def name(self, entry: str) -> str:
        return self(entry.encode("utf-8")).decode("utf-8")


def relocate_class(data: bytes, relocations: Sequence[Relocation]) -> bytes:
    """Return the class file ``data`` with its ``CONSTANT_Utf8`` entries relocated."""
    return _relocate_class(data, _Rewriter(relocations))


def _relocate_class(data: bytes, rewrite: _Rewriter) -> bytes:
    if data[:4] != CLASS_MAGIC or len(data) < 10:
        raise RuntimeSetupError("not a Java class file (bad magic number): cannot relocate it")
    (count,) = struct.unpack_from(">H", data, 8)
    out = bytearray(data[:10])
    pos, index = 10, 1
    try:
        while index < count:
            tag = data[pos]
            if tag == _UTF8_TAG:
                (length,) = struct.unpack_from(">H", data, pos + 1)
                value = rewrite(data[pos + 3 : pos + 3 + length])
                if len(value) > 0xFFFF:
                    raise RuntimeSetupError("relocated constant exceeds 65535 bytes")
                out += struct.pack(">BH", _UTF8_TAG, len(value)) + value
                pos += 3 + length
            elif tag in _CP_BODY_SIZE:
                out += data[pos : pos + 1 + _CP_BODY_SIZE[tag]]
                pos += 1 + _CP_BODY_SIZE[tag]
                index += 1 if tag in _WIDE_TAGS else 0
            else:
                raise RuntimeSetupError(f"unknown constant-pool tag {tag} at byte {pos}")
            index += 1
    except (IndexError, struct.error) as exc:
        raise RuntimeSetupError(f"truncated class file (constant pool ends at {pos})") from exc
    out += data[pos:]
    return bytes(out)


def constant_pool_strings(data: bytes) -> list[str]:
    """Decode every ``CONSTANT_Utf8`` entry of a class file (used to verify relocations)."""
    strings: list[str] = []
    (count,) = struct.unpack_from(">H", data, 8)
    pos, index = 10, 1
    while index < count:
        tag = data[pos]
        if tag == _UTF8_TAG:
            (length,) = struct.unpack_from(">H", data, pos + 1)
            strings.append(data[pos + 3 : pos + 3 + length].decode("utf-8", "replace"))
            pos += 3 + length
        elif tag in _CP_BODY_SIZE:
            pos += 1 + _CP_BODY_SIZE[tag]
            index += 1 if tag in _WIDE_TAGS else 0
        else:
            raise RuntimeSetupError(f"unknown constant-pool tag {tag} at byte {pos}")
        index += 1
    return strings


def _skipped(name: str) -> bool:
    return (
        name.endswith("/")
        or name.rsplit("/", 1)[-1] == "module-info.class"
        or name.startswith(("META-INF/versions/", "META-INF/maven/"))
        or name.upper() == "META-INF/MANIFEST.MF"
        or bool(_SIGNATURE_RE.match(name))
    )


@dataclass
class RelocationStats:
    """What a relocation run wrote."""

    classes: int = 0
    resources: int = 0
    services: int = 0
    duplicates: list[str] = field(default_factory=list)


def _relocate_entry(name: str, data: bytes, rewrite: _Rewriter) -> tuple[str, bytes, str]:
    if name.endswith(".class"):
        return rewrite.name(name), _relocate_class(data, rewrite), "classes"
    if name.startswith("META-INF/services/"):
        return rewrite.name(name), rewrite(data), "services"
    return rewrite.name(name), data, "resources"


def _write_entries(
    out: zipfile.ZipFile, sources: Iterable[Path], rewrite: _Rewriter
) -> RelocationStats:
    stats = RelocationStats()
    seen = {"META-INF/MANIFEST.MF"}
    for source in sources:
        with zipfile.ZipFile(source) as jar:
            for info in jar.infolist():
                if _skipped(info.filename):
                    continue
                name, data, kind = _relocate_entry(info.filename, jar.read(info), rewrite)
                if name in seen:
                    stats.duplicates.append(name)
                    continue
                seen.add(name)
                out.writestr(zipfile.ZipInfo(name, _FIXED_TIME), data, zipfile.ZIP_DEFLATED)
                setattr(stats, kind, getattr(stats, kind) + 1)
    return stats


def relocate_jars(
    sources: Sequence[Path], relocations: Sequence[Relocation], dest: Path
) -> RelocationStats:
    """Merge ``sources`` into one relocated jar at ``dest``, atomically (temp file + rename)."""
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise RuntimeSetupError(f"cannot relocate: jar(s) not found: {', '.join(missing)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w") as out:
            out.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", _FIXED_TIME), _MANIFEST)
            stats = _write_entries(out, sources, _Rewriter(relocations))
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    log.debug(
        "relocated %d classes, %d services, %d resources into %s (%d duplicates skipped)",
        stats.classes, stats.services, stats.resources, dest, len(stats.duplicates),
    )
    return stats
