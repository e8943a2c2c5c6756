"""Copy records: one per manifest batch a copier finished, its files copied and verified at
the target and its rewrites written.

Records sit beside the manifest, in ``copied/``, one file a batch, named by the batch's index
and its digest (``ferry.copying.manifest.batch_digest``): a resumed run re-plans its event's
manifest, and a record made for another batch of the same index must not count for this one.
Commit commits only when every batch has its record; a retried copy skips the batches
already recorded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ferry.copying.manifest import DIGEST
from ferry.storage import fs

#: The folder of the records, beside the manifest.
RECORDS = "copied"


def copy_record_uri(manifest_uri: str, batch: int, digest: str | None = None) -> str:
    """Where the copy record of batch ``batch`` (of that ``digest``) of a manifest is."""
    name = f"{batch:06d}-{digest}.json" if digest else f"{batch:06d}.json"
    return fs.join(manifest_uri.rsplit("/", 1)[0], RECORDS, name)


def write_copy_record(
    manifest_uri: str, batch: dict[str, Any], files: int, size: int, rewrites: int = 0
) -> None:
    """Record that ``batch`` is copied and verified at the target (and its rewrites written)."""
    record = {
        "eventId": batch["eventId"],
        "batch": batch["batch"],
        "files": files,
        "bytes": size,
        "rewrites": rewrites,
    }
    uri = copy_record_uri(manifest_uri, batch["batch"], batch.get(DIGEST))
    fs.write_bytes(uri, json.dumps(record).encode())


def recorded_batches(manifest_uri: str, digests: Sequence[str] = ()) -> set[int]:
    """The batches whose copy record exists: with ``digests`` (each batch's, in order), only
    the records made for that very batch (a resumed run's manifest may differ)."""
    folder = fs.join(manifest_uri.rsplit("/", 1)[0], RECORDS)
    recorded = set()
    for entry in fs.list_files(folder):
        name = entry.uri.rsplit("/", 1)[1]
        if not name.endswith(".json"):
            continue
        index_text, _, digest = name.removesuffix(".json").partition("-")
        if not index_text.isdigit():
            continue
        index = int(index_text)
        if digests and (index >= len(digests) or digest != digests[index]):
            continue
        recorded.add(index)
    return recorded
