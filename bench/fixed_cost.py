"""A run's fixed cost: ``ferry replicate`` of a table with nothing changed, against reading
both catalogs for that table, and where the time goes.

On the local runtime as the tests start it (two real Hive metastores and the AWS emulator,
on free ports), the source metastore gets the sample tables: ``orders`` (partitioned, Hive)
and ``events`` (Iceberg, written with pyiceberg). One ``ferry replicate`` copies both to the
replica metastore; then, each ``--runs`` times, as a person runs it (a new process):

- **Ferry**: ``ferry replicate CONFIG --table sales.<table> --home … --json``, which finds
  nothing to do (checked: the table is ``UNCHANGED``);
- **the floor**: a fresh process that reads both catalogs for that table, the calls a
  no-op needs at least: the table and its partitions on each side (``ferry.catalog.hive``);
- ``python -c pass``: the interpreter alone.

Printed as the median of the runs and Ferry's ratio to the floor; then where a no-op run's
time goes: the imports it makes (``python -X importtime`` of the same command, self time
summed by top-level package), its steps profiled (``cProfile``: the config read, the AWS
clients, the state store's checks, the catalogs, the metastore connections opened and
their probes, each state, the documents written) and the
files the run leaves under ``--home``.

    make bench                    # or: .venv/bin/python bench/fixed_cost.py --runs 5 [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from import_times import child_environment, heaviest_imports, median_seconds, shown  # noqa: E402

from ferry.catalog.hive import HiveMetastoreCatalog  # noqa: E402
from ferry.core.model import Database  # noqa: E402
from ferry.local import emulator, metastore, processes  # noqa: E402
from ferry.local.samples import create_iceberg_sample, create_sample_tables, last_days  # noqa: E402
from ferry.storage import fs  # noqa: E402

SALES = "sales"
TODAY = date(2026, 11, 21)
TABLES = {"orders": "Hive, 3 partitions", "events": "Iceberg, 5 snapshots"}

# The least a no-op run must do: the table and its partitions, from each catalog.
FLOOR_CHILD = """
import sys
from ferry.catalog.hive import HiveMetastoreCatalog
source_uri, replica_uri, database, table = sys.argv[1:5]
for name, uri, db in (("source", source_uri, database), ("replica", replica_uri, database + "_dr")):
    with HiveMetastoreCatalog(name, [uri]) as catalog:
        found = catalog.get_table(db, table)
        assert found is not None, (name, db, table)
        if found.partition_keys:
            catalog.list_partitions(found)
"""

# The no-op run in this process, profiled: cumulative seconds of the steps named below.
PROFILE_CHILD = """
import cProfile, json, pstats, sys
profile = cProfile.Profile()
profile.enable()
from ferry.commands.cli import main
code = main(sys.argv[1:])
profile.disable()
steps = json.loads(sys.stdin.read())
stats = pstats.Stats(profile).stats
found = {}
for (path, _, function), (_, calls, _, cumulative, _) in stats.items():
    for name, (suffix, wanted) in steps.items():
        if path.endswith(suffix) and function == wanted:
            seconds, count = found.get(name, (0.0, 0))
            found[name] = (max(seconds, cumulative), count + calls)
