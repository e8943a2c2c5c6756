"""The local runtime's state survives ``ferry local down`` / ``ferry local up`` with the same
home: the emulated AWS saves its state as it stops and restores it as it starts
(``ferry.local.emulator_snapshot``), executions that ran go on where they were
(``ferry.local.emulator_resume``), schedules fire again; a change whose window was open
at ``down`` reaches the replica after ``up``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest
import yaml

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.core.model import Column, Database, Partition, StorageDescriptor, Table, TableType
from ferry.local import deploy, emulator, emulator_snapshot, processes
from ferry.local.samples import ORDER_COLUMNS, PARQUET, order_rows, write_parquet
from ferry.storage import fs

pytestmark = pytest.mark.e2e


def ferry(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ferry.commands.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
    )


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f} s: {what}")
        time.sleep(0.5)


class Home:
    """A local runtime of its own, in a temporary home, on free ports."""

    def __init__(self, path: Path):
        self.path = path
        self.ports = {name: processes.free_port() for name in ("source", "replica", "aws")}

    def arguments(self) -> list[str]:
        return [
            "--home", str(self.path),
            "--source-port", str(self.ports["source"]),
            "--replica-port", str(self.ports["replica"]),
            "--aws-port", str(self.ports["aws"]),
        ]  # fmt: skip

    def up(self) -> str:
        result = ferry("local", "up", *self.arguments())
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def down(self) -> str:
        result = ferry("local", "down", "--home", str(self.path))
        assert result.returncode == 0, result.stderr
        return result.stdout

    def client(self, service: str):
        return boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        ).client(service, endpoint_url=emulator.endpoint_url(self.ports["aws"]))

    @property
    def pipeline(self) -> deploy.Pipeline:
        pipeline = deploy.Pipeline.load(self.path)
        assert pipeline is not None
        return pipeline

    @property
    def source_uri(self) -> str:
        return f"thrift://127.0.0.1:{self.ports['source']}"

    @property
    def replica_uri(self) -> str:
        return f"thrift://127.0.0.1:{self.ports['replica']}"


@pytest.fixture
def home(tmp_path):
    runtime = Home(tmp_path / "home")
    try:
        yield runtime
    finally:
        ferry("local", "down", "--home", str(runtime.path))


TRUST_SCHEDULER = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
WAIT_THEN_PASS = {
    "StartAt": "Wait",
    "States": {
        "Wait": {"Type": "Wait", "Seconds": 6, "Next": "Done"},
        "Done": {"Type": "Pass", "Result": {"done": True}, "ResultPath": "$.result", "End": True},
    },
}


def test_the_emulated_aws_keeps_its_state_across_down_and_up(home):
    home.up()
    s3, glue, dynamodb, sqs = (home.client(s) for s in ("s3", "glue", "dynamodb", "sqs"))
    sfn, scheduler, iam = (home.client(s) for s in ("stepfunctions", "scheduler", "iam"))
    pipeline = home.pipeline
    s3.create_bucket(Bucket="kept")
    s3.put_object(Bucket="kept", Key="small.txt", Body=b"hello")
    large = os.urandom(200_000)  # above what the snapshot holds inline: a file of its own
    s3.put_object(Bucket="kept", Key="large.bin", Body=large)
    glue.create_database(DatabaseInput={"Name": "kept_db"})
    glue.create_table(
        DatabaseName="kept_db",
        TableInput={
            "Name": "orders",
            "PartitionKeys": [{"Name": "dt", "Type": "string"}],
            "StorageDescriptor": {"Location": "s3://kept/orders/"},
        },
    )
    glue.create_partition(
        DatabaseName="kept_db",
        TableName="orders",
        PartitionInput={"Values": ["2026-11-21"], "StorageDescriptor": {"Location": "s3://kept/x"}},
    )
    item = {"pk": {"S": "changes#kept"}, "sk": {"S": "table#kept_db.orders"}, "n": {"N": "3"}}
    dynamodb.put_item(TableName=pipeline.state_table, Item=item)
    queue = sqs.create_queue(QueueName="kept")["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody="still here")
    role = iam.create_role(
        RoleName="kept-schedule", AssumeRolePolicyDocument=json.dumps(TRUST_SCHEDULER)
    )["Role"]["Arn"]
    machine = sfn.create_state_machine(
        name="kept-machine", definition=json.dumps(WAIT_THEN_PASS), roleArn=role
    )["stateMachineArn"]
    iam.put_role_policy(
        RoleName="kept-schedule",
        PolicyName="start",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "states:StartExecution", "Resource": machine}
                ],
            }
        ),
    )
    # Running when the emulator stops: it goes on where it was after up.
    running = sfn.start_execution(stateMachineArn=machine, name="running", input='{"a": 1}')
    scheduler.create_schedule(
        Name="kept-schedule",
        ScheduleExpression="rate(1 day)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": machine, "RoleArn": role, "Input": '{"from": "schedule"}'},
    )
    wait_for(lambda: len(executions(sfn, machine)) == 2, "the schedule's first firing")

    assert home.down().strip() == "stopped: aws, replica, source"
    saved = home.path / "aws" / emulator_snapshot.FILE
    assert saved.is_file()
    bodies = (home.path / "aws" / emulator_snapshot.OBJECTS).iterdir()
    assert large in [body.read_bytes() for body in bodies]

    up_again = home.up()
    assert "the emulated AWS's state saved at" in up_again and "was restored" in up_again
    assert s3.get_object(Bucket="kept", Key="small.txt")["Body"].read() == b"hello"
    assert s3.get_object(Bucket="kept", Key="large.bin")["Body"].read() == large
    table = glue.get_table(DatabaseName="kept_db", Name="orders")["Table"]
    assert table["StorageDescriptor"]["Location"] == "s3://kept/orders/"
    partitions = glue.get_partitions(DatabaseName="kept_db", TableName="orders")["Partitions"]
    assert [p["Values"] for p in partitions] == [["2026-11-21"]]
    assert (
        dynamodb.get_item(TableName=pipeline.state_table, Key={k: item[k] for k in ("pk", "sk")})[
            "Item"
        ]
        == item
    )
    [message] = sqs.receive_message(QueueUrl=queue)["Messages"]
    assert message["Body"] == "still here"
    # The pipeline is the one deployed before (not deployed again): same state machine.
    assert home.pipeline.state_machine_arn == pipeline.state_machine_arn
    assert sfn.describe_state_machine(stateMachineArn=pipeline.state_machine_arn)["name"]

    # The execution that was running ends as it would have, under its own ARN.
    def ended() -> bool:
        return sfn.describe_execution(executionArn=running["executionArn"])["status"] != "RUNNING"

    wait_for(ended, "the resumed execution to end", 120)
    described = sfn.describe_execution(executionArn=running["executionArn"])
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"a": 1, "result": {"done": True}}
    history = sfn.get_execution_history(executionArn=running["executionArn"])["events"]
    assert [e["type"] for e in history][0] == "ExecutionStarted"
    assert [e["type"] for e in history][-1] == "ExecutionSucceeded"
    # The schedule fires again once the emulator is up.
    wait_for(lambda: len(executions(sfn, machine)) == 3, "the schedule to fire after up")

    purged = ferry("local", "down", "--purge", "--home", str(home.path))
    assert purged.returncode == 0, purged.stderr
    assert purged.stdout.splitlines() == [
        "stopped: aws, replica, source",
        f"removed the saved state in {home.path}: the next up starts empty",
    ]
    assert not any((home.path / name).exists() for name in ("aws", "source", "replica"))
    assert deploy.Pipeline.load(home.path) is None


def test_purge_goes_with_down_only(tmp_path):
    result = ferry("local", "up", "--purge", "--home", str(tmp_path / "home"))
    assert result.returncode == 2
    assert result.stderr.strip() == "ferry: error: --purge goes with `ferry local down` only"
    assert not (tmp_path / "home").exists()


def executions(sfn, machine: str) -> list[dict]:
    return sfn.list_executions(stateMachineArn=machine)["executions"]


def test_a_snapshot_of_another_moto_is_refused_in_one_line_and_the_emulator_starts_empty(
    tmp_path,
):
    state = tmp_path / "aws"
    state.mkdir()
    snapshot = state / emulator_snapshot.FILE
    written = {**emulator_snapshot.stamp(), "moto": "0.0.1"}
    snapshot.write_bytes(json.dumps(written).encode() + b"\n" + b"not a pickle")
    port = processes.free_port()
    try:
        emulator.start_emulator(tmp_path, port)
        restored = emulator.restored(tmp_path)
        assert restored is not None and not restored.restored
        assert restored.message == (
            f"the emulated AWS's saved state {snapshot} is not restored: it was written by "
            f"moto 0.0.1 on Python {written['python']} (format {written['format']}), this is "
            f"moto {emulator_snapshot.stamp()['moto']} on Python {written['python']} "
            f"(format {written['format']}); it starts empty (the snapshot is kept as "
            f"{snapshot}.refused)"
        )
        s3 = boto3.client(
            "s3",
            endpoint_url=emulator.endpoint_url(port),
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        assert s3.list_buckets()["Buckets"] == []
        assert (state / f"{emulator_snapshot.FILE}.refused").exists()
    finally:
        processes.stop_process(tmp_path, "aws")
    assert snapshot.exists()  # its own state, saved as it stopped


def test_a_change_whose_window_is_open_at_down_reaches_the_replica_after_up(home, tmp_path):
    home.up()
    database = "sales_window"
    warehouse = fs.local_uri(tmp_path / "warehouse")
    with HiveMetastoreCatalog("onprem", [home.source_uri]) as source:
        source.create_database(Database(database, "", fs.join(warehouse, f"{database}.db")))
        location = fs.join(warehouse, f"{database}.db", "orders")
        storage = StorageDescriptor(location=location, columns=ORDER_COLUMNS, **PARQUET)
        source.create_table(
            Table(
                database=database,
                name="orders",
                table_type=TableType.EXTERNAL,
                storage=storage,
                partition_keys=(Column("dt", "string"),),
                parameters={"EXTERNAL": "TRUE"},
            )
        )
    config = tmp_path / "replication.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "source-catalog": {"name": "onprem", "hive-metastore-uris": home.source_uri},
                "replica-catalog": {"name": "dr", "hive-metastore-uris": home.replica_uri},
                "triggers": {"catalog-events": {"window": "PT30S", "poll-interval": "PT1S"}},
                "table-replications": [
                    {
                        "source-table": {"database-name": database, "table-name": "orders"},
                        "replication-mode": "METADATA_MIRROR",
                        "replica-table": {"database-name": f"{database}_dr"},
                    }
                ],
            }
        )
    )
    installed = ferry("local", "trigger", str(config), "--home", str(home.path))
    assert installed.returncode == 0, installed.stderr
    sfn = home.client("stepfunctions")
    windows = home.pipeline.outputs["CatalogChangesStateMachineArn"]
    time.sleep(5)  # the poller's first poll records where the log stands

    with HiveMetastoreCatalog("onprem", [home.source_uri]) as source:
        table = source.get_table(database, "orders")
        day = "2026-11-21"
        write_parquet(fs.join(location, f"dt={day}"), "part-00000.parquet", order_rows(day))
        partition_storage = StorageDescriptor(
            location=fs.join(location, f"dt={day}"), columns=ORDER_COLUMNS, **PARQUET
        )
        source.add_partitions(table, [Partition((day,), partition_storage)])
    wait_for(lambda: executions(sfn, windows) != [], "the change to open a window", 120)
    [window] = executions(sfn, windows)
    assert window["status"] == "RUNNING"  # waiting for its 30 s

    home.down()
    home.up()

    def replicated() -> bool:
        with HiveMetastoreCatalog("dr", [home.replica_uri]) as replica:
            table = replica.get_table(f"{database}_dr", "orders")
            return table is not None and [p.values for p in replica.list_partitions(table)] == [
                (day,)
            ]

    wait_for(replicated, "the change to reach the replica", 300)

    def status() -> str:
        return sfn.describe_execution(executionArn=window["executionArn"])["status"]

    wait_for(lambda: status() != "RUNNING", "the window's execution to close it", 120)
    assert status() == "SUCCEEDED"  # the same execution, resumed in its wait


def test_a_killed_emulator_restores_what_it_saved_while_it_served(tmp_path):
    def s3(port: int):
        return boto3.client(
            "s3",
            endpoint_url=emulator.endpoint_url(port),
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    port = processes.free_port()
    emulator.start_emulator(tmp_path, port)
    try:
        s3(port).create_bucket(Bucket="saved-while-serving")
        s3(port).put_object(Bucket="saved-while-serving", Key="k", Body=b"v")
        snapshot = tmp_path / "aws" / emulator_snapshot.FILE
        wait_for(
            snapshot.exists, "a save while it serves", emulator_snapshot.SAVE_INTERVAL_SECONDS * 3
        )
        running = processes.read_process(tmp_path, "aws")
        assert running is not None
        os.kill(running.pid, 9)  # no graceful stop: no last save
        wait_for(lambda: not running.is_running(), "the emulator to die", 30)
        processes.stop_process(tmp_path, "aws")
        port = processes.free_port()
        emulator.start_emulator(tmp_path, port)
        assert s3(port).get_object(Bucket="saved-while-serving", Key="k")["Body"].read() == b"v"
    finally:
        processes.stop_process(tmp_path, "aws")
