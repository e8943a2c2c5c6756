"""The stack's messaging resources, created in the emulator (``ferry.local.stack``): the SNS
topics with their policies, the SQS dead-letter queues with theirs."""

from __future__ import annotations

import json
from typing import Any

from ferry.local.stack_context import Creator, StackContext


def topic(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    name = properties.get("TopicName") or stack.name(logical, limit=256)
    attributes = {
        key: str(properties[field_name])
        for field_name, key in (
            ("DisplayName", "DisplayName"),
            ("KmsMasterKeyId", "KmsMasterKeyId"),
        )
        if properties.get(field_name)
    }
    arn = stack.client("sns").create_topic(Name=name, Attributes=attributes)["TopicArn"]
    stack.set(logical, arn, TopicArn=arn, TopicName=name)


def topic_policy(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    for topic in properties["Topics"]:
        stack.client("sns").set_topic_attributes(
            TopicArn=topic,
            AttributeName="Policy",
            AttributeValue=json.dumps(properties["PolicyDocument"]),
        )
    stack.set(logical, logical)


def queue(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    sqs = stack.client("sqs")
    name = properties.get("QueueName") or stack.name(logical, limit=80)
    attributes = {
        key: str(properties[key])
        for key in (
            "KmsMasterKeyId",
            "KmsDataKeyReusePeriodSeconds",
            "MessageRetentionPeriod",
            "VisibilityTimeout",
        )
        if key in properties
    }
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    if attributes:  # a redeploy: the queue exists, its settings follow the template
        sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
    arn = f"arn:aws:sqs:{stack.region}:{stack.account}:{name}"
    stack.set(logical, url, Arn=arn, QueueName=name, QueueUrl=url)


def queue_policy(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    for url in properties["Queues"]:
        stack.client("sqs").set_queue_attributes(
            QueueUrl=url, Attributes={"Policy": json.dumps(properties["PolicyDocument"])}
        )
    stack.set(logical, logical)


#: The creator of each resource type of this module, by CloudFormation type.
CREATORS: dict[str, Creator] = {
    "AWS::SNS::Topic": topic,
    "AWS::SNS::TopicPolicy": topic_policy,
    "AWS::SQS::Queue": queue,
    "AWS::SQS::QueuePolicy": queue_policy,
}