total = max(cumulative for (_, _, _, cumulative, _) in stats.values())
print(json.dumps({"code": code, "total": total, "steps": found}))
"""
# (file, function) of each step the profile reports, in the order a run takes them.
STEPS = {
    "the whole command (ferry.commands.cli.main)": ("ferry/commands/cli.py", "main"),
    "imports made while it runs": ("<frozen importlib._bootstrap>", "_find_and_load"),
    "config read and checked": ("ferry/commands/__init__.py", "load_selected"),
    "AWS clients set up": ("ferry/storage/aws.py", "__init__"),
    "regions checked": ("ferry/commands/__init__.py", "check_regions"),
    "state store opened and checked": ("ferry/commands/replicate.py", "open_state"),
    "work location checked": ("ferry/commands/__init__.py", "check_work_location"),
    "catalogs opened": ("ferry/catalog/factory.py", "open_catalog"),
    "metastore connections opened": ("hmsclient/hmsclient.py", "open"),
    "metastore probes (getMetaConf)": ("hive_metastore/ThriftHiveMetastore.py", "getMetaConf"),
    "metastore calls (Thrift)": ("ferry/catalog/hive.py", "call"),
    "state Resolve tables": ("ferry/states/resolve_tables.py", "run"),
    "state Plan": ("ferry/states/plan.py", "run"),
    "state Notify success": ("ferry/states/notify_success.py", "run"),
    "state Summarize": ("ferry/states/summarize.py", "run"),
    "documents written (fs.write_bytes)": ("ferry/storage/fs.py", "write_bytes"),
    "documents read (fs.read_bytes)": ("ferry/storage/fs.py", "read_bytes"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="no-op runs measured per table")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    arguments = parser.parse_args()
    state_dir = Path(tempfile.mkdtemp(prefix="ferry-fixed-cost-"))
    ports = {name: processes.free_port() for name in ("source", "replica", "aws")}
    started = []
    try:
        emulator.start_emulator(state_dir, ports["aws"])
        started.append("aws")
        for name in ("source", "replica"):
            metastore.start_metastore(state_dir, name, ports[name])
            started.append(name)
        figures = measure(state_dir, ports, arguments.runs, arguments.json)
    finally:
        for name in started:
            processes.stop_process(state_dir, name)
        shutil.rmtree(state_dir, ignore_errors=True)
    if arguments.json:
        print(json.dumps(figures, indent=2))
    else:
        report(figures)


def measure(state_dir: Path, ports: dict[str, int], runs: int, quiet: bool) -> dict:
    uris = {name: f"thrift://127.0.0.1:{ports[name]}" for name in ("source", "replica")}
    environment = child_environment(
        {**emulator.EMULATOR_ENVIRONMENT, "AWS_ENDPOINT_URL": emulator.endpoint_url(ports["aws"])}
    )
    warehouse = fs.local_uri(state_dir / "source-data")
    with HiveMetastoreCatalog("source", [uris["source"]]) as source:
        create_sample_tables(source, SALES, warehouse, last_days(TODAY, 3))
    create_iceberg_sample(uris["source"], SALES, fs.join(warehouse, f"{SALES}.db", "events"))
    with HiveMetastoreCatalog("replica", [uris["replica"]]) as replica:
        replica.create_database(Database(f"{SALES}_dr", None, None))
    config = state_dir / "replication.yml"
    config.write_text(yaml.safe_dump(_config(uris, state_dir), sort_keys=False))
    home = state_dir / "home"
    first = _replicate(config, home, environment, ())
    assert [t["status"] for t in first["tables"]] == ["SUCCEEDED"] * len(TABLES), first
    interpreter, _ = median_seconds("pass", runs, environment)
    figures = {"runs": runs, "interpreterSeconds": round(interpreter, 3), "tables": {}}
    for table, kind in TABLES.items():
        if not quiet:
            print(f"{table} ({kind}): {runs} no-op runs and {runs} floors …", flush=True)
        ferry_seconds, floor_seconds = [], []
        for _ in range(runs):  # alternated, so that whatever drifts falls on both alike
            clock = time.perf_counter()
            done = _replicate(config, home, environment, ("--table", f"{SALES}.{table}"))
            ferry_seconds.append(time.perf_counter() - clock)
            assert [t["status"] for t in done["tables"]] == ["UNCHANGED"], done
            floor = FLOOR_CHILD.strip()
            clock = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", floor, uris["source"], uris["replica"], SALES, table],
                check=True, env=environment,
            )  # fmt: skip
            floor_seconds.append(time.perf_counter() - clock)
        ferry_median, floor_median = (statistics.median(s) for s in (ferry_seconds, floor_seconds))
        arguments = _arguments(config, home, ("--table", f"{SALES}.{table}"))
        figures["tables"][table] = {
            "kind": kind,
            "ferrySeconds": round(ferry_median, 3),
            "floorSeconds": round(floor_median, 3),
            "ratio": round(ferry_median / floor_median, 2),
            "overFloorSeconds": round(ferry_median - floor_median, 3),
            "states": done["tables"][0]["states"],
            "imports": _imports(arguments, environment),
            "floorImports": heaviest_imports("import ferry.catalog.hive", environment, top=4),
            "profile": _profile(arguments, environment),
            "written": _written(config, home, environment, table),
        }
    return figures


def _config(uris: dict[str, str], state_dir: Path) -> dict:
    return {
        "source-catalog": {"name": "onprem", "hive-metastore-uris": uris["source"]},
        "replica-catalog": {"name": "dr", "hive-metastore-uris": uris["replica"]},
        "table-replications": [
            {
                "source-table": {"database-name": SALES, "table-name": table},
                "replica-table": {
                    "database-name": f"{SALES}_dr",
                    "table-name": table,
                    "table-location": fs.local_uri(state_dir / "replica-data" / table),
                },
            }
            for table in TABLES
        ],
    }


def _arguments(config: Path, home: Path, extra: tuple[str, ...]) -> list[str]:
    return ["replicate", str(config), "--home", str(home), "--json", *extra]


def _replicate(config: Path, home: Path, environment: dict, extra: tuple[str, ...]) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *_arguments(config, home, extra)],
        capture_output=True, text=True, env=environment,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ferry replicate failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def _imports(arguments: list[str], environment: dict) -> dict:
    """What the no-op run imports: every module's self time, summed, and the heaviest."""
    code = f"import sys; from ferry.commands.cli import main; sys.exit(main({arguments!r}))"
    packages = heaviest_imports(code, environment, top=1000)
    return {
        "totalSeconds": round(sum(seconds for _, seconds in packages), 3),
        "heaviest": [(name, round(seconds, 3)) for name, seconds in packages[:8]],
    }


