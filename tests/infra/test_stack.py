"""The CDK app synthesizes, and its resources are configured as Ferry needs them."""

import pytest
from aws_cdk.assertions import Match, Template

from infra.app import build_app

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    app = build_app(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    return Template.from_stack(app.node.find_child("Ferry-dev"))


def test_replication_events_topic_enforces_tls(template):
    template.has_resource_properties(
        "AWS::SNS::Topic", {"TopicName": "ferry-dev-replication-events"}
    )
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_work_bucket_is_private_encrypted_and_expires_manifests(template):
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "Properties": {
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                    ]
                },
                "PublicAccessBlockConfiguration": {
                    "BlockPublicAcls": True,
                    "BlockPublicPolicy": True,
                    "IgnorePublicAcls": True,
                    "RestrictPublicBuckets": True,
                },
                "LifecycleConfiguration": {
                    "Rules": [{"ExpirationInDays": 30, "Prefix": "manifests/", "Status": "Enabled"}]
                },
            },
            "DeletionPolicy": "Retain",
        },
    )


def test_outputs_name_the_topic_and_bucket(template):
    outputs = template.to_json()["Outputs"]
    assert {"ReplicationEventsTopicArn", "WorkBucketName"} <= set(outputs)
