"""Deploy the replication pipeline into the local AWS emulator (``ferry local up``).

The local runtime deploys what ``cdk deploy`` would: the CDK app synthesizes the local
runtime's environment (``ferry/local/environment.yml``) with the same constructs as every
environment, and its template is created in the emulator resource by resource
(``ferry.local.stack``) — roles and policies, functions with their environment and role,
both state machines with their definition substitutions, the work bucket, the topics with
their policies, the key, the state table, the secret, the EMR Serverless application, the
rules and schedules. The CDK's file assets (the configs, the Spark job's entry point and its
packed environment) are published to the emulated bootstrap bucket as ``cdk deploy`` does
(``cdk bootstrap`` is emulated by creating that bucket and its version parameter). Then the
secret gets its values, as a person does after a first deploy. Deploying again updates what
exists.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from ferry.config import S3Trigger
from ferry.feeds import trigger_events
from ferry.local import stack, stack_assets

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Path(__file__).resolve().parent / "environment.yml"
ENVIRONMENT = "local"
ACCOUNT = "123456789012"
REGION = "us-east-1"
#: The CDK's default bootstrap qualifier, and the version ``cdk bootstrap`` records.
BOOTSTRAP_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION = "30"
RECORD = "pipeline.json"
#: What goes into the synthesized template: a change to any of it synthesizes again.
_SYNTH_INPUTS = ("infra", "ferry", "lambdas", "emr_jobs")


@dataclass(frozen=True)
class Pipeline:
    """Where the deployed pipeline is; recorded under the state folder for ``ferry execute``."""

    state_machine_arn: str
    work_uri: str
    topic_arn: str
    spark_application_id: str
    housekeeping_state_machine_arn: str | None = None
    state_table: str | None = None
    config_secret_arn: str | None = None
    #: The stack's outputs, as ``cdk deploy`` prints them.
    outputs: dict[str, str] = field(default_factory=dict)

    def save(self, state_dir: Path) -> None:
        (state_dir / RECORD).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, state_dir: Path) -> Pipeline | None:
        path = state_dir / RECORD
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def bootstrap_bucket(account: str = ACCOUNT, region: str = REGION) -> str:
    return f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{account}-{region}"


def bootstrap_parameter() -> str:
    return f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version"


def synthesize(state_dir: Path) -> Path:
    """The local environment's cloud assembly, synthesized again only when its inputs change."""
    key = _synth_key()
    assembly = state_dir / "cdk.out"
    marker = assembly / ".ferry-synth-key"
    if marker.exists() and marker.read_text() == key:
        return assembly
    from infra.app import build_app
    from infra.settings import load_settings

    settings = load_settings(SETTINGS, ENVIRONMENT)
    build_app(outdir=str(assembly), settings=[settings]).synth()
    marker.write_text(key)
    return assembly


