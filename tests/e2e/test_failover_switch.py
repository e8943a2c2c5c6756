"""The deployed failover switch, end to end on the local runtime: ``switch_for("local")``
invokes the FailoverSwitch function the stack deployed into the emulator, which runs under
its own role (IAM enforced).

The local environment's own config (``ferry/local/replications/landing-dr.yml``) has an S3
trigger (a rule of the default bus) and a schedule: suspended, both are disabled, a
``_SUCCESS`` under the trigger's prefix starts no run, a running execution of the config is
stopped and the lock and copy slot it held are released; suspended again, nothing
changes; resumed, both are enabled and the next ``_SUCCESS`` starts a run. The function's
role may not touch another environment's rule (the emulator's IAM denies it), and a rule that
does not exist is one line naming it; either way nothing was changed.
"""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import timedelta

import boto3
import pytest

from ferry.catalog.glue import GlueCatalog
from ferry.commands.deployed_switch import switch_for
from ferry.config import load_config
from ferry.copying.budget.dynamodb import DynamoDbSlots
from ferry.core.errors import FailoverError
from ferry.failover.trigger_names import config_triggers
from ferry.local import deploy
from ferry.local.samples import create_sample_tables, last_days
from ferry.replicas.ledger import DynamoDbStateStore
from ferry.statemachine.executions import start
from tests.conftest import NOW
from tests.e2e.test_catalog_events import wait_for

pytestmark = pytest.mark.e2e

LANDING = deploy.ROOT / "ferry" / "local" / "replications" / "landing-dr.yml"
BUCKET = "ferry-demo-landing"
WEST, WEST_BUCKET = "us-west-2", "ferry-demo-dr-west"
RULE = "ferry-local-landing-dr-s3-0"
SCHEDULE = "ferry-local-landing-dr"
GROUP = "ferry-local"
TABLE = "landing.orders"
REPLICA = "glue:us-west-2/landing_dr.orders"


