"""The stack's storage resources, created in the emulator (``ferry.local.stack``): the
buckets and their policies, the DynamoDB table, the log groups."""

from __future__ import annotations

import json
from typing import Any

from ferry.local.stack_context import Creator, StackContext


def bucket(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    s3 = stack.client("s3")
    name = properties.get("BucketName") or stack.name(logical, lower=True)
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if name not in existing:
        if stack.region == "us-east-1":
            s3.create_bucket(Bucket=name)
        else:
            s3.create_bucket(
                Bucket=name, CreateBucketConfiguration={"LocationConstraint": stack.region}
            )
    encryption = properties.get("BucketEncryption")
    if encryption:  # CloudFormation's names for the API's
        rules = [
            {
                "ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"],
                **(
                    {"BucketKeyEnabled": rule["BucketKeyEnabled"]}
                    if "BucketKeyEnabled" in rule
                    else {}
                ),
            }
            for rule in encryption["ServerSideEncryptionConfiguration"]
        ]
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
    arn = f"arn:aws:s3:::{name}"
    stack.set(
        logical,
        name,
        Arn=arn,
        DomainName=f"{name}.s3.amazonaws.com",
        RegionalDomainName=f"{name}.s3.{stack.region}.amazonaws.com",
    )


def bucket_policy(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    stack.client("s3").put_bucket_policy(
        Bucket=properties["Bucket"], Policy=json.dumps(properties["PolicyDocument"])
    )
    stack.set(logical, properties["Bucket"])


def table(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    dynamodb = stack.client("dynamodb")
    name = properties.get("TableName") or stack.name(logical, limit=255)
    if name not in dynamodb.list_tables()["TableNames"]:
        dynamodb.create_table(
            TableName=name,
            KeySchema=properties["KeySchema"],
            AttributeDefinitions=properties["AttributeDefinitions"],
            BillingMode=properties.get("BillingMode", "PROVISIONED"),
        )
    arn = dynamodb.describe_table(TableName=name)["Table"]["TableArn"]
    stack.set(logical, name, Arn=arn)


def log_group(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    logs = stack.client("logs")
    name = properties.get("LogGroupName") or stack.name(logical, limit=512)
    found = logs.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
    if not any(group["logGroupName"] == name for group in found):
        logs.create_log_group(logGroupName=name)
    arn = f"arn:aws:logs:{stack.region}:{stack.account}:log-group:{name}:*"
    stack.set(logical, name, Arn=arn)


#: The creator of each resource type of this module, by CloudFormation type.
CREATORS: dict[str, Creator] = {
    "AWS::S3::Bucket": bucket,
    "AWS::S3::BucketPolicy": bucket_policy,
    "AWS::DynamoDB::Table": table,
    "AWS::Logs::LogGroup": log_group,
}
