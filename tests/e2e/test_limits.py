"""The local runtime keeps AWS's rules, and the pipeline stays within them at scale.

- IAM: every function, the Spark job and the state machine act with their deployed role's
  permissions; a grant removed from a role fails the run as it would on AWS.
- Step Functions: 256 KiB per state and per task result, enforced locally; an error no
  ``Catch`` takes (``States.DataLimitExceeded``) is not caught by ``States.ALL``.
- Scale: a config of 1,000 tables, and a table of 1,000,000 files through the S3 copy Map,
  with the largest state of each measured.
"""

from __future__ import annotations

import copy
import json
import time

import boto3
import pytest

from ferry import statemachine as definition
from ferry.catalog.glue import GlueCatalog
from ferry.copying.manifest import CopyRoot, ManifestWriter
from ferry.core.model import Column, StorageDescriptor, Table, TableType
from ferry.local import deploy
from ferry.statemachine.executions import follow, start
from ferry.storage import fs, listing
from tests.helpers import catalog_state, files_below

pytestmark = pytest.mark.e2e

LIMIT = 256 * 1024


def denials(local_runtime) -> list[dict]:
    import urllib.request

    with urllib.request.urlopen(f"{local_runtime.endpoint}/ferry-api/denials") as reply:
        return json.loads(reply.read())


def largest_state(sfn, execution_arn: str) -> int:
    """The largest input or output of any state of the execution, in bytes."""
    largest = 0
    arguments = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**arguments)
        for event in page["events"]:
            for details in ("stateEnteredEventDetails", "stateExitedEventDetails"):
                data = event.get(details) or {}
                for field in ("input", "output"):
                    if data.get(field):
                        largest = max(largest, len(data[field].encode()))
        if not page.get("nextToken"):
            return largest
        arguments["nextToken"] = page["nextToken"]


# -- IAM ----------------------------------------------------------------------------------------


def role_of(iam, prefix: str) -> str:
    """The deployed role whose name starts with ``prefix`` (the stack's logical id)."""
    roles = [r["RoleName"] for r in iam.list_roles()["Roles"] if r["RoleName"].startswith(prefix)]
    assert len(roles) == 1, roles
    return roles[0]


def test_a_grant_removed_from_a_role_fails_the_run_as_on_aws(
    run, local_runtime, pipeline, cross_region
):
    """The S3 copy's role loses s3:PutObject: the run fails with AccessDenied, the replica is
    left as it was; the grant back, the run succeeds."""
    iam = boto3.client("iam")
    role = role_of(iam, "Ferry-local-FunctionsS3CopyBatchRole")
    [name] = iam.list_role_policies(RoleName=role)["PolicyNames"]
    granted = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
    reduced = copy.deepcopy(granted)
    for statement in reduced["Statement"]:
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        statement["Action"] = [a for a in actions if a != "s3:PutObject"] or ["s3:GetObject"]
    document = cross_region.document(replica_database=f"{cross_region.sample.database}_iam")
    west = cross_region.west
    replica_db = f"{cross_region.sample.database}_iam"
    seen = len(denials(local_runtime))
    iam.put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=json.dumps(reduced))
    try:
        outcome = run(document)
    finally:
        iam.put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=json.dumps(granted))
    assert outcome.status == "FAILED", outcome
    [table] = outcome.results
    assert table["failedState"] == "S3 server-side copy"
    assert table["error"] == "CopyError" and "batches of the S3 copy failed" in table["cause"]
    refused = [d for d in denials(local_runtime)[seen:] if d["action"] == "s3:PutObject"]
    assert refused and all(role in d["caller"] for d in refused)
    assert "is not authorized to perform: s3:PutObject" in refused[0]["message"]
    assert west.get_table(replica_db, "orders") is None
    assert files_below(f"s3://{cross_region.replica_bucket}/orders") == {}
    # The grant back: the same config replicates.
    assert run(document).status == "SUCCEEDED"
    assert catalog_state(west, replica_db, ["orders"])["orders"] is not None


