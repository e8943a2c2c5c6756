"""Many small objects as whole commands: ``ferry replicate`` against s5cmd and the AWS CLI.

``bench/copy_throughput.py`` measures Ferry's copiers alone; a person runs a command, which
also starts Python, reads the config and both catalogs, plans, verifies and commits. Here
every tool is a new process, timed from its start to its end, on the local runtime's
emulated AWS (started here, with a Hive metastore as the file path's source catalog):

- **file → S3**: a Hive table of ``--files`` files of ``--kib`` KiB on the local disk,
  replicated to a Glue table on S3 (the inline copier), against ``s5cmd cp`` and
  ``aws s3 cp --recursive`` of the table's folder;
- **S3 → S3**: a Glue table of the same files on S3, replicated to another Glue table on S3
  (the S3 server-side copier), against the same tools copying server-side.

Each round copies to fresh targets, every tool once in a rotating order; each tool keeps its
fastest round. Printed: seconds, and the best baseline's seconds over Ferry's (above 1.0,
Ferry is faster). Ferry's run is checked: the replica table exists and holds every file.

    make bench                    # or: .venv/bin/python bench/command_copy.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import boto3
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from copy_throughput import Baselines  # noqa: E402

from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.core.model import Column, Database, StorageDescriptor, Table, TableType  # noqa: E402
from ferry.local import emulator, metastore, processes  # noqa: E402
from ferry.storage import fs  # noqa: E402

DATABASE = "bench"
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
LAZY = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
SOURCE_BUCKET = "bench-source"
REPLICA_BUCKET = "bench-replica"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2010)
    parser.add_argument("--kib", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--profile", action="store_true", help="profile one more Ferry run per path (cProfile)"
    )
    arguments = parser.parse_args()
    run_beside_emulator("ferry-command-copy-", arguments, measure, report)


def run_beside_emulator(
    prefix: str,
    arguments: argparse.Namespace,
    measure: Callable[[Path, dict[str, int], argparse.Namespace], dict],
    report: Callable[[dict], None],
) -> None:
    """Start the AWS emulator and a source metastore on free ports in a fresh home, measure,
    stop both, and print the figures (as JSON with ``--json``)."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    ports = {name: processes.free_port() for name in ("aws", "source")}
    started = []
    try:
        emulator.start_emulator(home, ports["aws"])
        started.append("aws")
        metastore.start_metastore(home, "source", ports["source"])
        started.append("source")
        figures = measure(home, ports, arguments)
    finally:
        for name in started:
            processes.stop_process(home, name)
        shutil.rmtree(home, ignore_errors=True)
    if arguments.json:
        print(json.dumps(figures, indent=2))
    else:
        report(figures)


def emulated_environment(ports: dict[str, int]) -> tuple[str, dict[str, str]]:
    """The emulator's endpoint and the environment a command runs in beside it; this
    process's AWS variables set to reach it too."""
    endpoint = emulator.endpoint_url(ports["aws"])
    environment = {
        **os.environ, **emulator.EMULATOR_ENVIRONMENT,
        "AWS_ENDPOINT_URL": endpoint, "PYTHONPATH": str(ROOT),
    }  # fmt: skip
    os.environ.update({k: v for k, v in environment.items() if k.startswith("AWS_")})
    return endpoint, environment


