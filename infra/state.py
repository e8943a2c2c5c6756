"""Ferry's state on AWS: one DynamoDB table of replica locks and the snapshot ledger, and the
secret that holds the configs' secret placeholders."""

from __future__ import annotations

from aws_cdk import SecretValue
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from ferry.copying.budget.dynamodb import BUDGET_KEY
from infra.access import allow
from infra.removal import KEEP


class StateTable(Construct):
    """The key schema of ``ferry.replicas.ledger.dynamodb_table.create_state_table`` (pk, sk)."""

    def __init__(self, scope: Construct, construct_id: str, *, environment: str, key: kms.IKey):
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=f"ferry-{environment}-state",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=key,
            # The ledger is the only record of which snapshots may be deleted: keep it, with
            # its history. (Not with deletion protection: a failed first deploy could not then
            # roll the new table back, and the stack would be stuck in ROLLBACK_FAILED.)
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=KEEP,
        )

    #: What ``ferry.replicas.ledger.DynamoDbStateStore`` calls: locks, ledger entries and outcomes,
    #: by key (a failure's outcome is one ``UpdateItem``; outcomes are read in batches).
    ACTIONS = (
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
        "dynamodb:UpdateItem",
        "dynamodb:BatchGetItem",
    )

    #: What reading the replicas' outcomes calls (the freshness check): no write.
    READ_ACTIONS = ("dynamodb:BatchGetItem",)

    def grant_state(self, grantee: iam.IGrantable) -> None:
        allow(grantee, self.ACTIONS, [self.table.table_arn])

    #: The partition keys of the change feeds' items (``ferry.feeds.windows``): a window is
    #: ``changes#<config URI>``, a notification log's position ``feed#<config URI>``.
    FEED_KEYS = ("changes#*", "feed#*")

    def grant_feed_state(self, grantee: iam.IGrantable, actions: tuple[str, ...]) -> None:
        """``actions`` on the change feeds' items only: not on a lock nor the ledger.

        ``dynamodb:LeadingKeys`` is the partition key a request names. ``ForAllValues``
        would match a request that names none, but each of these item actions, and a Query's
        key condition, names exactly one (the local runtime's emulator gives the key too:
        ``ferry.local.iam_actions``).
        """
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=list(actions),
                resources=[self.table.table_arn],
                conditions={
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(self.FEED_KEYS)}
                },
            )
        )

    #: What ``ferry.copying.budget.dynamodb.DynamoDbSlots`` calls: one Query of the budget's
    #: partition, conditional puts of a slot, deletes of a slot or a waiting claim.
    BUDGET_ACTIONS = ("dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem")

    def grant_budget_state(self, grantee: iam.IGrantable) -> None:
        """The copy budget's actions on its own partition (``copy-budget``) only."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=list(self.BUDGET_ACTIONS),
                resources=[self.table.table_arn],
                conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [BUDGET_KEY]}},
            )
        )


class ConfigSecret(Construct):
    """A JSON object of placeholder values (metastore URIs, credentials) set after deploy.

    The template gives the secret one value, the same for every environment and every
    change of ``secret-variables``: an empty object. CloudFormation writes a secret's value
    only when that property changes (and draws a new one whenever a ``GenerateSecretString``
    changes), so a redeploy never writes over what an operator put. The names the configs
    expect are elsewhere: the stack's output ``ConfigSecretVariables`` and the functions'
    ``FERRY_CONFIG_SECRET_VARIABLES``, with which a run that lacks one refuses to start and
    names it (``lambdas/runtime.py``), as ``ferry doctor`` does before the first run.
    """

    #: The secret's value in the template: never anything an operator's values could be.
    INITIAL_VALUE = "{}"

    def __init__(
        self, scope: Construct, construct_id: str, *, environment: str, key: kms.IKey,
        names: list[str],
    ):  # fmt: skip
        super().__init__(scope, construct_id)
        self.names = sorted(names)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            secret_name=f"ferry/{environment}/config-variables",
            description=(
                "Values of the replication configs' secret placeholders, as a JSON object; "
                "the names are the stack's output ConfigSecretVariables"
            ),
            encryption_key=key,
            secret_string_value=SecretValue.unsafe_plain_text(self.INITIAL_VALUE),
            removal_policy=KEEP,
        )
