"""The class-file relocator on a hand-built class file and on pyspark's real Jackson jars."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from icetide.errors import RuntimeSetupError
from icetide.runtime.jars import (
    HTTPCLIENT_RELOCATION,
    JACKSON_RELOCATION,
    build_relocated_jar,
    ensure_jars,
    jackson_jars,
    runtime_jar,
)
from icetide.runtime.relocate import (
    Relocation,
    constant_pool_strings,
    relocate_class,
    relocate_jars,
)

SHADED = "org/apache/iceberg/shaded/com/fasterxml/jackson/"


def _utf8(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">BH", 1, len(data)) + data


def tiny_class(name: str, literal: str) -> bytes:
    """A valid class file ``name extends Object`` whose pool also holds a String and a Long."""
    pool = [
        _utf8(name),                       # 1
        struct.pack(">BH", 7, 1),          # 2 Class #1
        _utf8("java/lang/Object"),         # 3
        struct.pack(">BH", 7, 3),          # 4 Class #3
        struct.pack(">BQ", 5, 2**40 + 7),  # 5-6 Long (two slots)
        _utf8(literal),                    # 7
        struct.pack(">BH", 8, 7),          # 8 String #7
        _utf8("self"),                     # 9
        _utf8(f"L{name};"),                # 10 a field descriptor
        struct.pack(">BHH", 12, 9, 10),    # 11 NameAndType #9 #10
    ]
    head = b"\xca\xfe\xba\xbe" + struct.pack(">HHH", 0, 52, 12)
    tail = struct.pack(">HHHHHHH", 0x21, 2, 4, 0, 0, 0, 0)
    return head + b"".join(pool) + tail


def test_relocates_utf8_entries_and_keeps_the_rest() -> None:
    original = tiny_class("com/fasterxml/jackson/core/Foo", "com.fasterxml.jackson.core.Bar")
    out = relocate_class(original, [JACKSON_RELOCATION])
    strings = constant_pool_strings(out)
    assert strings == [
        SHADED + "core/Foo",
        "java/lang/Object",
        "org.apache.iceberg.shaded.com.fasterxml.jackson.core.Bar",
        "self",
        f"L{SHADED}core/Foo;",
    ]
    growth = 3 * len("org/apache/iceberg/shaded/")
    assert len(out) == len(original) + growth
    assert out[-14:] == original[-14:]  # access flags, this/super, empty tables unchanged
    assert struct.pack(">Q", 2**40 + 7) in out


def test_relocation_is_idempotent() -> None:
    once = relocate_class(tiny_class("com/fasterxml/jackson/X", "x"), [JACKSON_RELOCATION])
    assert relocate_class(once, [JACKSON_RELOCATION]) == once


def test_rejects_non_class_files() -> None:
    with pytest.raises(RuntimeSetupError, match="bad magic"):
        relocate_class(b"PK\x03\x04 not a class", [JACKSON_RELOCATION])
    with pytest.raises(RuntimeSetupError, match="truncated"):
        relocate_class(tiny_class("a/B", "c")[:30], [JACKSON_RELOCATION])


def test_real_jackson_jars_relocate_completely(tmp_path: Path) -> None:
    dest = tmp_path / "shaded.jar"
    stats = relocate_jars(jackson_jars(), [JACKSON_RELOCATION], dest)
    assert stats.classes > 1000
    with zipfile.ZipFile(dest) as jar:
        names = jar.namelist()
        classes = [n for n in names if n.endswith(".class")]
        assert len(classes) == stats.classes
        assert all(n.startswith(SHADED) for n in classes)
        assert not any("module-info" in n or n.startswith("META-INF/versions/") for n in names)
        assert SHADED + "core/JsonFactoryBuilder.class" in names
        for name in classes:  # every constant pool still parses and is fully relocated
            for text in constant_pool_strings(jar.read(name)):
                assert "com/fasterxml/jackson/" not in text.replace(SHADED, "")
        service = "META-INF/services/" + SHADED.replace("/", ".") + "core.JsonFactory"
        assert jar.read(service).decode().strip().startswith(
            "org.apache.iceberg.shaded.com.fasterxml.jackson."
        )


def test_build_is_cached_by_content_hash(tmp_path: Path) -> None:
    sources = jackson_jars()[2:3]  # jackson-annotations: small
    first = build_relocated_jar("t", sources, [JACKSON_RELOCATION], tmp_path)
    mtime = first.stat().st_mtime_ns
    again = build_relocated_jar("t", sources, [JACKSON_RELOCATION], tmp_path)
    assert again == first and again.stat().st_mtime_ns == mtime
    other = build_relocated_jar("t", sources, [Relocation("com.fasterxml", "x.y")], tmp_path)
    assert other != first
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _fake_debian_jar(path: Path, name: str) -> None:
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr(f"{name}.class", tiny_class(name, name.replace("/", ".")))
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")


def test_ensure_jars_relocates_httpclient5_when_installed(tmp_path: Path) -> None:
    java_dir = tmp_path / "java"
    java_dir.mkdir()
    cache = tmp_path / "cache"
    assert ensure_jars(cache, java_dir=java_dir)[0] == runtime_jar()
    assert len(ensure_jars(cache, java_dir=java_dir)) == 2  # no HttpClient jars: no REST jar
    _fake_debian_jar(java_dir / "httpclient5.jar", "org/apache/hc/client5/http/Client")
    _fake_debian_jar(java_dir / "httpcore5.jar", "org/apache/hc/core5/http/Core")
    jars = ensure_jars(cache, java_dir=java_dir)
    assert len(jars) == 3 and jars[2].name.startswith("iceberg-shaded-httpclient5-")
    with zipfile.ZipFile(jars[2]) as jar:
        assert sorted(jar.namelist()) == [
            "META-INF/MANIFEST.MF",
            "org/apache/iceberg/shaded/org/apache/hc/client5/http/Client.class",
            "org/apache/iceberg/shaded/org/apache/hc/core5/http/Core.class",
        ]
    assert HTTPCLIENT_RELOCATION.target == "org.apache.iceberg.shaded.org.apache.hc"
