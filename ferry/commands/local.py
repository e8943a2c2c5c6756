"""``ferry local``: the local runtime's processes, and the triggers that start replications."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from ferry.catalog.hive import HiveMetastoreCatalog
from ferry.commands import EXIT_FAILED, EXIT_OK, UsageError, print_warnings
from ferry.config import ReplicationConfig, S3Trigger, load_config
from ferry.core.duration import format_duration
from ferry.core.errors import ConfigError, FerryError
from ferry.feeds import trigger_events
from ferry.feeds.feed_checks import notification_log_problem
from ferry.local import catalog_triggers, deploy, emulator, processes, runtime
from ferry.storage.aws import AwsClients, new_session


def run_local(
    action: str, home: Path, ports: dict[str, int], as_json: bool = False, purge: bool = False
) -> int:
    """``up``, ``down`` or ``status`` of the local runtime in ``home``, for a person or as JSON.

    ``purge`` (with ``down``): remove the runtime's saved state too."""
    if action == "down":
        stopped = runtime.down(home, purge=purge)
        print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
        if purge:
            print(f"removed the saved state in {home}: the next up starts empty")
        return EXIT_OK
    if action == "up":
        started = time.monotonic()
        services = runtime.up(home, ports)
        if not as_json:
            print(f"local runtime up in {time.monotonic() - started:.1f} s (state in {home})")
            restored = emulator.restored(home)
            if restored is not None:
                print(f"  {restored.message}")
    else:
        services = runtime.status(home)
    settings = runtime.environment(services)
    if as_json:
        print(
            json.dumps(
                {
                    "services": [s.__dict__ | {"url": s.url} for s in services],
                    "environment": settings,
                },
                indent=2,
            )
        )
        return EXIT_OK
    labels = {
        runtime.SOURCE: "source metastore",
        runtime.REPLICA: "replica metastore",
        runtime.AWS: "AWS emulator",
    }
    for service in services:
        state = f"{service.url}  (pid {service.pid})" if service.running else "not running"
        print(f"  {labels[service.name]:<18} {state}")
    pipeline = deploy.Pipeline.load(home)
    if pipeline is not None and all(s.running for s in services):
        print(f"  {'state machine':<18} {pipeline.state_machine_arn}")
        print(f"  {'work location':<18} {pipeline.work_uri}")
        if pipeline.housekeeping_state_machine_arn:
            print(f"  {'housekeeping':<18} {pipeline.housekeeping_state_machine_arn}")
        if pipeline.state_table:
            print(f"  {'state table':<18} {pipeline.state_table} (locks and snapshot ledger)")
    if settings:
        print("\nsettings for your shell:")
        for key, value in settings.items():
            print(f"  export {key}={value}")
    return EXIT_OK if action == "up" or all(s.running for s in services) else EXIT_FAILED


def run_local_trigger(config_path: Path, home: Path) -> int:
    """Install the triggers ``config_path`` declares into the local runtime, one line each.

    Each S3 trigger becomes an EventBridge rule, as on AWS (``ferry.feeds.trigger_events``), and
    ``catalog-events`` what the stack deploys for it: for a Glue source a rule on Glue's
    events whose target is the CatalogEvents function (with its permission), for a Hive
    source the poller's schedule, with the stack's role for it
    (``ferry.local.catalog_triggers``). A declared ``schedule`` is only reported. Everything
    is checked before anything is installed.
    """
    config = load_config(config_path)
    print_warnings(config)
    declared = config.triggers
    if not declared.declared:
        raise ConfigError(
            f"{config_path}: declares no triggers: add the key 'triggers', with a 'schedule', "
            "the 's3' objects whose arrival starts a run, or 'catalog-events' "
            "(docs/CONFIGURATION.md, Triggers)"
        )
    feeds = (
        _catalog_events_plan(config_path, config, home)
        if declared.catalog_events is not None
        else None
    )
    if declared.s3:
        state_machine_arn, work_uri, aws = local_pipeline(home)
        pipeline = deploy.Pipeline.load(home)
        role_arn = pipeline.outputs.get("TriggerRoleArn", "") if pipeline else ""
        dead_letters = pipeline.outputs.get("TriggerDeadLettersArn", "") if pipeline else ""
        _check_buckets(aws, declared.s3, config_path)  # before anything is installed
        config_uri = deploy.upload_config(aws.client("s3"), work_uri, config_path)
        for trigger in declared.s3:
            rule = deploy.add_s3_trigger(
                aws, state_machine_arn, config_uri, trigger, role_arn, dead_letters
            )
            print(
                f"an object created at {trigger_events.describe_s3_trigger(trigger)} now starts "
                f"a replication of {config_path} (rule {rule})"
            )
    if feeds is not None:
        _install_catalog_events(config_path, config, feeds)
    if declared.schedule is not None:
        schedule = declared.schedule
        print(
            f"the schedule {schedule.expression} ({schedule.time_zone}) starts {config_path} on "
            "AWS (EventBridge Scheduler); the local runtime fires no schedules: run "
            f"`ferry execute {config_path}` by hand"
        )
    return EXIT_OK