def _synth_key() -> str:
    digest = hashlib.sha256()
    files = [ROOT / "pyproject.toml", ROOT / "constraints.txt"]
    for folder in _SYNTH_INPUTS:
        files += sorted(
            p for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and "node_modules" not in p.parts
            and p.suffix != ".pyc"
        )  # fmt: skip
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def deploy(endpoint: str, state_dir: Path, secret_values: dict[str, str] | None = None) -> Pipeline:
    """Synthesize the local environment and deploy its stack into the emulator at ``endpoint``.

    ``secret_values``: what goes into the stack's secret after the deploy (the metastores'
    URIs), as ``aws secretsmanager put-secret-value`` after a first deploy on AWS.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )

    def client(service: str, region: str | None = None) -> Any:
        return session.client(service, region_name=region or REGION, endpoint_url=endpoint)

    assembly = synthesize(state_dir)
    stack_name = f"Ferry-{ENVIRONMENT}"
    _bootstrap(client)
    _publish_assets(client, stack_assets.file_assets(assembly, stack_name, ACCOUNT, REGION))
    template = json.loads((assembly / f"{stack_name}.template.json").read_text())
    outputs = stack.Deployment(template, stack_name, ACCOUNT, REGION, client).deploy()
    if secret_values is not None:
        client("secretsmanager").put_secret_value(
            SecretId=outputs["ConfigSecretArn"], SecretString=json.dumps(secret_values)
        )
    pipeline = Pipeline(
        state_machine_arn=outputs["ReplicationStateMachineArn"],
        work_uri=f"s3://{outputs['WorkBucketName']}",
        topic_arn=outputs["ReplicationEventsTopicArn"],
        spark_application_id=outputs["SparkApplicationId"],
        housekeeping_state_machine_arn=outputs["HousekeepingStateMachineArn"],
        state_table=outputs["StateTableName"],
        config_secret_arn=outputs["ConfigSecretArn"],
        outputs=outputs,
    )
    pipeline.save(state_dir)
    return pipeline


def _bootstrap(client: Any) -> None:
    """What ``cdk bootstrap`` leaves that a deploy needs: the assets bucket, its version."""
    s3 = client("s3")
    bucket = bootstrap_bucket()
    if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
        s3.create_bucket(Bucket=bucket)
    client("ssm").put_parameter(
        Name=bootstrap_parameter(), Value=BOOTSTRAP_VERSION, Type="String", Overwrite=True
    )


def _publish_assets(client: Any, assets: list[stack_assets.FileAsset]) -> None:
    """Upload the stack's file assets (``cdk deploy`` does it with cdk-assets).

    The functions' code (a folder) is not uploaded: their handlers run from this checkout.
    """
    s3 = client("s3")
    for asset in assets:
        if asset.packaging != "file" or not asset.path.is_file():
            continue
        try:
            s3.head_object(Bucket=asset.bucket, Key=asset.key)
            continue  # content-addressed: already published
        except ClientError:
            pass
        s3.upload_file(str(asset.path), asset.bucket, asset.key)


def config_uri(work_uri: str, config_path: Path) -> str:
    """Where ``upload_config`` puts a config file: ``<work>/configs/<stem>-<digest>.yml``,
    named by its content (a changed file is another object)."""
    digest = hashlib.sha256(config_path.read_bytes()).hexdigest()[:16]
    bucket, _, prefix = work_uri.removeprefix("s3://").partition("/")
    key = "/".join(p for p in (prefix, "configs", f"{config_path.stem}-{digest}.yml") if p)
    return f"s3://{bucket}/{key}"


def upload_config(s3: Any, work_uri: str, config_path: Path) -> str:
    """Put a config file under ``<work>/configs/`` (named by its content); its URI."""
    uri = config_uri(work_uri, config_path)
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    s3.put_object(Bucket=bucket, Key=key, Body=config_path.read_bytes())
    return uri


def bucket_region(aws: Any, bucket: str) -> str | None:
    """The region of ``bucket`` in the emulator; None when there is no such bucket."""
    try:
        location = aws.client("s3").get_bucket_location(Bucket=bucket)["LocationConstraint"]
    except ClientError as error:
        if error.response["Error"]["Code"] in ("NoSuchBucket", "404"):
            return None
        raise
    return location or "us-east-1"  # S3 gives no location constraint for us-east-1


def add_s3_trigger(
    aws: Any,
    state_machine_arn: str,
    config_uri: str,
    trigger: S3Trigger,
    role_arn: str,
    dead_letters_arn: str = "",
) -> str:
    """Make the objects ``trigger`` declares start runs of the config; the rule's name.

    As on AWS: the bucket sends its events to EventBridge, and the rule is on the event bus
    of the bucket's region (``trigger.region``, else the emulator's), where they arrive; the
    rule starts executions with ``role_arn``, the stack's role for its rules, and sends what
    it could not deliver, after its retries, to ``dead_letters_arn`` (the stack's triggers'
    dead-letter queue).
    """
    aws.client("s3").put_bucket_notification_configuration(
        Bucket=trigger.bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    events = aws.client("events", trigger.region)
    pattern = trigger_events.s3_event_pattern(trigger)
    name = "ferry-" + hashlib.sha256(json.dumps(pattern, sort_keys=True).encode()).hexdigest()[:16]
    events.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")
    transformer = {
        "InputPathsMap": trigger_events.S3_INPUT_PATHS,
        "InputTemplate": trigger_events.s3_input_template(config_uri),
    }
    events.put_targets(
        Rule=name,
        Targets=[
            {
                "Id": "replicate",
                "Arn": state_machine_arn,
                "RoleArn": role_arn,
                "InputTransformer": transformer,
                **trigger_events.target_failures(dead_letters_arn),
            }
        ],
    )
    return name


def execution_name(prefix: str = "ferry") -> str:
    return f"{prefix}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
