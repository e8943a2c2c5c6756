"""An Iceberg table's incremental run as a whole command, against ``aws s3 cp`` and s5cmd of
its new files.

On the local runtime's emulated AWS (started here, with a real Hive metastore as the source
catalog), the path of the sample config: an Iceberg table on the local disk, in the Hive
metastore (written with pyiceberg's ``HiveCatalog``, as an engine commits), replicated to a
Glue table on S3. Each round has a table of its own, replicated once (not timed); then each
gets ``--appends`` appends of one file of ``--mib`` MiB, and every tool is timed as a new
process, from its start to its end, in a rotating order:

- ``ferry replicate CONFIG --table … --home … --json``, the incremental run (checked: the
  replica's current snapshot is the source's, and the new files' bytes are at the replica);
- ``aws s3 cp --recursive`` of exactly those new files (``--exclude``/``--include``) to a
  fresh prefix;
- ``s5cmd run`` of one ``cp`` per new file to a fresh prefix;
- then ``ferry replicate`` again, which has nothing to do: the run's fixed cost.

Each tool keeps its fastest round. Printed: seconds, and Ferry's incremental run over each
baseline (the target: at most 1.2 times ``aws s3 cp``).

    make bench                    # or: .venv/bin/python bench/iceberg_command.py --rounds 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pyarrow as pa
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from command_copy import emulated_environment, run_beside_emulator  # noqa: E402
from copy_throughput import Baselines, run_quietly  # noqa: E402

DATABASE = "bench"
BUCKET = "bench-iceberg"
TOOLS = ("ferry replicate", "aws s3 cp", "s5cmd")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--appends", type=int, default=3, help="new files per round")
    parser.add_argument("--mib", type=int, default=16, help="MiB per new file")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--profile", action="store_true", help="profile one more incremental run (cProfile)"
    )
    arguments = parser.parse_args()
    run_beside_emulator("ferry-iceberg-command-", arguments, measure, report)


def measure(home: Path, ports: dict[str, int], arguments: argparse.Namespace) -> dict:
    endpoint, environment = emulated_environment(ports)
    s3 = boto3.client("s3", endpoint_url=endpoint)
    glue = boto3.client("glue", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    glue.create_database(DatabaseInput={"Name": f"{DATABASE}_dr"})
    catalog = _source_catalog(f"thrift://127.0.0.1:{ports['source']}", home)
    tables = [f"events_{r}" for r in range(arguments.rounds + int(arguments.profile))]
    print(f"{len(tables)} Iceberg tables, replicated once …", flush=True)
    for name in tables:
        _create(catalog, name, home / "source" / name)
    config = home / "replication.yml"
    config.write_text(yaml.safe_dump(_config(ports, tables), sort_keys=False))
    first = _ferry(config, home, environment, None)
    assert [t["status"] for t in first["tables"]] == ["SUCCEEDED"] * len(tables), first
    print(f"{arguments.appends} appends of {arguments.mib} MiB to each …", flush=True)
    new_files = {name: _append(catalog, name, arguments) for name in tables}
    base = Baselines(endpoint)
    tools = {
        "ferry replicate": lambda name: _ferry(config, home, environment, name),
        "aws s3 cp": lambda name: _aws_cp(base, new_files[name], f"s3://{BUCKET}/cli/{name}"),
        "s5cmd": lambda name: _s5cmd(base, home, new_files[name], f"s3://{BUCKET}/s5/{name}"),
    }
    best: dict[str, float] = {}
    noop: list[float] = []
    for round_ in range(arguments.rounds):
        name = tables[round_]
        for tool in TOOLS[round_ % 3 :] + TOOLS[: round_ % 3]:
            begun = time.perf_counter()
            done = tools[tool](name)
            seconds = time.perf_counter() - begun
            best[tool] = min(best.get(tool, seconds), seconds)
            if tool == "ferry replicate":
                assert [t["status"] for t in done["tables"]] == ["SUCCEEDED"], done
        _check(s3, glue, catalog, name, new_files[name])
        begun = time.perf_counter()
        again = _ferry(config, home, environment, name)
        noop.append(time.perf_counter() - begun)
        assert [t["status"] for t in again["tables"]] == ["UNCHANGED"], again
    if arguments.profile:
        _ferry(config, home, environment, tables[-1], profile=True)
    return {
        "appends": arguments.appends,
        "mib": arguments.mib,
        "rounds": arguments.rounds,
        "seconds": {tool: round(seconds, 3) for tool, seconds in best.items()},
        "noopSeconds": round(min(noop), 3),
    }


def _source_catalog(uri: str, home: Path):
    from pyiceberg.catalog.hive import HiveCatalog

    catalog = HiveCatalog("source", uri=uri, warehouse=(home / "source").as_uri())
    catalog.create_namespace(DATABASE)
    return catalog


def _create(catalog, name: str, location: Path) -> None:
    """The table, with a first small append: what the replica holds before the round."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import BinaryType, LongType, NestedField

    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "payload", BinaryType(), required=False),
    )
    table = catalog.create_table(f"{DATABASE}.{name}", schema=schema, location=location.as_uri())
    table.append(_rows(0, 16, 1024))


