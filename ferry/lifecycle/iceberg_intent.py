"""An Iceberg run's intent: the write-ahead record of the files it writes at its replica.

Plan, before it writes anything at an Iceberg replica (``ferry.states.plan``), records that the
run writes below the table-location and ledgers a document in the run's folder that names the
files it is about to write (``iceberg_writes_intended``). A run killed before its Abort or its
commit so leaves nothing housekeeping cannot find (``ferry.lifecycle.retired_iceberg_files``
reads the document back with ``intended_files``); a successful commit forgets it
(``ferry.lifecycle.snapshot_records``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from ferry.config import TableReplication
from ferry.copying.manifest import read_manifest
from ferry.lifecycle.replica_state import ReplicaState
from ferry.replicas.ledger import CreatedSnapshot, LedgerEntry
from ferry.storage import fs

if TYPE_CHECKING:
    from ferry.iceberg.pipeline import IcebergIntent

#: In the run's folder: the files an Iceberg run writes at its replica (its intent).
ICEBERG_INTENT = "iceberg-intent.json"


def iceberg_writes_intended(
    state: ReplicaState | None,
    replica_key_: str,
    replication: TableReplication,
    event_id: str,
    intent: IcebergIntent,
    run_root: str,
    now: datetime,
) -> str | None:
    """Before an Iceberg run writes anything at its replica (Plan, before it stages the
    commit; the copiers and Commit write after Plan): record that it writes below the
    table-location, and ledger its *intent* — a document in the run's folder naming its
    metadata files and rewritten position delete files, and its manifest (the copies). The
    intent's URI, or None without a state.

    One entry per run, however many files it copies. A run killed before its Abort (or its
    commit) leaves nothing housekeeping cannot find: past the grace period it deletes each
    of those files that exists and the replica's current metadata does not reference. A
    retried Plan adds its files to the same intent.
    """
    if state is None:
        return None
    root = fs.normalise(intent.root)
    state.store.record_created(
        CreatedSnapshot(
            replica=replica_key_,
            path=root,
            event_id=event_id,
            root=root,
            source_location=fs.normalise(intent.source_location),
            created_at=now,
        )
    )
    where = fs.join(run_root, ICEBERG_INTENT)
    files = set(intent.files)
    if fs.exists(where):
        files.update(json.loads(fs.read_bytes(where))["files"])
    document = {
        "eventId": event_id,
        "root": root,
        "files": sorted(files),
        "manifest": intent.manifest_uri,
    }
    fs.write_bytes(where, json.dumps(document, indent=1).encode())
    state.store.record(
        [
            LedgerEntry(
                replica=replica_key_,
                path=where,
                event_id=event_id,
                replica_table=replication.replica_qualified_name,
                recorded_at=now,
                snapshot=root,
                intent=True,
            )
        ]
    )
    return where


def intended_files(intent_uri: str, copies: bool = True) -> list[str]:
    """The files an intent (``iceberg_writes_intended``) names: its metadata and rewritten
    delete files, and (``copies``) the targets of its manifest. Nothing when the run's folder
    is gone; no copies when its manifest is missing or incomplete (then it copied nothing)."""
    if not fs.exists(intent_uri):
        return []
    document = json.loads(fs.read_bytes(intent_uri))
    files = list(document["files"])
    manifest = document.get("manifest")
    if copies and manifest and fs.exists(manifest):
        try:
            tasks = read_manifest(manifest).tasks
        except ValueError:
            # A manifest Plan never completed (it failed while streaming it): no copier read
            # it, so nothing was copied from it.
            tasks = ()
        files.extend(task.target for task in tasks)
        # Outside S3 a copy killed mid-file leaves it under its partial name
        # (``fs.partial_name``); S3 stores an object only once it is whole.
        files.extend(
            fs.partial_name(task.target)
            for task in tasks
            if fs.scheme_of(task.target) not in fs.S3_SCHEMES
        )
    return files