def measure(home: Path, ports: dict[str, int], arguments: argparse.Namespace) -> dict:
    endpoint, environment = emulated_environment(ports)
    s3 = boto3.client("s3", endpoint_url=endpoint)
    glue = boto3.client("glue", endpoint_url=endpoint)
    for bucket in (SOURCE_BUCKET, REPLICA_BUCKET):
        s3.create_bucket(Bucket=bucket)
    glue.create_database(DatabaseInput={"Name": DATABASE})
    glue.create_database(DatabaseInput={"Name": f"{DATABASE}_dr"})
    base = Baselines(endpoint)
    folder = home / "small"
    print(f"{arguments.files:,} files of {arguments.kib} KiB …", flush=True)
    for index in range(arguments.files):
        (folder / f"part-{index:05d}.txt").parent.mkdir(exist_ok=True)
        (folder / f"part-{index:05d}.txt").write_bytes(os.urandom(arguments.kib * 1024))
    source_uri = f"thrift://127.0.0.1:{ports['source']}"
    with HiveMetastoreCatalog("source", [source_uri]) as source:
        source.create_database(Database(DATABASE))
        source.create_table(_table(fs.local_uri(folder)))
    on_s3 = f"s3://{SOURCE_BUCKET}/small"
    subprocess.run(
        [base.s5cmd, "--endpoint-url", endpoint, "cp", f"{folder}/*", f"{on_s3}/"],
        check=True, capture_output=True,
    )  # fmt: skip
    glue.create_table(DatabaseName=DATABASE, TableInput=_glue_table(on_s3))
    paths = {
        "file → S3": ({"name": "onprem", "hive-metastore-uris": source_uri}, str(folder)),
        "S3 → S3": ({"name": "lake", "glue": {"region": "us-east-1"}}, on_s3),
    }
    figures: dict = {"files": arguments.files, "kib": arguments.kib, "paths": {}}
    for path, (catalog, location) in paths.items():
        print(f"{path}: {arguments.rounds} rounds …", flush=True)
        tools = {
            "ferry replicate": lambda r, c=catalog, p=path: _ferry(home, c, p, r, environment),
            "s5cmd cp": lambda r, loc=location, p=path: base.s5cmd_cp(loc, _target(p, "s5", r)),
            "aws s3 cp": lambda r, loc=location, p=path: base.aws_cp(loc, _target(p, "cli", r)),
        }
        best: dict[str, float] = {}
        names = list(tools)
        for round_ in range(arguments.rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                begun = time.perf_counter()
                tools[name](round_)
                seconds = time.perf_counter() - begun
                best[name] = min(best.get(name, seconds), seconds)
        if arguments.profile:
            _ferry(home, catalog, path, arguments.rounds, environment, profile=True)
        counted = _objects(s3, f"{_slug(path)}/ferry-0/")
        assert counted == arguments.files, (path, counted)
        figures["paths"][path] = {name: round(seconds, 3) for name, seconds in best.items()}
    return figures


def _ferry(
    home: Path, catalog: dict, path: str, round_: int, environment: dict, profile: bool = False
) -> None:
    slug = _slug(path)
    config = home / f"{slug}-{round_}.yml"
    document = {
        "source-catalog": catalog,
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "table-replications": [
            {
                "source-table": {"database-name": DATABASE, "table-name": _source_name(path)},
                "replica-table": {
                    "database-name": f"{DATABASE}_dr",
                    "table-name": f"{slug.replace('-', '_')}_{round_}",
                    "table-location": f"s3://{REPLICA_BUCKET}/{slug}/ferry-{round_}",
                },
            }
        ],
    }
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    profiled = home / f"{slug}.pstats"
    profiler = ["-m", "cProfile", "-o", str(profiled)] if profile else []
    done = subprocess.run(
        [sys.executable, *profiler, "-m", "ferry.commands.cli", "replicate", str(config),
         "--home", str(home / "ferry-home"), "--json"],
        capture_output=True, text=True, env=environment,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ferry replicate ({path}) failed: {done.stderr.strip()[-2000:]}")
    outcome = [table["status"] for table in json.loads(done.stdout)["tables"]]
    assert outcome == ["SUCCEEDED"], (path, outcome)
    if profile:
        import pstats

        print(f"\n{path}: the profiled run's 40 costliest of Ferry's own calls (cumulative)")
        pstats.Stats(str(profiled)).sort_stats("cumulative").print_stats("/ferry/", 40)


def _source_name(path: str) -> str:
    return "small" if path.startswith("file") else "small_s3"


def _slug(path: str) -> str:
    return "file-s3" if path.startswith("file") else "s3-s3"


def _target(path: str, tool: str, round_: int) -> str:
    return f"s3://{REPLICA_BUCKET}/{_slug(path)}/{tool}-{round_}"


def _objects(s3, prefix: str) -> int:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=REPLICA_BUCKET, Prefix=prefix)
    return sum(
        1 for page in pages for item in page.get("Contents", []) if item["Key"].endswith(".txt")
    )


def _table(location: str) -> Table:
    storage = StorageDescriptor(
        location, (Column("v", "string"),),
        input_format=TEXT_INPUT, output_format=TEXT_OUTPUT, serde_library=LAZY,
    )  # fmt: skip
    return Table(DATABASE, "small", TableType.EXTERNAL, storage)


def _glue_table(location: str) -> dict:
    return {
        "Name": "small_s3",
        "TableType": "EXTERNAL_TABLE",
        "StorageDescriptor": {
            "Columns": [{"Name": "v", "Type": "string"}],
            "Location": location,
            "InputFormat": TEXT_INPUT,
            "OutputFormat": TEXT_OUTPUT,
            "SerdeInfo": {"SerializationLibrary": LAZY},
        },
    }


def report(figures: dict) -> None:
    print(
        f"\n{figures['files']:,} files of {figures['kib']} KiB, whole commands "
        "(a new process each; each tool's fastest round)"
    )
    print("| path | ferry replicate s | s5cmd s | aws s3 cp s | best baseline ÷ Ferry |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for path, row in figures["paths"].items():
        ferry = row["ferry replicate"]
        best = min(row["s5cmd cp"], row["aws s3 cp"])
        print(
            f"| {path} | {ferry:.2f} | {row['s5cmd cp']:.2f} | {row['aws s3 cp']:.2f} "
            f"| {best / ferry:.2f} |"
        )


if __name__ == "__main__":
    main()
