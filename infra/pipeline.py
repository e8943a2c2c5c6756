"""The state machines, from the one definition the local runtime runs too.

``ferry/statemachine/replication.asl.json`` (and ``housekeeping.asl.json``) are deployed as
they are, their ``${...}`` placeholders filled by definition substitutions: the functions'
ARNs, the Spark application, its job role, entry point and packed environment. Executions
are logged at ALL to an encrypted log group and traced with X-Ray. How long an execution may
run is each definition's own ``TimeoutSeconds`` (the CDK's ``timeout=`` does not reach a
definition given as a string).
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ferry import statemachine
from infra.access import allow, allow_prefix
from infra.encryption import Encryption
from infra.functions import Functions, retention
from infra.removal import KEEP
from infra.settings import EnvironmentSettings
from infra.spark import SparkCopy
from infra.storage import RUNS_PREFIX, WorkBucket

#: The rule Step Functions manages to learn that a ``.sync`` EMR Serverless job ended.
EMR_SYNC_RULE = "StepFunctionsGetEventsForEMRServerlessJobRule"
#: The rule Step Functions manages to learn that a ``.sync`` child execution ended (the
#: change window's run of the replication state machine).
STATES_SYNC_RULE = "StepFunctionsGetEventsForStepFunctionsExecutionRule"


def substitutions(functions: Functions, spark: SparkCopy) -> dict[str, str]:
    """The values of every placeholder of both definitions."""
    values = {
        f"{name}FunctionArn": function.function_arn for name, function in functions.by_name.items()
    }
    values.update(
        {
            "SparkApplicationId": spark.application_id,
            "SparkJobRoleArn": spark.job_role.role_arn,
            "CopyJobEntryPoint": spark.assets.entry_point_uri,
            "SparkSubmitParameters": spark.assets.submit_parameters(),
        }
    )
    return values


class Pipeline(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        encryption: Encryption,
        work: WorkBucket,
        functions: Functions,
        spark: SparkCopy,
    ):
        super().__init__(scope, construct_id)
        values = substitutions(functions, spark)
        self.replication = self._state_machine(
            "Replication",
            f"ferry-{settings.name}-replication",
            statemachine.DEFINITION_PATH,
            values,
            settings,
            encryption,
        )
        self.housekeeping = self._state_machine(
            "Housekeeping",
            f"ferry-{settings.name}-housekeeping",
            statemachine.HOUSEKEEPING_PATH,
            values,
            settings,
            encryption,
        )
        replication_name = f"ferry-{settings.name}-replication"
        changes_name = f"ferry-{settings.name}-catalog-changes"
        self.changes = self._state_machine(
            "CatalogChanges",
            changes_name,
            statemachine.CHANGES_PATH,
            {**values, "ReplicationStateMachineArn": self.replication.state_machine_arn},
            settings,
            encryption,
        )
        for machine, names in (
            (self.replication, statemachine.FUNCTIONS),
            (self.housekeeping, statemachine.HOUSEKEEPING_FUNCTIONS),
            (self.changes, statemachine.CHANGES_FUNCTIONS),
        ):
            # The definitions invoke each function by its unqualified ARN: no version, no alias.
            allow(
                machine,
                ["lambda:InvokeFunction"],
                [functions.by_name[name].function_arn for name in names],
            )

        self._run_replications(self.changes.role, replication_name)
        self._let_functions_watch(functions, replication_name, changes_name)
        self._let_replication_run(settings, encryption, work, spark)

    def _let_functions_watch(
        self, functions: Functions, replication_name: str, changes_name: str
    ) -> None:
        """The feeds start change windows and look at them; Plan and Claim copy slot look at
        the table executions that hold a lock or a slot."""
        stack = Stack.of(self)
        # The feeds start the change window by name and look at a window's execution.
        for name in statemachine.FEED_FUNCTIONS:
            function = functions.by_name[name]
            function.add_environment(
                "FERRY_CHANGES_STATE_MACHINE_ARN", self.changes.state_machine_arn
            )
            allow(function, ["states:StartExecution"], [self.changes.state_machine_arn])
            allow(function, ["states:DescribeExecution"], [_executions_of(stack, changes_name)])

        # Plan takes over a replica's lock whose holder, a table's execution (a child of the
        # Map over the tables), has ended without releasing it (stopped, timed out); Claim
        # copy slot takes over such a holder's copy slot.
        for name in ("Plan", "CopySlot"):
            allow(
                functions.by_name[name],
                ["states:DescribeExecution"],
                # A child's ARN on AWS; the parent's where a Map's children share its context.
                [_children_of(stack, replication_name), _executions_of(stack, replication_name)],
            )

    def _let_replication_run(
        self, settings: EnvironmentSettings, encryption: Encryption, work: WorkBucket,
        spark: SparkCopy,
    ) -> None:  # fmt: skip
        """The replication state machine's role: its Distributed Maps' files and children,
        their redrive, and the Spark copy's jobs."""
        stack = Stack.of(self)
        role = self.replication.role
        # The Maps over the tables and over the S3 copy's batches are Distributed Maps: they
        # read their items from the run's files (ItemReader), write their children's results
        # there (ResultWriter: multipart uploads of the result files) and run child executions
        # of this state machine. The work bucket is encrypted with the environment's key.
        allow_prefix(
            role,
            work.bucket.bucket_arn,
            RUNS_PREFIX,
            ("s3:GetObject", "s3:PutObject", "s3:ListMultipartUploadParts",
             "s3:AbortMultipartUpload"),
        )  # fmt: skip
        allow(role, ["kms:Decrypt", "kms:GenerateDataKey"], [encryption.key.key_arn])
        machine_name = f"ferry-{settings.name}-replication"
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"],
                resources=[_state_machine_arn(stack, machine_name)],
            )  # fmt: skip
        )
        # A redrive of an execution redrives its Map Runs' unsuccessful children in place
        # (RedriveExecution on each, with this role).
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[
                    "states:DescribeExecution",
                    "states:StopExecution",
                    "states:RedriveExecution",
                ],
                resources=[_children_of(stack, machine_name)],
            )  # fmt: skip
        )
        # The Spark copy: start, watch and cancel its jobs, hand it its role.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["emr-serverless:StartJobRun"], resources=[spark.application_arn]
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["emr-serverless:GetJobRun", "emr-serverless:CancelJobRun"],
                resources=[f"{spark.application_arn}/jobruns/*"],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[spark.job_role.role_arn],
                conditions={
                    "StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}
                },
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
                resources=[
                    stack.format_arn(service="events", resource="rule", resource_name=EMR_SYNC_RULE)
                ],
            )
        )

    @staticmethod
    def _run_replications(role: iam.IRole, machine_name: str) -> None:
        """What ``states:startExecution.sync:2`` of the replication state machine needs:
        start it, watch and stop its executions, and the rule Step Functions manages to
        hear that one ended (AWS's policy for a synchronous nested execution)."""
        stack = Stack.of(role)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"],
                resources=[_state_machine_arn(stack, machine_name)],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=[_executions_of(stack, machine_name)],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
                resources=[
                    stack.format_arn(
                        service="events", resource="rule", resource_name=STATES_SYNC_RULE
                    )
                ],
            )
        )

    def _state_machine(
        self, construct_id: str, name: str, path: Path, values: dict[str, str],
        settings: EnvironmentSettings, encryption: Encryption,
    ) -> sfn.StateMachine:  # fmt: skip
        wanted = statemachine.placeholders(path)
        log_group = logs.LogGroup(
            self,
            f"{construct_id}Logs",
            # The vended-logs prefix keeps Step Functions' log resource policy small.
            log_group_name=f"/aws/vendedlogs/states/{name}",
            retention=retention(settings.log_retention_days),
            encryption_key=encryption.key,
            removal_policy=KEEP,
        )
        return sfn.StateMachine(
            self,
            construct_id,
            state_machine_name=name,
            # Inline, as the file is: the template shows the definition that runs.
            definition_body=sfn.DefinitionBody.from_string(path.read_text()),
            definition_substitutions={k: v for k, v in values.items() if k in wanted},
            logs=sfn.LogOptions(
                destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
            tracing_enabled=True,
        )


def _state_machine_arn(stack: Stack, machine_name: str) -> str:
    """The ARN of the state machine named ``machine_name`` (known before it is created)."""
    return stack.format_arn(
        service="states",
        resource="stateMachine",
        resource_name=machine_name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


def _children_of(stack: Stack, machine_name: str) -> str:
    """The ARN pattern of every child execution of the Distributed Maps of ``machine_name``
    (``execution:<machine>/<Map Run label>:<child>``)."""
    return stack.format_arn(
        service="states",
        resource="execution",
        resource_name=f"{machine_name}/*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


def _executions_of(stack: Stack, machine_name: str) -> str:
    """The ARN pattern of every execution of the state machine named ``machine_name``."""
    return stack.format_arn(
        service="states",
        resource="execution",
        resource_name=f"{machine_name}:*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
