"""Readers of the replica never see a partial, mixed or missing partition.

A partitioned table is replicated again and again, its source data rewritten between runs,
while reader threads resolve the replica's partitions through the metastore — as a query
engine does — and read every file. Each file names its generation and ends with a marker, so
a reader can tell a complete partition (every file there, whole, all of one generation) from
a partial one (a file short or missing) or a mixed one (files of two generations).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType
from ferry.local.samples import PARQUET
from ferry.storage import fs
from tests.helpers import Replicator, config_document

pytestmark = pytest.mark.e2e

RUNS = 10
DAYS = ("2026-11-19", "2026-11-20", "2026-11-21")
FILES = ("part-0", "part-1", "part-2")
BODY = 64 * 1024
END = b"|END"


def content(generation: int, day: str, name: str) -> bytes:
    head = f"generation={generation:04d};day={day};file={name};".encode()
    return head + b"x" * (BODY - len(head)) + END


def write_generation(location: str, generation: int) -> None:
    """Rewrite every source file in place with a new generation."""
    for day in DAYS:
        for name in FILES:
            fs.write_bytes(f"{location}/dt={day}/{name}", content(generation, day, name))


@dataclass
class Reads:
    complete: int = 0
    problems: list[str] = field(default_factory=list)


def read_partition(partition: Partition) -> str | None:
    """None when the partition is complete; else what is wrong with it."""
    files = {entry.uri.rsplit("/", 1)[1]: entry.uri for entry in fs.list_files(partition.location)}
    if set(files) != set(FILES):
        return f"missing files at {partition.location}: {sorted(files)}"
    generations = set()
    for uri in files.values():
        data = fs.read_bytes(uri)
        if len(data) != BODY + len(END) or not data.endswith(END):
            return f"partial file {uri} ({len(data)} bytes)"
        generations.add(data.split(b";", 1)[0])
    if len(generations) != 1:
        return f"mixed generations at {partition.location}: {sorted(generations)}"
    return None


def reader(uri: str, database: str, stop: threading.Event, reads: Reads) -> None:
    with HiveMetastoreCatalog("reader", [uri]) as replica:
        while not stop.is_set():
            table = replica.get_table(database, "events")
            if table is None:
                time.sleep(0.05)
                continue
            for partition in replica.list_partitions(table):
                problem = read_partition(partition)
                if problem:
                    reads.problems.append(problem)
                else:
                    reads.complete += 1


@pytest.fixture
def events_table(local_runtime, source_catalog, unique, tmp_path):
    database = f"events_{unique}"
    location = fs.local_uri(tmp_path / "source" / "events")
    source_catalog.create_database(Database(database, "readers test", None))
    table = Table(
        database=database,
        name="events",
        table_type=TableType.EXTERNAL,
        storage=StorageDescriptor(
            location=location, columns=(Column("line", "string"),), **PARQUET
        ),
        partition_keys=(Column("dt", "string"),),
        parameters={"EXTERNAL": "TRUE"},
    )
    source_catalog.create_table(table)
    write_generation(location, 0)
    source_catalog.add_partitions(
        table,
        [Partition((day,), table.storage.with_location(f"{location}/dt={day}")) for day in DAYS],
    )
    return database, location


def replicate_while_reading(local_runtime, database, location, replicate_once) -> Reads:
    reads, stop = Reads(), threading.Event()
    replicate_once(0)
    threads = [
        threading.Thread(
            target=reader, args=(local_runtime.replica_uri, f"{database}_dr", stop, reads)
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    generation = 0
    try:
        # At least RUNS replications, and as many more as it takes to read 500 partitions
        # while they run.
        while generation < RUNS or (reads.complete + len(reads.problems) < 500 and generation < 60):
            generation += 1
            write_generation(location, generation)
            replicate_once(generation)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    print(f"{generation} replications, {reads.complete} complete partition reads")
    return reads


def document(local_runtime, database, tmp_path):
    return config_document(
        local_runtime,
        [
            {
                "source-table": {"database-name": database, "table-name": "events"},
                "replica-table": {
                    "database-name": f"{database}_dr",
                    "table-location": fs.local_uri(tmp_path / "replica" / "events"),
                },
            }
        ],
    )


def test_readers_see_only_complete_partitions_while_ferry_replicate_runs(
    local_runtime, events_table, tmp_path
):
    database, location = events_table
    replicator = Replicator(document(local_runtime, database, tmp_path))

    def once(generation: int) -> None:
        [outcome] = replicator.run()
        assert outcome.status == "SUCCEEDED", outcome.error

    reads = replicate_while_reading(local_runtime, database, location, once)
    assert reads.problems == []
    assert reads.complete >= 500


def test_readers_see_only_complete_partitions_while_the_state_machine_runs(
    run, local_runtime, events_table, tmp_path
):
    database, location = events_table
    config = document(local_runtime, database, tmp_path)

    def once(generation: int) -> None:
        assert run(config).status == "SUCCEEDED"

    reads = replicate_while_reading(local_runtime, database, location, once)
    assert reads.problems == []
    assert reads.complete >= 500
