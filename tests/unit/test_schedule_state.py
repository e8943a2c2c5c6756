"""A disabled schedule does not fire in the emulator (``ferry.local.emulator_scheduler``), on
moto's own backends: turned off with ``UpdateSchedule`` as the failover switch does it, it
starts nothing however many periods pass; turned on again it fires at its next period, not
at once for the periods it missed; an ``UpdateSchedule`` that names no state enables it, as
Scheduler's default does."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from moto import mock_aws

from ferry.local.emulator_scheduler import Scheduler

REGION = "us-east-1"
HOUR = 3600


@pytest.fixture
def aws(monkeypatch):
    # moto's in-process backends, which the scheduler reads: not the session's emulator.
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        yield {name: session.client(name) for name in ("scheduler", "stepfunctions")}


@pytest.fixture
def schedule(aws):
    """An hourly schedule of the group ``ferry-test`` that starts a state machine."""
    machine = aws["stepfunctions"].create_state_machine(
        name="ferry-test-replication",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn="arn:aws:iam::123456789012:role/machine",
    )["stateMachineArn"]
    aws["scheduler"].create_schedule_group(Name="ferry-test")
    aws["scheduler"].create_schedule(
        Name="ferry-test-sales",
        GroupName="ferry-test",
        ScheduleExpression="rate(1 hour)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": machine, "RoleArn": "arn:aws:iam::123456789012:role/schedules",
                "Input": json.dumps({"configUri": "s3://work/configs/sales.yml"})},
    )  # fmt: skip

    def runs() -> int:
        listed = aws["stepfunctions"].list_executions(stateMachineArn=machine)
        return len(listed["executions"])

    return runs


def set_state(aws, state: str | None) -> None:
    """The schedule sent back whole, as ``UpdateSchedule`` needs, with ``state``."""
    found = aws["scheduler"].get_schedule(Name="ferry-test-sales", GroupName="ferry-test")
    fields = ("ScheduleExpression", "FlexibleTimeWindow", "Target")
    aws["scheduler"].update_schedule(
        Name="ferry-test-sales", GroupName="ferry-test", **{k: found[k] for k in fields},
        **({"State": state} if state else {}),
    )  # fmt: skip


def test_a_disabled_schedule_does_not_fire_nor_makes_up_for_it_once_enabled(aws, schedule):
    scheduler = Scheduler(None)
    start = time.time()
    scheduler.tick(start)
    assert schedule() == 1  # a new rate schedule fires at once

    set_state(aws, "DISABLED")
    for hours in (1, 2, 3):
        scheduler.tick(start + hours * HOUR + 1)
    assert schedule() == 1

    set_state(aws, "ENABLED")
    scheduler.tick(start + 3 * HOUR + 2)
    assert schedule() == 1  # the missed periods are not fired now
    scheduler.tick(start + 4 * HOUR + 1)
    assert schedule() == 2  # its next period is


def test_an_update_that_names_no_state_leaves_the_schedule_enabled(aws, schedule):
    scheduler = Scheduler(None)
    start = time.time()
    scheduler.tick(start)
    set_state(aws, None)
    scheduler.tick(start + HOUR + 1)
    assert schedule() == 2
