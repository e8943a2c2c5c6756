"""Circus Train's files load as they are.

Each of its keys is either implemented or accepted with one warning that says what Ferry
does instead: each model lists those keys in ``circus_train_keys``, with one of the texts
below. Before the models see a document, those keys are set aside as warnings
(``set_aside_circus_train_keys``), and locations are read as Hadoop reads them, as Circus
Train did (``read_locations_as_hadoop``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from ferry.config.base import ConfigWarning, fields_by_key, kebab, model_of, path_text
from ferry.config.checks import check_location
from ferry.config.text import KeyPath
from ferry.storage import retry_policy

# -- what Ferry does instead of Circus Train's keys -------------------------------------------

NO_HADOOP_CONFIGURATION = (
    "Ferry reads no Hadoop configuration: metastores are the catalog's hive-metastore-uris "
    "(or glue), S3 settings come from the AWS SDK's environment"
)
NO_SSH_TUNNEL = (
    "Ferry opens no SSH tunnel: forward a port yourself (ssh -L 9083:metastore:9083 bastion) "
    "and point hive-metastore-uris at it, or run Ferry inside the metastore's network"
)
METRICS = (
    "Ferry sends no metrics to Graphite: the pipeline publishes each table's metrics (bytes and "
    "files replicated, failures) to CloudWatch, namespace Ferry"
)
PARTITION_PAGES = (
    "Ferry reads partitions in pages of the catalog's batch-size (default 1000) and never holds "
    "a whole table's partitions"
)
LEDGER = (
    "Ferry's housekeeping ledger is a DynamoDB table of the pipeline: there is no database to "
    "configure"
)
NO_BANDWIDTH_LIMIT = "Ferry does not throttle copies: lower copier-options.threads instead"
SPARK_BALANCES = (
    "Ferry's Spark copy balances files by size over the job's executors; the EMR Serverless "
    "application's capacity sets how many"
)
SDK_CREDENTIALS = (
    "Ferry reads no Hadoop credential provider (JCEKS): AWS access comes from the AWS SDK's "
    "credentials (the Lambda's or Spark job's IAM role, the environment, a profile); keep other "
    "secrets in AWS Secrets Manager"
)
ASSUME_ROLE = (
    "Ferry assumes one IAM role for the whole replica side, not one per table: give it in "
    "the top-level copier-options, or as replica-catalog.assume-role"
)
S3_MULTIPART_UPLOAD = (
    "Ferry's uploads to S3 (inline and Spark copies) are multipart as the file layer decides; "
    "S3 to S3 copies use copier-options.multipart-threshold-mib and part-size-mib"
)
RETRIES = (
    f"Ferry sends each failed AWS request at most {retry_policy.ATTEMPTS} times in all (the SDKs' "
    f"{retry_policy.MODE} retries, with backoff), then the state machine retries the step; files "
    "of batches already copied are not copied again"
)
COPIER_CHOSEN = (
    "Ferry chooses the copier itself: none, metadata only, inline, S3 server-side or Spark "
    "(copier-options.inline-threshold-mib)"
)


_REPEATED_SLASHES = re.compile(r"/{2,}")


def read_as_hadoop(location: str) -> str | None:
    """``location`` as Hive reads it, when only repeated slashes keep Ferry from taking it
    as written; else None (Ferry takes it as written, or refuses it either way).

    Hadoop's ``Path``, through which Hive and Circus Train read every location, collapses
    repeated slashes in the path and keeps the scheme and authority:
    ``file:/data/warehouse//db/table`` is ``file:/data/warehouse/db/table``,
    ``s3://bucket/warehouse//db/table`` is ``s3://bucket/warehouse/db/table``. Configs
    write such locations by joining placeholders, ``${warehouse-uri}/db/table`` with a
    warehouse URI that ends in ``/``. Ferry's file layer would take the empty segment
    literally (an object store keeps it in the key), so the location is rewritten the way
    Hive will read it; a location still refused after that (``..``, no bucket) is refused
    as written.
    """
    try:
        check_location(location)
        return None
    except ValueError:
        pass
    scheme, colon, rest = location.partition(":")
    if not colon or "?" in location or "#" in location:
        return None
    authority = ""
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        authority, rest = f"//{authority}", slash + path
    normal = f"{scheme}:{authority}{_REPEATED_SLASHES.sub('/', rest)}"
    try:
        return check_location(normal)
    except ValueError:
        return None


def set_aside_circus_train_keys(
    data: Any,
    model: type[BaseModel],
    path: KeyPath,
    source: str,
    warnings: list[ConfigWarning],
) -> Any:
    """``data`` without the Circus Train keys ``model`` does not use, each one a warning.

    Walks the document along the models' fields; anything unknown is left for the model to
    refuse (with a suggestion, ``describe_validation_error``).
    """
    if not isinstance(data, dict):
        return data
    known = fields_by_key(model)
    set_aside: Mapping[str, str] = getattr(model, "circus_train_keys", {})
    kept = {}
    for key, value in data.items():
        field = known.get(key) if isinstance(key, str) else None
        if field is not None:
            kept[key] = _descend(
                value, field, (*path, key),
                lambda d, m, p: set_aside_circus_train_keys(d, m, p, source, warnings),
            )  # fmt: skip
        elif isinstance(key, str) and key in set_aside:
            warnings.append(ConfigWarning(source, path_text([*path, key]), set_aside[key]))
        else:
            kept[key] = value
    return kept


def read_locations_as_hadoop(
    data: Any,
    model: type[BaseModel],
    path: KeyPath,
    source: str,
    warnings: list[ConfigWarning],
) -> Any:
    """``data`` with each location that has repeated slashes as Hadoop reads it, each one
    a warning naming its key, as written and as read (``read_as_hadoop``).

    Walks the document along the models' fields, as ``set_aside_circus_train_keys`` does;
    a location Ferry refuses either way is left for the model to refuse as written.
    """
    if not isinstance(data, dict):
        return data
    known = fields_by_key(model)
    locations: frozenset[str] = getattr(model, "location_keys", frozenset())
    read = {}
    for key, value in data.items():
        field = known.get(key) if isinstance(key, str) else None
        if isinstance(key, str) and kebab(key) in locations and isinstance(value, str):
            normal = read_as_hadoop(value)
            if normal is not None:
                warnings.append(
                    ConfigWarning(
                        source,
                        path_text([*path, key]),
                        f"{value!r} is read as {normal!r}: repeated slashes count as one, "
                        "as Hive (Hadoop's Path) reads a location",
                    )
                )
                value = normal
        elif field is not None:
            value = _descend(
                value, field, (*path, key),
                lambda d, m, p: read_locations_as_hadoop(d, m, p, source, warnings),
            )  # fmt: skip
        read[key] = value
    return read


def _descend(
    value: Any,
    field: Any,
    path: KeyPath,
    walk: Callable[[Any, type[BaseModel], KeyPath], Any],
) -> Any:
    """``value`` of a model's ``field`` (at ``path``), ``walk``ed where it holds a model or a
    list of them; as it is otherwise. The config walkers' one way down the models."""
    inner = model_of(field.annotation)
    if inner is None:
        return value
    if isinstance(value, list):
        return [walk(item, inner, (*path, index)) for index, item in enumerate(value)]
    return walk(value, inner, path)