def test_every_request_of_a_run_is_the_deployed_roles_and_none_is_refused(
    run, local_runtime, pipeline, cross_region
):
    seen = len(denials(local_runtime))
    outcome = run(cross_region.document(replica_database=f"{cross_region.sample.database}_roles"))
    assert outcome.status == "SUCCEEDED", outcome
    assert denials(local_runtime)[seen:] == []


def test_a_function_whose_role_lambda_may_not_assume_cannot_run(
    run, local_runtime, pipeline, cross_region
):
    iam = boto3.client("iam")
    role = role_of(iam, "Ferry-local-FunctionsResolveTablesRole")
    trust = iam.get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]
    wrong = copy.deepcopy(trust)
    wrong["Statement"][0]["Principal"] = {"Service": "ec2.amazonaws.com"}
    iam.update_assume_role_policy(RoleName=role, PolicyDocument=json.dumps(wrong))
    try:
        # The function's warm environments keep their credentials; a new configuration
        # (here: its description) makes Lambda start new ones, which must assume the role.
        awslambda = boto3.client("lambda")
        function = "ferry-local-resolve-tables"
        awslambda.update_function_configuration(FunctionName=function, Description="changed")
        outcome = run(cross_region.document())
    finally:
        iam.update_assume_role_policy(RoleName=role, PolicyDocument=json.dumps(trust))
    assert outcome.status == "FAILED"
    assert outcome.error == "AccessDeniedException"
    assert "sts:AssumeRole" in outcome.cause


def kms_encrypted_source(aws, unique: str, region: str):
    """Sample tables in Glue on a bucket of ``region`` that encrypts with its own KMS key."""
    from ferry.local.samples import create_sample_tables, last_days
    from tests.conftest import NOW

    s3 = boto3.client("s3", region_name=region)
    bucket = f"src-kms-{region}-{unique}"
    if region == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
    key = boto3.client("kms", region_name=region).create_key()["KeyMetadata"]["Arn"]
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [
                {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}}
            ]
        },
    )
    glue = GlueCatalog(region, boto3.client("glue", region_name=region))
    sample = create_sample_tables(
        glue, f"sales_kms_{unique}", f"s3://{bucket}/warehouse", last_days(NOW.date(), 2)
    )
    return glue, sample, key


@pytest.mark.parametrize(
    "region, allowed", [("us-east-1", True), ("us-west-2", False)], ids=["named", "not-named"]
)
def test_a_source_encrypted_with_a_kms_key_is_read_only_if_the_settings_name_the_key(
    run, local_runtime, aws, unique, region, allowed
):
    """The local environment names the KMS keys of us-east-1 (``read-kms-keys``): a source
    bucket there that encrypts with its own key is read through S3; one in another region is
    refused, on kms:Decrypt, as on AWS."""
    glue, sample, key = kms_encrypted_source(aws, unique, region)
    replica_bucket = f"dr-kms-{unique}"
    boto3.client("s3", region_name=region).create_bucket(
        Bucket=replica_bucket,
        **({} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}),
    )
    document = {
        "source-catalog": {"name": "src", "glue": {"region": region}},
        "replica-catalog": {"name": "dr", "glue": {"region": region}},
        "table-replications": [
            {
                "source-table": {"database-name": sample.database, "table-name": "orders"},
                "replica-table": {
                    "database-name": f"{sample.database}_dr",
                    "table-location": f"s3://{replica_bucket}/orders",
                },
            }
        ],
    }
    seen = len(denials(local_runtime))
    outcome = run(document)
    refused = [d for d in denials(local_runtime)[seen:] if d["action"] == "kms:Decrypt"]
    if allowed:
        assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
        assert refused == []
    else:
        assert outcome.status == "FAILED"
        assert refused and refused[0]["resource"] == key
        assert glue.get_table(f"{sample.database}_dr", "orders") is None


