"""A warehouse on S3 or an S3-compatible store: one place that turns ``s3:`` settings into
each reader's properties (Iceberg's S3FileIO, Hadoop's S3A for the metastore, pyarrow for
pyiceberg, DuckDB's httpfs) and checks the credentials before anything is written.

Credentials are never in the settings: every client takes them from the standard AWS
chain (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``,
``AWS_PROFILE``, an instance role). With an explicit endpoint (an S3-compatible store)
the instance-metadata service is switched off, so no client asks a link-local address.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from icetide.config import Settings
from icetide.errors import RuntimeSetupError

if TYPE_CHECKING:
    from pyarrow.fs import S3FileSystem

log = logging.getLogger(__name__)

SCHEMES = ("s3", "s3a", "s3n")
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
KEY_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_CHAIN_VARS = ("AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
               "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


def on_s3(location: str) -> bool:
    """``s3://``, ``s3a://`` or ``s3n://``."""
    return urlsplit(location).scheme in SCHEMES


def uses_s3(settings: Settings) -> bool:
    """A warehouse on S3, or S3FileIO named in the catalog's properties."""
    return on_s3(settings.warehouse) or settings.catalog.properties.get(
        "io-impl", "") == S3_FILE_IO


def bucket_and_key(location: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → ``("bucket", "a/b")``."""
    parts = urlsplit(location)
    return parts.netloc, parts.path.strip("/")


def iceberg_properties(settings: Settings) -> dict[str, str]:
    """Iceberg catalog properties for S3FileIO (also read by pyiceberg); ``{}`` off S3."""
    if not uses_s3(settings):
        return {}
    s3 = settings.s3
    props = {"io-impl": S3_FILE_IO, "client.region": s3.region, "s3.region": s3.region,
             "s3.path-style-access": str(s3.path_style_access).lower()}
    if s3.endpoint:
        props["s3.endpoint"] = s3.endpoint
        # pyiceberg's pyarrow FileIO: path-style unless told otherwise
        props["s3.force-virtual-addressing"] = str(not s3.path_style_access).lower()
    return props


def hadoop_properties(settings: Settings) -> dict[str, str]:
    """Hadoop S3A settings for the metastore, which creates a namespace's and a table's
    directory through Hadoop's FileSystem (``s3://`` → S3A)."""
    s3 = settings.s3
    props = {"fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
             "fs.s3n.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
             "fs.s3a.path.style.access": str(s3.path_style_access).lower(),
             "fs.s3a.endpoint.region": s3.region}
    if s3.endpoint:
        props["fs.s3a.endpoint"] = s3.endpoint
        props["fs.s3a.connection.ssl.enabled"] = str(s3.endpoint.startswith("https")).lower()
    return props


def _has_credentials() -> bool:
    return all(os.environ.get(v) for v in KEY_VARS) or any(os.environ.get(v) for v in _CHAIN_VARS)


def credentials_hint(settings: Settings) -> str:
    where = settings.s3.endpoint or f"AWS S3 ({settings.s3.region})"
    return (f"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) in the "
            f"environment to credentials of {where}")


def prepare_environment(settings: Settings) -> None:
    """Before any S3 client starts: no instance-metadata look-ups against another store's
    endpoint, and without any credential in the environment stop with what to set."""
    if settings.s3.endpoint:
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        if not _has_credentials():
            raise RuntimeSetupError(f"no S3 credentials for the warehouse {settings.warehouse} "
                                    f"at {settings.s3.endpoint}: {credentials_hint(settings)}")


def filesystem(settings: Settings) -> S3FileSystem:
    """A pyarrow S3 file system for ``settings`` (credentials from the environment)."""
    from pyarrow.fs import S3FileSystem

    s3 = settings.s3
    if not s3.endpoint:
        return S3FileSystem(region=s3.region)
    parts = urlsplit(s3.endpoint)
    return S3FileSystem(endpoint_override=parts.netloc, scheme=parts.scheme, region=s3.region,
                        force_virtual_addressing=not s3.path_style_access)


def check_access(settings: Settings) -> None:
    """List the warehouse once: wrong credentials or a missing bucket stop here, with the
    endpoint and the variables to set, before anything is written."""
    prepare_environment(settings)
    bucket, key = bucket_and_key(settings.warehouse)
    from pyarrow.fs import FileSelector

    try:
        filesystem(settings).get_file_info(FileSelector(f"{bucket}/{key}".rstrip("/"),
                                                        allow_not_found=True))
    except OSError as exc:
        where = settings.s3.endpoint or "AWS S3"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RuntimeSetupError(f"cannot read the warehouse {settings.warehouse} at {where} "
                                f"({first}): {credentials_hint(settings)}, and check that "
                                f"bucket {bucket!r} exists") from exc
