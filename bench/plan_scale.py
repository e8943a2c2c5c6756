"""Planning a table of a million files: Plan's time and peak memory, against a bare listing.

A source table in a real Hive metastore (started here, on free ports) with ``--partitions``
partitions of ``--files`` files each, on the local disk. Plan (``ferry/states/plan.py``: both
catalogs read, every file listed on a thread pool, the manifest streamed to the work
location, the plan written) runs in a fresh process, so its peak RSS is its own; beside it,
in the same run, a fresh process only lists the same files with ``pyarrow.fs`` and keeps
them in a list — the least any planner must do. Figures are printed as ratios to that
baseline, and against a Lambda function's limits (10,240 MB, 900 s).

    make bench                    # or: .venv/bin/python bench/plan_scale.py --files 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType  # noqa: E402
from ferry.local import metastore, processes  # noqa: E402
from ferry.storage import fs  # noqa: E402

LAMBDA_MEMORY_MB = 10_240
LAMBDA_SECONDS = 900

# Each child prints one JSON line: seconds and peak RSS of its own work.
PLAN_CHILD = """
import json, resource, sys, time
from ferry.states import plan
from ferry.states.context import StateContext
payload = json.loads(sys.argv[1])
started = time.monotonic()
result = plan.run(StateContext(payload.pop("workUri")), payload)
print(json.dumps({"seconds": time.monotonic() - started, "files": result.files,
                  "batches": result.batches, "manifestUri": result.manifest_uri,
                  "rssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
LIST_CHILD = """
import json, resource, sys, time
from concurrent.futures import ThreadPoolExecutor
import ferry.states.plan  # the same imports as the others, for the same starting point
from ferry.storage import fs
roots = json.loads(sys.argv[1])
started = time.monotonic()
with ThreadPoolExecutor(8) as pool:
    listed = [entry for listing in pool.map(fs.list_files, roots) for entry in listing]
print(json.dumps({"seconds": time.monotonic() - started, "files": len(listed),
                  "rssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
IDLE_CHILD = """
import json, resource
import ferry.states.plan  # what both children import before any work
print(json.dumps({"rssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(code: str, argument: str = "") -> dict:
    output = subprocess.run(
        [sys.executable, "-c", code, argument],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def make_files(root: Path, partitions: int, files: int) -> list[str]:
    """``partitions`` folders of ``files`` small files; their folder URIs."""
    folders = []
    for index in range(partitions):
        folder = root / f"dt={index:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        for number in range(files):
            with open(
                folder / f"part-{number:05d}-0d6f8e4c-1b2a-4f5e-9c3d-7a8b9c0d1e2f.parquet", "wb"
            ) as handle:
                handle.write(b"x")
        folders.append(fs.local_uri(folder))
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--files", type=int, default=1000, help="files per partition")
    arguments = parser.parse_args()
    total = arguments.partitions * arguments.files

    with tempfile.TemporaryDirectory(prefix="ferry-plan-bench-") as folder:
        home = Path(folder)
        ports = {name: processes.free_port() for name in ("source", "replica")}
        started = []
        try:
            for name, port in ports.items():
                metastore.start_metastore(home, name, port)
                started.append(name)
            print(f"creating {total:,} files in {arguments.partitions:,} partitions …", flush=True)
            clock = time.monotonic()
            source_root = home / "source-data" / "events"
            folders = make_files(source_root, arguments.partitions, arguments.files)
            print(f"  {time.monotonic() - clock:.0f} s", flush=True)
            uri = f"thrift://127.0.0.1:{ports['source']}"
            with HiveMetastoreCatalog("source", [uri]) as source:
                source.create_database(Database("bench", None, None))
                table = Table(
                    "bench", "events", TableType.EXTERNAL,
                    StorageDescriptor(fs.local_uri(source_root), (Column("v", "string"),), serde_library="x"),
                    partition_keys=(Column("dt", "string"),),
                )  # fmt: skip
                source.create_table(table)
                source.add_partitions(
                    table,
                    [
                        Partition((f"{i:05d}",), table.storage.with_location(folders[i]))
                        for i in range(arguments.partitions)
                    ],
                )
            config = home / "config.yml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "source-catalog": {"name": "source", "hive-metastore-uris": uri},
                        "replica-catalog": {
                            "name": "replica",
                            "hive-metastore-uris": f"thrift://127.0.0.1:{ports['replica']}",
                        },
                        "table-replications": [
                            {
                                "source-table": {"database-name": "bench", "table-name": "events"},
                                "replica-table": {
                                    "database-name": "bench_dr",
                                    "table-location": fs.local_uri(home / "replica" / "events"),
                                },
                            }
                        ],
                    }
                )
            )
            idle = child(IDLE_CHILD)
            listing = child(LIST_CHILD, json.dumps(folders))
            plan = child(
                PLAN_CHILD,
                json.dumps(
                    {
                        "workUri": fs.local_uri(home / "work"),
                        "configUri": str(config),
                        "sourceTable": "bench.events",
                        "eventId": "ferry-20261121t083000000z-00000000",
                        "startTime": "2026-11-21T08:30:00+00:00",
                    }
                ),
            )
        finally:
            for name in started:
                processes.stop_process(home, name)
            manifest_mib = os.path.getsize(plan["manifestUri"].removeprefix("file://")) / 2**20
    assert plan["files"] == listing["files"] == total, (plan, listing)

    own_plan = plan["rssMiB"] - idle["rssMiB"]
    own_list = listing["rssMiB"] - idle["rssMiB"]
    print(f"\nplanning {total:,} files in {arguments.partitions:,} partitions")
    print(f"| | seconds | peak RSS MiB (above an idle process's {idle['rssMiB']:.0f}) |")
    print("| --- | ---: | ---: |")
    print(
        f"| Ferry Plan (catalogs, listing, manifest, plan) | {plan['seconds']:.1f} | {plan['rssMiB']:.0f} ({own_plan:+.0f}) |"
    )
    print(
        f"| bare listing into a list (baseline) | {listing['seconds']:.1f} | {listing['rssMiB']:.0f} ({own_list:+.0f}) |"
    )
    print(
        f"| ratio Ferry / baseline | {plan['seconds'] / listing['seconds']:.2f} | {own_plan / max(own_list, 1):.2f} |"
    )
    print(
        f"\nmanifest: {manifest_mib:.1f} MiB in {plan['batches']:,} batches; "
        f"Lambda limits: {plan['rssMiB'] / LAMBDA_MEMORY_MB:.1%} of {LAMBDA_MEMORY_MB:,} MB, "
        f"{plan['seconds'] / LAMBDA_SECONDS:.1%} of {LAMBDA_SECONDS} s"
    )


if __name__ == "__main__":
    main()
