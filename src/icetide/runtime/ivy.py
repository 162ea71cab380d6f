"""Resolve the pinned JVM dependencies with Apache Ivy, the resolver Spark itself uses for
``spark.jars.packages`` (its jar ships in pyspark's ``jars/``: no Maven needed).

One Ivy module with one configuration per group of ``jars.toml``; every artifact pyspark
already ships is excluded from the groups for Spark's class path, as Spark's ``--packages``
excludes Spark's own (a group for a JVM of its own, ``jvm = "own"``, is resolved whole).
Ivy downloads into ``<cache>/ivy``; its resolution report names each configuration's
files, which become the manifest the sessions read. Measured on a 2-core machine (docs/deploy.md):
~17 s into an empty cache, under 1 s when everything is cached.
"""

from __future__ import annotations

import logging
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from xml.etree import ElementTree
from xml.sax.saxutils import quoteattr

from icetide.errors import RuntimeSetupError
from icetide.runtime.jars import JarSpec, Resolved, ResolvedJar, pyspark_jars_dir
from icetide.runtime.java import check_java

log = logging.getLogger(__name__)

IVY_ORG, IVY_MODULE = "icetide", "jars"
#: how long one resolution may take before it is given up
RESOLVE_TIMEOUT_S = 900.0
PROBE_TIMEOUT_S = 10.0
_JAR_NAME = re.compile(r"^(.+)-(\d+\.[^-]*(?:-[^-]+)*)\.jar$")


def spark_artifacts(jars_dir: Path) -> list[str]:
    """The artifact names of the jars in pyspark's ``jars/`` (``zstd-jni-1.5.5-4.jar`` →
    ``zstd-jni``): what the resolution leaves to Spark's own copy."""
    names = {m.group(1) for p in jars_dir.glob("*.jar") if (m := _JAR_NAME.match(p.name))}
    return sorted(names)


def ivy_module(spec: JarSpec, excluded: list[str]) -> str:
    """The ``ivy.xml`` of the pinned list: a configuration per group."""
    confs = "".join(f'<conf name={quoteattr(g)}/>' for g in spec.groups)
    deps = "".join(
        f"<dependency org={quoteattr(c.group)} name={quoteattr(c.artifact)} "
        f"rev={quoteattr(c.version)} conf={quoteattr(group + '->default')}>"
        + "".join(f"<exclude org={quoteattr(x.split(':')[0])} "
                  f"module={quoteattr(x.split(':')[-1])}/>" for x in g.exclude)
        + "</dependency>"
        for group, g in spec.groups.items() for c in g.parsed()
    )
    own = {c.artifact for g in spec.groups.values() for c in g.parsed()}
    spark = ",".join(g for g, group in spec.groups.items() if group.jvm == "spark")
    excludes = "".join(f'<exclude module={quoteattr(a)} matcher="exact" conf={quoteattr(spark)}/>'
                       for a in excluded if a not in own) if spark else ""
    return (f'<ivy-module version="2.0"><info organisation="{IVY_ORG}" module="{IVY_MODULE}"/>'
            f"<configurations>{confs}</configurations>"
            f"<dependencies>{deps}{excludes}</dependencies></ivy-module>\n")


def ivy_settings(repository: str) -> str:
    """Ivy settings with one Maven-layout repository (Maven Central by default)."""
    root = repository if repository.endswith("/") else repository + "/"
    return ('<ivysettings><settings defaultResolver="central"/><resolvers>'
            f'<ibiblio name="central" m2compatible="true" root={quoteattr(root)}/>'
            "</resolvers></ivysettings>\n")


def read_report(report: Path) -> tuple[ResolvedJar, ...]:
    """The jars of one configuration from Ivy's resolution report."""
    jars: list[ResolvedJar] = []
    for module in ElementTree.parse(report).getroot().iter("module"):
        for rev in module.iter("revision"):
            if rev.get("evicted"):
                continue
            coordinate = f"{module.get('organisation')}:{module.get('name')}:{rev.get('name')}"
            jars.extend(ResolvedJar(coordinate, Path(str(a.get("location"))))
                        for a in rev.iter("artifact") if a.get("ext") == "jar")
    return tuple(jars)


def probe(repository: str) -> None:
    """Fail at once, naming the repository, when it cannot be reached."""
    if not repository.startswith(("http://", "https://")):
        return
    try:
        urllib.request.urlopen(urllib.request.Request(repository, method="HEAD"),
                               timeout=PROBE_TIMEOUT_S).close()
    except urllib.error.HTTPError:
        return  # it answered
    except (urllib.error.URLError, OSError) as exc:
        raise RuntimeSetupError(f"cannot reach the Maven repository {repository}: "
                                f"{getattr(exc, 'reason', exc)}") from exc


def _ivy_jar() -> Path:
    found = sorted(pyspark_jars_dir().glob("ivy-*.jar"))
    if not found:
        raise RuntimeSetupError(f"no ivy-*.jar in {pyspark_jars_dir()}: reinstall pyspark")
    return found[-1]


def _run_ivy(work: Path, cache: Path, confs: list[str]) -> None:
    cmd = [str(check_java().executable), "-cp", str(_ivy_jar()), "org.apache.ivy.Main",
           "-settings", str(work / "ivysettings.xml"), "-ivy", str(work / "ivy.xml"),
           "-cache", str(cache / "ivy"), "-confs", *confs]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeSetupError(f"resolving took over {RESOLVE_TIMEOUT_S:.0f} s") from exc
    (work / "ivy.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeSetupError(_ivy_failure(done.stdout + done.stderr, work / "ivy.log"))


def _ivy_failure(output: str, log_file: Path) -> str:
    missing = re.findall(r"::\s+(\S+#\S+;\S+):\s+(.+)", output)
    what = ", ".join(f"{m} ({why.strip()})" for m, why in missing) or "see the log"
    return f"Ivy could not resolve {what}; full log: {log_file}"


def resolve(spec: JarSpec, cache: Path, repository: str) -> Resolved:
    """Resolve every group into ``cache`` and return each group's files."""
    work = cache / f"work-{spec.key()}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "ivy.xml").write_text(ivy_module(spec, spark_artifacts(pyspark_jars_dir())))
    (work / "ivysettings.xml").write_text(ivy_settings(repository))
    probe(repository)
    started = time.perf_counter()
    log.info("resolving %d JVM dependency groups from %s into %s",
             len(spec.groups), repository, cache)
    _run_ivy(work, cache, list(spec.groups))
    resolved = {g: read_report(cache / "ivy" / f"{IVY_ORG}-{IVY_MODULE}-{g}.xml")
                for g in spec.groups}
    log.info("resolved %d jars in %.1f s",
             sum(len(v) for v in resolved.values()), time.perf_counter() - started)
    return resolved