# -- Step Functions' payload limits ---------------------------------------------------------------


@pytest.fixture
def machine(pipeline, sfn):
    """A state machine of the given definition, run with the pipeline's own role."""
    role = sfn.describe_state_machine(stateMachineArn=pipeline.state_machine_arn)["roleArn"]
    created = []

    def create(document: dict) -> str:
        name = f"limits-{len(created)}-{time.monotonic_ns()}"
        arn = sfn.create_state_machine(name=name, definition=json.dumps(document), roleArn=role)[
            "stateMachineArn"
        ]
        created.append(arn)
        return arn

    yield create
    for arn in created:
        sfn.delete_state_machine(stateMachineArn=arn)


BIG = "x" * (LIMIT + 1)


@pytest.mark.parametrize("caught_by", ["States.ALL", "States.DataLimitExceeded"])
def test_a_state_over_256_kib_fails_and_only_a_catch_that_names_it_takes_it(
    sfn, machine, caught_by
):
    document = {
        "StartAt": "Too big",
        "States": {
            "Too big": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Echo",
                    "States": {"Echo": {"Type": "Pass", "Result": BIG[: LIMIT // 4], "End": True}},
                },
                "ResultPath": None,
                "Catch": [{"ErrorEquals": [caught_by], "ResultPath": "$.error", "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Succeed"},
        },
    }
    arn = start(sfn, machine(document), deploy.execution_name("limit"), {"items": [1, 2, 3, 4, 5]})
    outcome = follow(sfn, arn, poll_seconds=0.2, timeout_seconds=60)
    # The Map's result (five outputs of 64 KiB) is over the limit, whatever its ResultPath.
    if caught_by == "States.ALL":
        assert (outcome.status, outcome.error) == ("FAILED", "States.DataLimitExceeded")
    else:
        assert outcome.status == "SUCCEEDED"
        assert "Caught" in outcome.entered


def test_a_config_of_1000_tables_stays_within_every_limit(run, sfn, aws, unique):
    """1,000 tables through the real pipeline: the list and every table's outcome travel
    through S3; no state of the execution comes near 256 KiB."""
    source, replica = f"src-{unique}", f"dr-{unique}"
    aws["s3"].create_bucket(Bucket=source)
    aws["s3"].create_bucket(Bucket=replica)
    glue = GlueCatalog("east", aws["glue"])
    database = f"sales_{unique}"
    from ferry.core.model import Database

    glue.create_database(Database(database))
    storage = StorageDescriptor(f"s3://{source}/empty", (Column("id", "bigint"),))
    for number in range(1000):
        name = f"t{number:04d}"
        glue.create_table(
            Table(
                database, name, TableType.EXTERNAL, storage.with_location(f"s3://{source}/{name}")
            )
        )
    document = {
        "source-catalog": {"name": "east", "glue": {"region": "us-east-1"}},
        "replica-catalog": {"name": "dr", "glue": {"region": "us-east-1"}},
        "table-replications": [
            {
                "source-table": {"database-name": database, "table-name-pattern": "t\\d+"},
                "replica-table": {
                    "database-name": f"{database}_dr",
                    "table-location": f"s3://{replica}/warehouse",
                },
            }
        ],
    }
    started = time.monotonic()
    outcome = run(document, timeout_seconds=1200)
    seconds = time.monotonic() - started
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    assert len(outcome.results) == 1000
    assert {r["notified"]["status"] for r in outcome.results} == {"SUCCEEDED"}
    largest = largest_state(sfn, outcome.execution_arn)
    print(f"\n1,000 tables in {seconds:.0f} s; largest state of the execution: {largest} bytes")
    assert largest < 16 * 1024
    assert len(glue.list_table_names(f"{database}_dr")) == 1000


def test_a_table_of_a_million_files_through_the_s3_copy_map_stays_within_every_limit(
    pipeline, sfn, machine, aws, unique, tmp_path
):
    """The S3 copy Map of the definition, as it is (ItemReader, ItemSelector, ResultWriter),
    over a manifest of 1,000,000 files written by the planner's own writer. What copies each
    batch is a stand-in (a Pass state counting its files): what is measured here is what
    travels through Step Functions, which the copy itself does not change."""
    event = f"ferry-20261121t083000000z-{unique}"
    work_bucket, _ = fs.object_location(pipeline.work_uri + "/x")
    manifest_key = f"runs/{event}/manifest.json"
    local = tmp_path / "manifest.json"
    writer = ManifestWriter(fs.local_uri(local), event, 1000)
    for day in range(1000):
        partition = f"dt=2024-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}/hour={day % 24:02d}"
        root = CopyRoot(
            f"s3://src-{unique}/warehouse/sales.db/events/{partition}",
            f"s3://dr-{unique}/warehouse/sales_dr/events/{event}/{partition}",
        )
        writer.add(
            root,
            (
                listing.FileEntry(
                    f"{root.source}/part-{n:05d}-6f1c3e2a-8b4d-4c1e-9a7f-2d3b4c5d6e7f.c000.snappy.parquet",
                    134_217_728,
                    None,
                    f"{n:032x}",
                )
                for n in range(1000)
            ),
        )
    summary = writer.close()
    assert summary.files == 1_000_000
    aws["s3"].upload_file(str(local), work_bucket, manifest_key)
    state = copy.deepcopy(
        definition.states(json.loads(definition.DEFINITION_PATH.read_text()))["S3 server-side copy"]
    )
    processor = state["ItemProcessor"]
    processor["States"] = {
        "Copy batch": {
            "Type": "Pass",
            "Comment": "Stand-in for the copy: the shape of its result.",
            "Parameters": {"files.$": "States.ArrayLength($.batch.roots)", "bytes": 0},
            "End": True,
        }
    }
    processor["StartAt"] = "Copy batch"
    state.pop("Catch", None)
    state.pop("Retry", None)
    state["End"] = True
    state.pop("Next", None)
    arn = machine({"StartAt": "S3 server-side copy", "States": {"S3 server-side copy": state}})
    plan = {
        "eventId": event,
        "manifestUri": f"s3://{work_bucket}/{manifest_key}",
        "manifestBucket": work_bucket,
        "manifestKey": manifest_key,
        "copyResultsPrefix": f"runs/{event}/copy-batches",
        "copierOptions": {"threads": None, "multipart-threshold-mib": 5120, "part-size-mib": 512},
    }
    started = time.monotonic()
    execution = start(sfn, arn, deploy.execution_name("million"), {"plan": plan})
    outcome = follow(sfn, execution, poll_seconds=1, timeout_seconds=600)
    seconds = time.monotonic() - started
    assert outcome.status == "SUCCEEDED", (outcome.error, outcome.cause)
    largest = largest_state(sfn, execution)
    print(
        f"\n1,000,000 files in {summary.batches} batches through the Map in {seconds:.0f} s; "
        f"largest state: {largest} bytes"
    )
    assert summary.batches >= 1000
    assert largest < LIMIT
    # Each batch's result went to S3 (ResultWriter), none through the state.
    listed = aws["s3"].list_objects_v2(Bucket=work_bucket, Prefix=f"runs/{event}/copy-batches/")
    [manifest] = [
        o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith("manifest.json")
    ]
    files = json.loads(aws["s3"].get_object(Bucket=work_bucket, Key=manifest)["Body"].read())
    succeeded = files["ResultFiles"]["SUCCEEDED"]
    results = json.loads(
        aws["s3"].get_object(Bucket=work_bucket, Key=succeeded[0]["Key"])["Body"].read()
    )
    assert len(results) == summary.batches and files["ResultFiles"]["FAILED"] == []