@dataclass(frozen=True)
class _CatalogEventsPlan:
    """What installing a config's ``catalog-events`` needs, found before anything is."""

    aws: AwsClients
    work_uri: str
    outputs: dict[str, str]


def _catalog_events_plan(
    config_path: Path, config: ReplicationConfig, home: Path
) -> _CatalogEventsPlan:
    """The checks of a config's ``catalog-events``, before anything is installed: the stack
    deployed its functions; a Hive source answers and writes its notification log; no other
    config file's feeds would share this one's items (the same content, the same URI)."""
    _, work_uri, aws = local_pipeline(home)
    pipeline = deploy.Pipeline.load(home)
    outputs = pipeline.outputs if pipeline else {}
    wanted = ["CatalogEventsFunctionArn", "CatalogPollerFunctionArn", "PollerScheduleRoleArn"]
    missing = [key for key in wanted if key not in outputs]
    if missing:
        raise FerryError(
            f"the local pipeline has no output {', '.join(missing)}: deployed before catalog "
            "change feeds existed; run `ferry local up` again"
        )
    source = config.source_catalog
    if source.glue is None:
        with closing(HiveMetastoreCatalog(source.name, source.metastore_uris)) as catalog:
            problem = notification_log_problem(catalog)
        if problem is not None:
            raise FerryError(
                f"{config_path}: source-catalog {source.name}: {problem}; no trigger installed"
            )
    uri = deploy.config_uri(work_uri, config_path)
    shared = catalog_triggers.shared_feed(aws, config_path, uri)
    if shared is not None:
        raise ConfigError(
            f"{config_path}: the same config as {shared.config_path}, whose catalog-events are "
            f"installed ({shared.name}): both would share one change feed (its position and "
            "windows are the config's); install one of them"
        )
    return _CatalogEventsPlan(aws, work_uri, outputs)


def _install_catalog_events(
    config_path: Path, config: ReplicationConfig, plan: _CatalogEventsPlan
) -> None:
    """The config's ``catalog-events`` as the stack deploys it, from the stack's outputs."""
    aws, outputs = plan.aws, plan.outputs
    config_uri = deploy.upload_config(aws.client("s3"), plan.work_uri, config_path)
    window = format_duration(config.triggers.catalog_events.window)  # type: ignore[union-attr]
    glue = config.source_catalog.glue
    if glue is not None:
        rule = catalog_triggers.install_glue_rule(
            aws,
            outputs["CatalogEventsFunctionArn"],
            config_path,
            config_uri,
            config,
            outputs.get("TriggerDeadLettersArn", ""),
        )
        where = glue.region or deploy.REGION
        print(
            f"a change of the Glue tables of {', '.join(trigger_events.source_databases(config))} "
            f"({where}) now starts a replication of the table {window} later, of "
            f"{config_path} (rule {rule})"
        )
        return
    schedule = catalog_triggers.install_poller_schedule(
        aws,
        outputs["CatalogPollerFunctionArn"],
        outputs["PollerScheduleRoleArn"],
        config_path,
        config_uri,
        outputs.get("TriggerDeadLettersArn", ""),
    )
    interval = format_duration(config.triggers.catalog_events.poll_interval)  # type: ignore[union-attr]
    print(
        f"the notification log of {config.source_catalog.name} is now read every {interval} and "
        f"a change of a table starts its replication {window} later, of {config_path} "
        f"(schedule {schedule}, {trigger_events.POLLER_SCHEDULE})"
    )


def _check_buckets(aws: AwsClients, declared: Sequence[S3Trigger], config_path: Path) -> None:
    """Each trigger's bucket exists in the emulator, in the region the trigger declares.

    A trigger on a bucket of another region would never fire: its events go to that
    region's event bus.
    """
    for index, trigger in enumerate(declared):
        region = deploy.bucket_region(aws, trigger.bucket)
        if region is None:
            raise FerryError(
                f"{config_path}: triggers.s3[{index}]: the bucket {trigger.bucket} does not "
                "exist in the local runtime; create it first"
            )
        expected = trigger.region or deploy.REGION
        if region != expected:
            whose = "" if trigger.region else "the pipeline's "
            raise ConfigError(
                f"{config_path}: triggers.s3[{index}].region: the bucket {trigger.bucket} is in "
                f"{region}, not {whose}{expected}, and S3 sends a bucket's events to "
                f"EventBridge in its own region; declare region: {region}"
            )


def local_pipeline(home: Path) -> tuple[str, str, AwsClients]:
    """The local runtime's state machine, work location and clients, or a clear error."""
    process = processes.read_process(home, "aws")
    pipeline = deploy.Pipeline.load(home)
    if process is None or not process.is_running() or pipeline is None:
        raise UsageError(
            f"the local runtime is not running in {home}; start it with `ferry local up`"
        )
    session = new_session(
        aws_access_key_id=emulator.EMULATOR_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=emulator.EMULATOR_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
        region_name=emulator.EMULATOR_ENVIRONMENT["AWS_DEFAULT_REGION"],
    )
    aws = AwsClients(emulator.endpoint_url(process.port), session=session)
    return pipeline.state_machine_arn, pipeline.work_uri, aws
