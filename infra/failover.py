"""The failover switch: what ``ferry failover`` and ``ferry failback`` invoke in a deployed
environment to turn a config's triggers off and on, stop or wait for its runs and release its
tables' claims (``lambdas/failover_switch.py``, ``ferry.failover.stack_switch``).

The function is the Functions construct's (``FailoverSwitch``); this construct gives it the
stack's resources and a role that may do exactly that, in this environment only:

- ``events:DescribeRule``, ``DisableRule``, ``EnableRule`` on the rules ``ferry-<env>-*`` of
  the default bus (the configs' S3 triggers and Glue catalog events);
- ``scheduler:GetSchedule``, ``UpdateSchedule`` on the schedules of the group
  ``ferry-<env>``, and ``iam:PassRole`` of the schedules' two roles to Scheduler (an
  ``UpdateSchedule`` names its target's role again: AWS checks that the caller may pass it);
  the schedules are encrypted with the stack's key, which it may use;
- ``states:ListExecutions`` of the replication and change window state machines,
  ``DescribeExecution``, ``StopExecution`` of their executions (a table's child execution,
  the holder of its lock, included);
- ``dynamodb:GetItem``, ``Query``, ``DeleteItem`` on the state table: a replica's lock and the
  copy budget's slots (``ferry.replicas.ledger``, ``ferry.copying.budget.dynamodb``).

A person invokes it synchronously (RequestResponse) and reads its answer or its error: no
dead-letter queue, no retries.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ferry.failover.trigger_names import schedule_group
from infra.access import allow
from infra.encryption import Encryption
from infra.settings import EnvironmentSettings
from infra.state import StateTable
from infra.triggers import Triggers

#: What the switch does with the state table: read a lock, read the copy budget's
#: partition, delete a lock, a slot, a place in line.
STATE_ACTIONS = ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:DeleteItem")
RULE_ACTIONS = ("events:DescribeRule", "events:DisableRule", "events:EnableRule")
SCHEDULE_ACTIONS = ("scheduler:GetSchedule", "scheduler:UpdateSchedule")


def rules_of(settings: EnvironmentSettings) -> str:
    """The environment's rules on the default bus: ``rule/ferry-<env>-*``."""
    return f"arn:aws:events:{settings.region}:{settings.account}:rule/ferry-{settings.name}-*"


def schedules_of(settings: EnvironmentSettings) -> str:
    """The schedules of the environment's group: ``schedule/ferry-<env>/*``."""
    group = schedule_group(settings.name)
    return f"arn:aws:scheduler:{settings.region}:{settings.account}:schedule/{group}/*"


class FailoverSwitch(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        function: lambda_.Function,
        replication: sfn.StateMachine,
        changes: sfn.StateMachine,
        state: StateTable,
        triggers: Triggers,
        encryption: Encryption,
    ):
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.function = function
        # The state machines whose runs of a config it stops or waits for.
        function.add_environment(
            "FERRY_FAILOVER_STATE_MACHINES",
            Fn.join(",", [replication.state_machine_arn, changes.state_machine_arn]),
        )
        function.add_environment("FERRY_SCHEDULE_GROUP", schedule_group(settings.name))
        # Its environment, the state table's items and the schedules are encrypted with it.
        encryption.grant_use(function)
        allow(function, RULE_ACTIONS, [rules_of(settings)])
        allow(function, SCHEDULE_ACTIONS, [schedules_of(settings)])
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[triggers.schedule_role.role_arn, triggers.poller_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
            )
        )
        machines = [replication, changes]
        allow(function, ["states:ListExecutions"], [m.state_machine_arn for m in machines])
        executions = [
            stack.format_arn(
                service="states",
                resource="execution",
                resource_name=pattern,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            # Each machine's runs, and the replication's tables' child executions (the
            # holders of the locks: the change window has no Map).
            for pattern in (
                f"ferry-{settings.name}-replication:*",
                f"ferry-{settings.name}-replication/*",
                f"ferry-{settings.name}-catalog-changes:*",
            )
        ]
        allow(function, ["states:DescribeExecution", "states:StopExecution"], executions)
        allow(function, STATE_ACTIONS, [state.table.table_arn])
