"""The failover: what ``ferry failover --environment`` invokes, around the failover switch
(``infra/failover.py``), to check a deployed config's replicas, keep their baselines and
promote them (``lambdas/failover.py``, ``ferry.failover.stack_failover``).

The function is the Functions construct's (``Failover``, in the VPC when the environment has
one: a Hive replica metastore is reached there); this construct gives it a role that may do
exactly that, and nothing else:

- read the deployed configs (their objects in the assets bucket) and the configs' secret,
  and use the stack's key;
- in the replica catalog, read and alter exactly the configured replica tables
  (``DataAccess.promote_replicas``: each table's ARN; a ``table-name-pattern``'s database);
- list the write locations (the baseline's fingerprints of the replica's files) and read an
  Iceberg replica's metadata below them;
- read and write ``failover/`` in the work bucket (the baselines).

It stops no run and turns no trigger off (the switch does), writes no data, reads no source.
A person invokes it synchronously (RequestResponse) and reads its answer or its error: no
dead-letter queue, no retries.
"""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from ferry.failover.baseline import FAILOVER_FOLDER
from infra.access import DataAccess, allow_prefix
from infra.configs import ReplicationConfigs
from infra.encryption import Encryption
from infra.state import ConfigSecret
from infra.storage import WorkBucket

#: Where the baselines are kept in the work bucket (``ferry.failover.baseline``).
FAILOVER_PREFIX = f"{FAILOVER_FOLDER}/"


class FailoverFunction(Construct):
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
        encryption: Encryption,
    ):
        super().__init__(scope, construct_id)
        self.function = function
        encryption.grant_use(function)
        secret.secret.grant_read(function)
        configs.grant_read(function)
        access.promote_replicas(function)
        allow_prefix(
            function, work.bucket.bucket_arn, FAILOVER_PREFIX, ("s3:GetObject", "s3:PutObject")
        )
