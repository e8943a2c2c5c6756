"""Checks of the values the config names outside itself: Hive names, locations, AWS
regions, S3 buckets. Each returns the value it accepts and raises ``ValueError`` with the
line a person reads.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import urlsplit

# Hive's metastore accepts database and table names that match Java's [\w_]+ (ASCII letters,
# digits, underscore: MetaStoreUtils.validateName); anything else fails only at commit.
_HIVE_NAME = re.compile(r"[A-Za-z0-9_]+")
# Hive 2.3's schema stores database names in 128 characters; Glue takes table names of 255.
MAX_DATABASE_NAME = 128
MAX_TABLE_NAME = 255


def check_hive_name(name: str, limit: int) -> str:
    """``name`` when the Hive metastore (and Glue) would accept it, else ``ValueError``."""
    if not _HIVE_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid Hive name: use only letters, digits and _ (A-Z, a-z, 0-9, _)"
        )
    if len(name) > limit:
        raise ValueError(f"{name[:20]!r}… has {len(name)} characters; at most {limit} are allowed")
    return name


#: Schemes both Hive (Hadoop file systems) and Ferry's file layer (pyarrow.fs) understand.
LOCATION_SCHEMES = ("file", "s3", "s3a", "s3n", "gs", "hdfs", "viewfs", "abfs", "abfss")
# Object stores: the URI's authority is the bucket (or container@account) and is required.
_BUCKET_SCHEMES = frozenset({"s3", "s3a", "s3n", "gs", "abfs", "abfss"})


def check_location(location: str) -> str:
    """``location`` without its trailing slash when Ferry can write to it, else ``ValueError``.

    Hive's own spelling of a local path, ``file:/path``, is accepted. A location that would
    be read differently than it is written is refused:
    ``file://tmp/x`` names the host ``tmp`` and the path ``/x`` (Ferry would write to
    ``/x``), ``s3:///x`` names no bucket, ``..`` segments are taken literally by object
    stores (so are empty ones: ``a//b``), and a query or fragment would be dropped. When a
    config file loads, a location whose only fault is repeated slashes is read as Hadoop
    reads it instead (``read_as_hadoop``).
    """
    parsed = urlsplit(location)
    scheme = parsed.scheme.lower()
    if not scheme:
        raise ValueError(f"{location!r} is not a URI; write e.g. s3://bucket/path or file:///path")
    if scheme not in LOCATION_SCHEMES:
        raise ValueError(
            f"{location!r}: scheme '{scheme}' is not supported; use one of "
            + ", ".join(f"{s}://" for s in LOCATION_SCHEMES)
        )
    if parsed.query or parsed.fragment or "?" in location or "#" in location:
        raise ValueError(f"{location!r} has a '?' or '#': a location is a plain path")
    if scheme == "file" and parsed.netloc:
        raise ValueError(
            f"{location!r} names the host '{parsed.netloc}'; a local path needs three slashes: "
            f"file:///{parsed.netloc}{parsed.path}"
        )
    if scheme in _BUCKET_SCHEMES and not parsed.netloc:
        raise ValueError(f"{location!r} names no bucket; write {scheme}://bucket/path")
    path = parsed.path.rstrip("/")
    if scheme not in _BUCKET_SCHEMES and not path:
        raise ValueError(f"{location!r} is the root folder; give a folder below it")
    if path and not path.startswith("/"):
        raise ValueError(f"{location!r} is not an absolute path")
    if any(segment in ("", ".", "..") for segment in path.split("/")[1:]):
        raise ValueError(
            f"{location!r} has an empty, '.' or '..' segment; write the folder itself, "
            f"e.g. {scheme}://{parsed.netloc}{posixpath.normpath(path)}"
        )
    return location.rstrip("/")


_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d+")


def check_region(region: str) -> str:
    """``region`` when it is spelled as an AWS region, else ``ValueError``."""
    if not _REGION.fullmatch(region):
        raise ValueError(f"{region!r} is not an AWS region, e.g. us-east-1")
    return region


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP_ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+")
# Names S3 reserves for its own kinds of bucket and access point.
_RESERVED_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def check_bucket_name(name: str) -> str:
    """``name`` when it is an S3 general purpose bucket's name, else ``ValueError``."""
    if "://" in name or "/" in name:
        raise ValueError(
            f"{name!r} is not a bucket name: give the bucket alone (e.g. landing), "
            "and the start of the keys as 'prefix'"
        )
    if not 3 <= len(name) <= 63:
        raise ValueError(f"{name!r} is not a bucket name: S3 bucket names have 3-63 characters")
    if not _BUCKET.fullmatch(name) or ".." in name:
        raise ValueError(
            f"{name!r} is not a bucket name: lower-case letters, digits, '.' and '-' only, "
            "starting and ending with a letter or digit, no '..'"
        )
    if _IP_ADDRESS.fullmatch(name):
        raise ValueError(f"{name!r} is not a bucket name: S3 refuses names like IP addresses")
    if name.startswith(_RESERVED_BUCKET_PREFIXES) or name.endswith(_RESERVED_BUCKET_SUFFIXES):
        raise ValueError(f"{name!r} is not a bucket name: S3 reserves its prefix or suffix")
    return name
