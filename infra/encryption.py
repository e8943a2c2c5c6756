"""The environment's one customer-managed KMS key: buckets, topics, table, secret and logs."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.access import KEY_USE, allow
from infra.removal import KEEP


class Encryption(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, environment: str):
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.key = kms.Key(
            self,
            "Key",
            alias=f"alias/ferry-{environment}",
            description=f"Ferry {environment}: work bucket, topics, state table, secret, logs",
            enable_key_rotation=True,
            removal_policy=KEEP,
        )
        # CloudWatch Logs encrypts the log groups with the key, for this account's groups
        # only. In a key policy "*" is the key itself.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                actions=[
                    "kms:Encrypt*",
                    "kms:Decrypt*",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:Describe*",
                ],
                resources=["*"],
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )  # fmt: skip
        )
        # Alarms publish to the encrypted operations topic; EventBridge Scheduler and rules
        # start executions only (no encrypted payload), so CloudWatch is the one service.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            )
        )

    def grant_use(self, grantee: iam.IGrantable) -> None:
        """Read and write what the key encrypts (S3 objects, messages, items, secrets)."""
        allow(grantee, KEY_USE, [self.key.key_arn])
