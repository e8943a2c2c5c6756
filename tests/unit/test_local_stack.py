"""The local runtime's deploy of a template (``ferry.local.stack``), on moto's in-process
backends: each resource is created by the creator of its type, with what ``Ref`` and
``Fn::GetAtt`` give on AWS; a redeploy converges on the same resources; a type the emulator
cannot hold is named in one error and nothing is created."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ferry.local import stack
from ferry.local.template import TemplateError

REGION, ACCOUNT = "us-east-1", "123456789012"

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}

TEMPLATE = {
    "Resources": {
        "Role": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": TRUST}},
        "Key": {"Type": "AWS::KMS::Key", "Properties": {"Description": "data", "KeyPolicy": {}}},
        "Bucket": {
            "Type": "AWS::S3::Bucket",
            "Properties": {
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        {
                            "ServerSideEncryptionByDefault": {
                                "SSEAlgorithm": "aws:kms",
                                "KMSMasterKeyID": {"Fn::GetAtt": ["Key", "Arn"]},
                            },
                            "BucketKeyEnabled": True,
                        }
                    ]
                }
            },
        },
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"KmsMasterKeyId": {"Ref": "Key"}}},
        "DeadLetters": {"Type": "AWS::SQS::Queue", "Properties": {"MessageRetentionPeriod": 1209600}},
        "State": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
            },
        },
        "Alarm": {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "Namespace": "AWS/SQS",
                "MetricName": "ApproximateNumberOfMessagesVisible",
                "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["DeadLetters", "QueueName"]}}],
                "Statistic": "Maximum",
                "Period": 60,
                "EvaluationPeriods": 1,
                "Threshold": 0,
                "ComparisonOperator": "GreaterThanThreshold",
                "AlarmActions": [{"Ref": "Topic"}],
            },
        },
    },
    "Outputs": {
        "RoleArn": {"Value": {"Fn::GetAtt": ["Role", "Arn"]}},
        "BucketName": {"Value": {"Ref": "Bucket"}},
        "TopicArn": {"Value": {"Ref": "Topic"}},
        "QueueArn": {"Value": {"Fn::GetAtt": ["DeadLetters", "Arn"]}},
        "TableArn": {"Value": {"Fn::GetAtt": ["State", "Arn"]}},
        "AlarmArn": {"Value": {"Fn::GetAtt": ["Alarm", "Arn"]}},
    },
}


@pytest.fixture
def session(monkeypatch):
    # moto's in-process backends: not the session's emulator.
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )


def deploy(session, template: dict) -> dict:
    def client(service: str, region: str | None = None):
        return session.client(service, region_name=region or REGION)

    return stack.Deployment(template, "Unit", ACCOUNT, REGION, client).deploy()


def test_each_resource_is_created_as_its_type_says_and_a_redeploy_converges(session):
    outputs = deploy(session, TEMPLATE)

    s3, sns = session.client("s3"), session.client("sns")
    rule = s3.get_bucket_encryption(Bucket=outputs["BucketName"])[
        "ServerSideEncryptionConfiguration"
    ]["Rules"][0]
    key_arn = rule["ApplyServerSideEncryptionByDefault"]["KMSMasterKeyID"]
    assert key_arn.startswith(f"arn:aws:kms:{REGION}:{ACCOUNT}:key/")
    assert rule["BucketKeyEnabled"] is True
    topic = sns.get_topic_attributes(TopicArn=outputs["TopicArn"])["Attributes"]
    assert topic["KmsMasterKeyId"] == key_arn.rsplit("/", 1)[1]
    [alarm] = session.client("cloudwatch").describe_alarms()["MetricAlarms"]
    assert alarm["AlarmArn"] == outputs["AlarmArn"]
    assert alarm["AlarmActions"] == [outputs["TopicArn"]]
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": outputs["QueueArn"].rsplit(":", 1)[1]}
    ]
    assert outputs["TableArn"] == f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{outputs['TableArn'].rsplit('/', 1)[1]}"

    assert deploy(session, TEMPLATE) == outputs
    assert len(session.client("kms").list_keys()["Keys"]) == 1
    assert len(session.client("iam").list_roles()["Roles"]) == 1
    assert len(s3.list_buckets()["Buckets"]) == 1


def test_a_type_the_emulator_cannot_hold_is_named_and_nothing_is_created(session):
    template = {
        "Resources": {
            **TEMPLATE["Resources"],
            "Cluster": {"Type": "AWS::EKS::Cluster", "Properties": {}},
        }
    }
    with pytest.raises(TemplateError) as refused:
        deploy(session, template)

    assert str(refused.value) == "the local runtime cannot deploy AWS::EKS::Cluster (Cluster)"
    assert session.client("iam").list_roles()["Roles"] == []
    assert session.client("s3").list_buckets()["Buckets"] == []