@pytest.fixture
def landing(pipeline, aws):
    """The deployed landing config, its source table in Glue, its bucket's events on and its
    replica bucket in us-west-2 (a run of it succeeds); all of it removed afterwards, as a
    fresh runtime has none of it (``ferry demo`` creates it)."""
    config = load_config(LANDING, {"FERRY_EVENTS_TOPIC_ARN": pipeline.topic_arn})
    west = boto3.client("s3", region_name=WEST)
    existing = {b["Name"] for b in aws["s3"].list_buckets()["Buckets"]}
    if BUCKET not in existing:
        aws["s3"].create_bucket(Bucket=BUCKET)
    if WEST_BUCKET not in existing:
        west.create_bucket(
            Bucket=WEST_BUCKET, CreateBucketConfiguration={"LocationConstraint": WEST}
        )
    notifications = aws["s3"].get_bucket_notification_configuration(Bucket=BUCKET)
    notifications.pop("ResponseMetadata", None)
    glue = GlueCatalog("landing", aws["glue"])
    created = glue.get_table("landing", "orders") is None
    if created:
        create_sample_tables(glue, "landing", f"s3://{BUCKET}/warehouse", last_days(NOW.date(), 2))
    aws["s3"].put_bucket_notification_configuration(
        Bucket=BUCKET, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    yield config
    aws["s3"].put_bucket_notification_configuration(
        Bucket=BUCKET, NotificationConfiguration=notifications
    )
    if created:
        for glue_client, database in (
            (aws["glue"], "landing"),
            (boto3.client("glue", region_name=WEST), "landing_dr"),
        ):
            try:
                glue_client.delete_database(Name=database)
            except glue_client.exceptions.EntityNotFoundException:
                pass
    for s3, bucket in ((aws["s3"], BUCKET), (west, WEST_BUCKET)):
        if bucket in existing:
            continue
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for found in page.get("Contents", []):
                s3.delete_object(Bucket=bucket, Key=found["Key"])
        s3.delete_bucket(Bucket=bucket)


def rule_state(name: str = RULE) -> str:
    return boto3.client("events", region_name=deploy.REGION).describe_rule(Name=name)["State"]


def schedule_state() -> str:
    scheduler = boto3.client("scheduler", region_name=deploy.REGION)
    return scheduler.get_schedule(Name=SCHEDULE, GroupName=GROUP)["State"]


def runs_of(sfn, pipeline, config_uri: str) -> list[dict]:
    """The replication state machine's executions of the landing config, newest first."""
    found = []
    pages = sfn.get_paginator("list_executions").paginate(
        stateMachineArn=pipeline.state_machine_arn
    )
    for page in pages:
        for execution in page["executions"]:
            described = sfn.describe_execution(executionArn=execution["executionArn"])
            if json.loads(described["input"]).get("configUri") == config_uri:
                found.append(described)
    return found


def marker(aws, name: str) -> None:
    """A ``_SUCCESS`` marker under the trigger's prefix."""
    aws["s3"].put_object(Bucket=BUCKET, Key=f"warehouse/landing.db/{name}/_SUCCESS", Body=b"")


def denials(local_runtime) -> list[dict]:
    with urllib.request.urlopen(f"{local_runtime.endpoint}/ferry-api/denials") as answer:
        return json.loads(answer.read())


def test_suspend_turns_off_the_configs_triggers_stops_its_run_and_releases_its_claims(
    pipeline, local_runtime, landing, aws, sfn, arm
):
    switch = switch_for("local", home=local_runtime.state_dir)
    config_uri = pipeline.outputs["ConfigUriLandingDr"]
    assert config_triggers("local", "landing-dr", landing).rules == (RULE,)
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")
    locks = DynamoDbStateStore(boto3.client("dynamodb"), pipeline.state_table)

    slots = DynamoDbSlots(boto3.client("dynamodb"), pipeline.state_table)

    # A run of the config that holds its replica's lock and a copy slot, and goes on (it
    # hangs in its copy).
    arm({"point": "copy.batch", "action": "hang", "seconds": 60, "times": 100})
    running = start(
        sfn, pipeline.state_machine_arn, deploy.execution_name("landing"),
        {"configUri": config_uri},
    )  # fmt: skip
    wait_for(lambda: locks.lease(REPLICA) is not None, "the run's lock on its replica", 60)
    holder = locks.lease(REPLICA).holder
    wait_for(lambda: holder in {h.event_id for h in slots.holders()}, "the run's copy slot", 60)

    report = switch.suspend(landing, [TABLE], cancel_runs=True, wait=timedelta(0))

    assert report.triggers == (f"rule {RULE}", f"schedule {GROUP}/{SCHEDULE}")
    assert (rule_state(), schedule_state()) == ("DISABLED", "DISABLED")
    assert running in report.stopped_runs
    assert sfn.describe_execution(executionArn=running)["status"] == "ABORTED"
    assert locks.lease(REPLICA) is None
    assert holder not in {h.event_id for h in slots.holders()}
    assert report.released_claims == 2  # the lock and the copy slot
    # The disabled rule starts nothing.
    before = len(runs_of(sfn, pipeline, config_uri))
    marker(aws, "suspended")
    time.sleep(3)
    assert len(runs_of(sfn, pipeline, config_uri)) == before

    # Again: nothing left to stop or release, the triggers stay off.
    again = switch.suspend(landing, [TABLE], cancel_runs=True, wait=timedelta(0))
    assert again.triggers == report.triggers
    assert (again.stopped_runs, again.released_claims) == ((), 0)
    assert (rule_state(), schedule_state()) == ("DISABLED", "DISABLED")

    resumed = switch.resume(landing, [TABLE])

    assert resumed.triggers == report.triggers
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")
    # The rule starts a run again.
    marker(aws, "resumed")
    wait_for(
        lambda: len(runs_of(sfn, pipeline, config_uri)) > before, "a run started by the rule", 30
    )
    # Leave nothing running: that run is stopped the same way, the triggers left on.
    switch.suspend(landing, [TABLE], cancel_runs=True, wait=timedelta(0))
    switch.resume(landing, [TABLE])
    assert [r["status"] for r in runs_of(sfn, pipeline, config_uri)].count("RUNNING") == 0


def test_without_cancel_a_run_is_waited_for_and_one_still_running_keeps_its_lock(
    pipeline, local_runtime, landing, sfn, arm
):
    switch = switch_for("local", home=local_runtime.state_dir)
    config_uri = pipeline.outputs["ConfigUriLandingDr"]
    locks = DynamoDbStateStore(boto3.client("dynamodb"), pipeline.state_table)

    def run(hang_seconds: int) -> str:
        arm({"point": "plan.planned", "action": "hang", "seconds": hang_seconds, "times": 1})
        arn = start(
            sfn, pipeline.state_machine_arn, deploy.execution_name("landing"),
            {"configUri": config_uri},
        )  # fmt: skip
        wait_for(lambda: locks.lease(REPLICA) is not None, "the run's lock", 60)
        return arn

    try:
        # A run that ends within the wait: waited for; it released its own lock.
        short = run(3)
        report = switch.suspend(landing, [TABLE], cancel_runs=False, wait=timedelta(seconds=120))
        assert report.awaited_runs == (short,)
        assert report.stopped_runs == ()
        assert sfn.describe_execution(executionArn=short)["status"] == "SUCCEEDED"
        assert locks.lease(REPLICA) is None
        assert (rule_state(), schedule_state()) == ("DISABLED", "DISABLED")

        # A run that outlasts the wait: left running, and its lock kept (it is still
        # writing); the report says so.
        long = run(60)
        report = switch.suspend(landing, [TABLE], cancel_runs=False, wait=timedelta(seconds=2))
        assert report.awaited_runs == ()
        assert any(long in note and "still runs" in note for note in report.notes)
        assert sfn.describe_execution(executionArn=long)["status"] == "RUNNING"
        assert locks.lease(REPLICA) is not None
        assert report.released_claims == 0
        # Cancelled, it is stopped and its lock released.
        cancelled = switch.suspend(landing, [TABLE], cancel_runs=True, wait=timedelta(0))
        assert cancelled.stopped_runs == (long,)
        assert locks.lease(REPLICA) is None
    finally:
        switch.resume(landing, [TABLE])


def test_some_tables_fail_over_with_the_triggers_left_on(pipeline, local_runtime, landing):
    """What the switch is sent when only some of a config's tables fail over (no rules, no
    schedules): the triggers stay on, and the report says why."""
    switch = switch_for("local", home=local_runtime.state_dir)
    request = switch.request("suspend", landing, [TABLE]).model_copy(
        update={"rules": [], "schedules": [], "replicas": [], "every_table": False}
    )

    report = switch.invoke(request)

    assert report.triggers == ()
    assert "stay on" in report.notes[0]
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")


def test_the_switch_may_not_turn_off_another_environments_rule(
    pipeline, local_runtime, landing, unique
):
    events = boto3.client("events", region_name=deploy.REGION)
    other = f"ferry-other{unique}-landing-dr-s3-0"
    events.put_rule(Name=other, EventPattern=json.dumps({"source": ["aws.s3"]}), State="ENABLED")
    switch = switch_for("local", home=local_runtime.state_dir)
    request = switch.request("suspend", landing, [TABLE]).model_copy(update={"rules": [other]})

    with pytest.raises(FailoverError) as refused:
        switch.invoke(request)

    message = str(refused.value)
    assert message.startswith(f"rule {other}: not this environment's to change")
    assert "\n" not in message
    [denial] = [d for d in denials(local_runtime) if d["resource"].endswith(f"rule/{other}")]
    assert denial["action"] == "events:DescribeRule"
    assert "failover-switch" in denial["caller"]
    # Nothing was changed: neither that rule nor the config's own schedule.
    assert rule_state(other) == "ENABLED"
    assert schedule_state() == "ENABLED"
    events.delete_rule(Name=other)


def test_a_rule_that_does_not_exist_is_one_line_naming_it(pipeline, local_runtime, landing):
    switch = switch_for("local", home=local_runtime.state_dir)
    missing = "ferry-local-landing-dr-s3-7"
    request = switch.request("suspend", landing, [TABLE]).model_copy(
        update={"rules": [RULE, missing]}
    )

    with pytest.raises(FailoverError, match=f"^rule {missing}: does not exist"):
        switch.invoke(request)

    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")


def test_a_config_the_environment_does_not_deploy_is_one_line(
    pipeline, local_runtime, sample, write_config
):
    from tests.e2e.test_pipeline import table_entry
    from tests.helpers import config_document

    entry = table_entry(sample, "orders", "file:///tmp/nowhere/orders")
    config = load_config(write_config(config_document(local_runtime, [entry])))
    switch = switch_for("local", home=local_runtime.state_dir)

    with pytest.raises(FailoverError) as refused:
        switch.suspend(config, [f"{sample.database}.orders"], cancel_runs=True, wait=timedelta(0))

    assert str(refused.value).startswith("environment local deploys no config of these tables")
    assert "ferry/local/replications/landing-dr.yml" in str(refused.value)
    assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")


def test_ferry_failover_and_failback_of_a_deployed_config_switch_its_triggers_through_the_stack(
    pipeline, local_runtime, landing, aws, sfn, tmp_path, monkeypatch, capsys
):
    """The commands as an operator types them: ``--environment local`` promotes the replica
    the deployed pipeline wrote and turns the config's rule and schedule off through the
    deployed switch; failback (nothing changed in DR) turns them on and un-promotes it."""
    from ferry.commands.cli import main
    from ferry.failover import PROMOTED

    monkeypatch.setenv("FERRY_EVENTS_TOPIC_ARN", pipeline.topic_arn)
    config_uri = pipeline.outputs["ConfigUriLandingDr"]
    run = start(
        sfn, pipeline.state_machine_arn, deploy.execution_name("landing"),
        {"configUri": config_uri},
    )  # fmt: skip
    wait_for(
        lambda: sfn.describe_execution(executionArn=run)["status"] != "RUNNING", "the run", 240
    )
    assert sfn.describe_execution(executionArn=run)["status"] == "SUCCEEDED"
    west = GlueCatalog("dr", boto3.client("glue", region_name=WEST))
    # The work area is the stack's work bucket: the baselines are kept there.
    common = [
        str(LANDING), "--environment", "local", "--home", str(local_runtime.state_dir), "--json",
    ]  # fmt: skip

    def ferry(command: str) -> dict:
        capsys.readouterr()
        code = main([command, *common])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        return json.loads(captured.out)

    try:
        failed_over = ferry("failover")
        assert failed_over["switch"]["triggers"] == [f"rule {RULE}", f"schedule {GROUP}/{SCHEDULE}"]
        assert (rule_state(), schedule_state()) == ("DISABLED", "DISABLED")
        [table] = failed_over["tables"]
        assert west.get_table("landing_dr", "orders").parameters[PROMOTED] == table["promoted"]

        failed_back = ferry("failback")
        assert [t["status"] for t in failed_back["tables"]] == ["FAILED_BACK"]
        assert (rule_state(), schedule_state()) == ("ENABLED", "ENABLED")
        assert PROMOTED not in west.get_table("landing_dr", "orders").parameters
    finally:
        switch_for("local", home=local_runtime.state_dir).resume(landing, [TABLE])