def _rows(start: int, count: int, size: int) -> pa.Table:
    """``count`` rows of ``size`` random bytes each: a Parquet file of about count × size."""
    return pa.table(
        {
            "id": pa.array(range(start, start + count), pa.int64()),
            "payload": pa.array([os.urandom(size) for _ in range(count)], pa.binary()),
        }
    )


def _append(catalog, name: str, arguments: argparse.Namespace) -> list[Path]:
    """``--appends`` commits of one file each; the new data files (local paths)."""
    table = catalog.load_table(f"{DATABASE}.{name}")
    before = {task.file.file_path for task in table.scan().plan_files()}
    for index in range(arguments.appends):
        rows = arguments.mib * 16  # 64 KiB each
        table.append(_rows(1000 + index * rows, rows, 64 * 1024))
    table = catalog.load_table(f"{DATABASE}.{name}")
    after = {task.file.file_path for task in table.scan().plan_files()}
    return sorted(Path(path.removeprefix("file:").removeprefix("//")) for path in after - before)


def _config(ports: dict[str, int], tables: list[str]) -> dict:
    return {
        "source-catalog": {
            "name": "onprem",
            "hive-metastore-uris": f"thrift://127.0.0.1:{ports['source']}",
        },
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "table-replications": [
            {
                "source-table": {"database-name": DATABASE, "table-name": name},
                "replica-table": {
                    "database-name": f"{DATABASE}_dr",
                    "table-location": f"s3://{BUCKET}/ferry/{name}",
                },
            }
            for name in tables
        ],
    }


def _ferry(
    config: Path, home: Path, environment: dict, table: str | None, profile: bool = False
) -> dict:
    profiled = home / "incremental.pstats"
    profiler = ["-m", "cProfile", "-o", str(profiled)] if profile else []
    only = ["--table", f"{DATABASE}.{table}"] if table else []
    done = subprocess.run(
        [sys.executable, *profiler, "-m", "ferry.commands.cli", "replicate", str(config),
         "--home", str(home / "ferry-home"), "--json", *only],
        capture_output=True, text=True, env=environment,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ferry replicate failed: {done.stderr.strip()[-2000:]}")
    if profile:
        import pstats

        print("\nThe profiled incremental run's 40 costliest of Ferry's own calls (cumulative)")
        pstats.Stats(str(profiled)).sort_stats("cumulative").print_stats(
            "/ferry/(states|iceberg|lifecycle|planning|copying)", 45
        )
    return json.loads(done.stdout)


def _aws_cp(base: Baselines, files: list[Path], target: str) -> None:
    folder = files[0].parent
    assert all(path.parent == folder for path in files)
    chosen = [option for path in files for option in ("--include", path.name)]
    run_quietly(
        [base.aws, "--endpoint-url", base.endpoint, "--only-show-errors", "s3", "cp",
         "--recursive", str(folder), target, "--exclude", "*", *chosen]
    )  # fmt: skip


def _s5cmd(base: Baselines, home: Path, files: list[Path], target: str) -> None:
    commands = home / "s5cmd-commands.txt"
    commands.write_text("".join(f"cp {path} {target}/{path.name}\n" for path in files))
    run_quietly([base.s5cmd, "--endpoint-url", base.endpoint, "run", str(commands)])


def _check(s3, glue, catalog, name: str, files: list[Path]) -> None:
    """The replica's current snapshot is the source's, and every new file's bytes are at
    the replica; the baselines copied every new file."""
    source = catalog.load_table(f"{DATABASE}.{name}")
    entry = glue.get_table(DatabaseName=f"{DATABASE}_dr", Name=name)["Table"]
    bucket, key = entry["Parameters"]["metadata_location"].removeprefix("s3://").split("/", 1)
    metadata = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert metadata["current-snapshot-id"] == source.metadata.current_snapshot_id, name
    relative = Path(source.location().removeprefix("file:").removeprefix("//"))
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        replica_key = f"ferry/{name}/{path.relative_to(relative)}"
        for key in (replica_key, f"cli/{name}/{path.name}", f"s5/{name}/{path.name}"):
            body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
            assert hashlib.sha256(body).hexdigest() == digest, key


def report(figures: dict) -> None:
    seconds = figures["seconds"]
    ferry, cli, s5cmd = (seconds[tool] for tool in TOOLS)
    print(
        f"\nAn Iceberg table's incremental run: {figures['appends']} new files of "
        f"{figures['mib']} MiB, file → S3, whole commands (a new process each; each tool's "
        f"fastest of {figures['rounds']} rounds)"
    )
    print(
        "| ferry replicate s | aws s3 cp s | s5cmd s | Ferry ÷ aws s3 cp | Ferry ÷ s5cmd | no-op s |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {ferry:.2f} | {cli:.2f} | {s5cmd:.2f} | {ferry / cli:.2f} | {ferry / s5cmd:.2f} "
        f"| {figures['noopSeconds']:.2f} |"
    )


if __name__ == "__main__":
    main()
