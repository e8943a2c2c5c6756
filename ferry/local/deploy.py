"""Deploy the replication pipeline into the local AWS emulator (``ferry local up``).

The same resources the CDK stack creates, with the same state machine definitions: a work
bucket, the notification topic, the DynamoDB table of replica locks and the snapshot ledger,
one Lambda function per state (their handlers run in-process in the emulator), an EMR
Serverless application for the Spark copy, the replication state machine and the
housekeeping state machine. Deploying again updates what exists.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
import uuid
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from ferry import fs, triggers
from ferry.config import S3Trigger
from ferry.ledger import DynamoDbStateStore
from infra import definition

ACCOUNT = "123456789012"
REGION = "us-east-1"
PREFIX = "ferry-local"
WORK_BUCKET = f"{PREFIX}-work"
WORK_URI = f"s3://{WORK_BUCKET}"
STATE_MACHINE = f"{PREFIX}-replication"
HOUSEKEEPING_STATE_MACHINE = f"{PREFIX}-housekeeping"
STATE_TABLE = f"{PREFIX}-state"
TOPIC = f"{PREFIX}-replication-events"
ROLE = f"{PREFIX}-role"
SPARK_APPLICATION = f"{PREFIX}-copy"
COPY_JOB = Path(__file__).resolve().parents[2] / "emr_jobs" / "copy_files.py"
RECORD = "pipeline.json"


@dataclass(frozen=True)
class Pipeline:
    """Where the deployed pipeline is; recorded under the state folder for ``ferry execute``."""

    state_machine_arn: str
    work_uri: str
    topic_arn: str
    spark_application_id: str
    #: Recorded since housekeeping exists; a record written before has neither.
    housekeeping_state_machine_arn: str | None = None
    state_table: str | None = None

    def save(self, state_dir: Path) -> None:
        (state_dir / RECORD).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, state_dir: Path) -> Pipeline | None:
        path = state_dir / RECORD
        return cls(**json.loads(path.read_text())) if path.exists() else None


def lambda_environment() -> dict[str, str]:
    """The functions' environment, as the CDK stack sets it."""
    return {
        "FERRY_WORK_URI": WORK_URI,
        "FERRY_MAX_CONCURRENCY": "4",
        "FERRY_STATE_TABLE": STATE_TABLE,
        "POWERTOOLS_SERVICE_NAME": "ferry",
        "POWERTOOLS_METRICS_NAMESPACE": "Ferry",
    }


def deploy(endpoint: str, state_dir: Path) -> Pipeline:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=endpoint)

    s3, sns, iam = client("s3"), client("sns"), client("iam")
    if WORK_BUCKET not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
        s3.create_bucket(Bucket=WORK_BUCKET)
    topic_arn = sns.create_topic(Name=TOPIC)["TopicArn"]
    DynamoDbStateStore.create_table(client("dynamodb"), STATE_TABLE)
    role_arn = _role(iam)
    functions = {
        name: _function(client("lambda"), name, handler, role_arn)
        for name, handler in definition.ALL_FUNCTIONS.items()
    }
    application_id = _spark_application(client("emr-serverless"))
    substitutions = {
        **{f"{name}FunctionArn": arn for name, arn in functions.items()},
        "SparkApplicationId": application_id,
        "SparkJobRoleArn": role_arn,
        "CopyJobEntryPoint": fs.local_uri(COPY_JOB),
        "SparkSubmitParameters": "--conf spark.executor.cores=1",
    }
    state_machine_arn = _state_machine(
        client("stepfunctions"), STATE_MACHINE, definition.render(substitutions), role_arn
    )
    housekeeping_arn = _state_machine(
        client("stepfunctions"),
        HOUSEKEEPING_STATE_MACHINE,
        definition.render(substitutions, definition.HOUSEKEEPING_PATH),
        role_arn,
    )
    pipeline = Pipeline(
        state_machine_arn, WORK_URI, topic_arn, application_id, housekeeping_arn, STATE_TABLE
    )
    pipeline.save(state_dir)
    return pipeline