def _profile(arguments: list[str], environment: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROFILE_CHILD, *arguments], input=json.dumps(STEPS),
        capture_output=True, text=True, env=environment, check=True,
    )  # fmt: skip
    profiled = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "totalSeconds": round(profiled["total"], 3),
        "steps": {
            name: {"seconds": round(profiled["steps"][name][0], 3),
                   "calls": profiled["steps"][name][1]}
            for name in STEPS if name in profiled["steps"]
        },
    }  # fmt: skip


def _written(config: Path, home: Path, environment: dict, table: str) -> list[str]:
    """The files one more no-op run creates or changes under ``--home``."""
    before = _files(home)
    _replicate(config, home, environment, ("--table", f"{SALES}.{table}"))
    after = _files(home)
    return sorted(
        str(Path(path).relative_to(home))
        for path, seen in after.items()
        if before.get(path) != seen
    )


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path): (path.stat().st_mtime_ns, path.stat().st_size)
        for path in folder.rglob("*")
        if path.is_file()
    }


def report(figures: dict) -> None:
    print(
        f"\nA no-op `ferry replicate` of one table against reading both catalogs for it, "
        f"fresh processes, median of {figures['runs']} (the interpreter alone: "
        f"{figures['interpreterSeconds']:.2f} s)"
    )
    print("| table | Ferry s | floor s | ratio | over the floor s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for table, row in figures["tables"].items():
        print(
            f"| {table} ({row['kind']}) | {row['ferrySeconds']:.2f} | {row['floorSeconds']:.2f} "
            f"| {row['ratio']:.2f} | {row['overFloorSeconds']:.2f} |"
        )
    for table, row in figures["tables"].items():
        imports = row["imports"]
        print(f"\n{table}: states {' → '.join(row['states'])}")
        print(
            f"  imports: {imports['totalSeconds']:.2f} s in all (self time), heaviest "
            f"{shown(imports['heaviest'])}; the floor's: {shown(row['floorImports'])}"
        )
        profile = row["profile"]
        print(
            f"  profiled run (cProfile slows Python code; shares): {profile['totalSeconds']:.2f} s"
        )
        for name, step in profile["steps"].items():
            share = step["seconds"] / profile["totalSeconds"]
            print(f"    {name:<40} {step['seconds']:6.3f} s {share:6.1%} ({step['calls']} calls)")
        print(f"  files written by a no-op run under --home: {len(row['written'])}")
        for path in row["written"]:
            print(f"    {path}")


if __name__ == "__main__":
    main()
