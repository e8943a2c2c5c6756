"""The failback: what ``ferry failback --environment`` invokes to plan a deployed config's
failback and to run it (``lambdas/failback.py``, ``ferry.failover.stack_failback``).

The function is the Functions construct's (``Failback``, in the VPC when the environment has
one: a Hive metastore is reached there); this construct gives it a role that may do exactly
what failback does, and nothing else:

- read the deployed configs and the configs' secret, and use the stack's key;
- read both catalogs, and list and read the data below the configured locations (the
  changes since the failover are the files' fingerprints on each side);
- in the replica catalog, read and alter exactly the configured replica tables and their
  partitions (the fingerprints of what came home; the promotion removed);
- what the settings' ``failback`` allows of the sources (nothing without it): alter the
  source tables (the original type, location and parameters back; partitions dropped in DR
  dropped) and write below ``failback.write-locations`` (an Iceberg table's snapshots come
  home from here, ids kept);
- read and write ``failover/`` in the work bucket (baselines, journals, the reverse run's
  record) and write ``configs/failback/`` (the reverse config, which the pipeline reads);
- start the replication state machine (the reverse run) and read its executions;
- forget the reverse replica's ledger entries in the state table.

It turns no trigger on (the switch does). A person invokes it synchronously
(RequestResponse) and reads its answer or its error: no dead-letter queue, no retries.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ferry.failover.stack_failback import REVERSE_FOLDER
from infra.access import DataAccess, allow, allow_prefix
from infra.configs import ReplicationConfigs
from infra.encryption import Encryption
from infra.failover_function import FAILOVER_PREFIX
from infra.state import ConfigSecret, StateTable
from infra.storage import WorkBucket

#: Beyond a failover's: what restoring a replica's partitions does (``Catalog.alter_partitions``).
GLUE_PARTITIONS = ("glue:UpdatePartition", "glue:BatchUpdatePartition")


class FailbackFunction(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        access: DataAccess,
        configs: ReplicationConfigs,
        secret: ConfigSecret,
        work: WorkBucket,
        state: StateTable,
        replication: sfn.StateMachine,
        encryption: Encryption,
        environment: str,
    ):
        super().__init__(scope, construct_id)
        self.function = function
        encryption.grant_use(function)
        secret.secret.grant_read(function)
        configs.grant_read(function)
        access.read_catalogs(function)
        access.read_data(function)
        access.promote_replicas(function, extra=GLUE_PARTITIONS)
        access.write_sources(function, data=True, delete=False, catalog=True)
        access.assume_side_roles(function)
        allow_prefix(
            function, work.bucket.bucket_arn, FAILOVER_PREFIX, ("s3:GetObject", "s3:PutObject")
        )
        allow_prefix(
            function, work.bucket.bucket_arn, f"{REVERSE_FOLDER}/", ("s3:GetObject", "s3:PutObject")
        )
        state.grant_state(function)
        function.add_environment(
            "FERRY_REPLICATION_STATE_MACHINE_ARN", replication.state_machine_arn
        )
        allow(function, ["states:StartExecution"], [replication.state_machine_arn])
        executions = Stack.of(self).format_arn(
            service="states",
            resource="execution",
            # The replication state machine's executions (``infra/pipeline.py`` names it).
            resource_name=f"ferry-{environment}-replication:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        allow(function, ["states:DescribeExecution"], [executions])