def _role(iam: Any) -> str:
    try:
        return iam.get_role(RoleName=ROLE)["Role"]["Arn"]
    except ClientError:
        statement = {
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
        trust = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
        return iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=trust)["Role"]["Arn"]


def _placeholder_code() -> bytes:
    # The handlers run from this checkout inside the emulator; the zip only satisfies the API.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "Ferry local runtime: handlers run in-process.\n")
    return buffer.getvalue()


def _function(awslambda: Any, name: str, handler: str, role_arn: str) -> str:
    function_name = f"{PREFIX}-{name}"
    settings = {
        "Runtime": "python3.11",
        "Role": role_arn,
        "Handler": handler,
        "Timeout": 900,
        "MemorySize": 1024,
        "Environment": {"Variables": lambda_environment()},
    }
    try:
        awslambda.get_function(FunctionName=function_name)
        return awslambda.update_function_configuration(FunctionName=function_name, **settings)[
            "FunctionArn"
        ]
    except ClientError:
        return awslambda.create_function(
            FunctionName=function_name, Code={"ZipFile": _placeholder_code()}, **settings
        )["FunctionArn"]


def _spark_application(emr: Any) -> str:
    for application in emr.list_applications()["applications"]:
        if application["name"] == SPARK_APPLICATION and application["state"] != "TERMINATED":
            return application["id"]
    return emr.create_application(name=SPARK_APPLICATION, releaseLabel="emr-7.5.0", type="SPARK")[
        "applicationId"
    ]


def _state_machine(sfn: Any, name: str, text: str, role_arn: str) -> str:
    for machine in sfn.list_state_machines()["stateMachines"]:
        if machine["name"] == name:
            sfn.update_state_machine(stateMachineArn=machine["stateMachineArn"], definition=text)
            return machine["stateMachineArn"]
    return sfn.create_state_machine(name=name, definition=text, roleArn=role_arn)["stateMachineArn"]


def upload_config(s3: Any, work_uri: str, config_path: Path) -> str:
    """Put a config file under ``<work>/configs/`` (named by its content); its URI."""
    body = config_path.read_bytes()
    digest = hashlib.sha256(body).hexdigest()[:16]
    bucket, _, prefix = work_uri.removeprefix("s3://").partition("/")
    key = "/".join(p for p in (prefix, "configs", f"{config_path.stem}-{digest}.yml") if p)
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    return f"s3://{bucket}/{key}"


def bucket_region(aws: Any, bucket: str) -> str | None:
    """The region of ``bucket`` in the emulator; None when there is no such bucket."""
    try:
        location = aws.client("s3").get_bucket_location(Bucket=bucket)["LocationConstraint"]
    except ClientError as error:
        if error.response["Error"]["Code"] in ("NoSuchBucket", "404"):
            return None
        raise
    return location or "us-east-1"  # S3 gives no location constraint for us-east-1


def add_s3_trigger(aws: Any, state_machine_arn: str, config_uri: str, trigger: S3Trigger) -> str:
    """Make the objects ``trigger`` declares start runs of the config; the rule's name.

    As on AWS: the bucket sends its events to EventBridge, and the rule is on the event bus
    of the bucket's region (``trigger.region``, else the emulator's), where they arrive.
    """
    aws.client("s3").put_bucket_notification_configuration(
        Bucket=trigger.bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    events = aws.client("events", trigger.region)
    pattern = triggers.s3_event_pattern(trigger)
    name = "ferry-" + hashlib.sha256(json.dumps(pattern, sort_keys=True).encode()).hexdigest()[:16]
    events.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")
    transformer = {
        "InputPathsMap": triggers.S3_INPUT_PATHS,
        "InputTemplate": triggers.s3_input_template(config_uri),
    }
    events.put_targets(
        Rule=name,
        Targets=[{"Id": "replicate", "Arn": state_machine_arn, "InputTransformer": transformer}],
    )
    return name


def execution_name(prefix: str = "ferry") -> str:
    return f"{prefix}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
