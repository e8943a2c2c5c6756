"""Where Ferry keeps what outlives one run: the snapshot ledger and the replica locks.

Two ports, one store:

- the **ledger** (``Ledger``) lists every location a commit superseded — the replica table's
  or a partition's previous snapshot below its managed table location — with the event that
  superseded it and when. Housekeeping (``ferry.lifecycle.retired_snapshots``) deletes them after
  the grace period, never one the replica still references.
- the **locks** (``Locks``) let one replication at a time work on a replica table: a lease
  with an expiry, taken with a conditional write (free, expired, or already ours), so a
  crashed run's lease is taken over once it expires.

Adapters: ``DynamoDbStateStore`` (the pipeline; the local runtime's emulator;
``ferry.replicas.ledger.dynamodb``, its table created and checked by
``ferry.replicas.ledger.dynamodb_table``) and ``SqliteStateStore`` (``ferry replicate`` with no
AWS at all: a file under ``--home``; ``ferry.replicas.ledger.sqlite``, the file's tables
checked, created and upgraded by ``ferry.replicas.ledger.sqlite_file``). The records and the
ports are ``ferry.replicas.ledger.records``; this package exports what callers use.

Keys, in one DynamoDB table (``pk`` string hash key, ``sk`` string range key, on-demand):

=========================  ==================================  ===============================
item                       pk                                  sk
=========================  ==================================  ===============================
ledger entry               the replica (``replica_key``)       ``snapshot#<path>``
created snapshot           the replica                         ``created#<snapshot folder>``
recording since            the replica                         ``created-since``
lock (lease)               the replica                         ``lock``
outcome                    the replica                         ``outcome``
=========================  ==================================  ===============================

A replica's **outcome** (``Outcome``) is how its replications have ended: the last
success (its time, event, the source version it replicated and when the source was read
for it) and, while it fails, ``failingSince`` (the first failure after the last success),
the last failure's time and event and its one-line error. Commit and Notify success (the
nothing-to-do path) record a success; Abort table records a failure. ``ferry status``
reads the outcomes of many replicas at once (``outcomes``: DynamoDB ``BatchGetItem``, 100
keys a call; SQLite one query).

An Iceberg run's **intent** is a ledger entry too (``LedgerEntry.intent``): its path names a
document in the run's folder listing the files the run writes at the replica, ledgered by
Plan before it writes any of them; one entry per run, however many files it copies.

A **created snapshot** is what makes a folder Ferry's (``ferry.replicas.ownership``): the run that
writes ``<table-location>/<event-id>/`` records it, with that table-location and the source
table's location, before it copies anything. Deletion trusts this record, never the
config's table-location of the day.

A replica is named by its catalog and table, ``<catalog>/<database>.<table>`` (lower case;
the catalog is its metastore URIs, or ``glue:<region>[:<catalog id>]``), so one table's
ledger is one ``Query`` and its lock one item. Recording a path again overwrites its entry
(the same path, event and table: a retried commit records the same entries).
"""

from ferry.replicas.ledger.dynamodb import DynamoDbStateStore
from ferry.replicas.ledger.records import (
    LONGEST_LEASE,
    CreatedSnapshot,
    Lease,
    Ledger,
    LedgerEntry,
    Locks,
    Outcome,
    Outcomes,
    StateStore,
    replica_key,
)
from ferry.replicas.ledger.sqlite import SqliteStateStore

__all__ = [
    "LONGEST_LEASE",
    "CreatedSnapshot",
    "DynamoDbStateStore",
    "Lease",
    "Ledger",
    "LedgerEntry",
    "Locks",
    "Outcome",
    "Outcomes",
    "SqliteStateStore",
    "StateStore",
    "replica_key",
]
