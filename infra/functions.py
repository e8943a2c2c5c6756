"""One Lambda function per state of the definitions, all from one code asset.

Each function has its own role with what its step needs and nothing more (``NEEDS``), its
own log group (retention, encrypted), X-Ray tracing, and the environment that
``lambdas/runtime.py`` reads. The functions that talk to Hive metastores run in the
environment's VPC when it has one. The functions no state machine invokes (the catalog
change feeds', started by a rule or a schedule, and the freshness check, by a schedule) send
an invocation that failed its retries to a dead-letter queue of their own
(``infra/dead_letters.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ferry import statemachine
from ferry.freshness.metrics import NAMESPACE as METRICS_NAMESPACE
from infra import bundling
from infra.access import DataAccess, allow, allow_prefix, trusted_service
from infra.assets import lambda_code
from infra.configs import ReplicationConfigs
from infra.dead_letters import ASYNC_MAX_EVENT_AGE, ASYNC_RETRY_ATTEMPTS, dead_letter_queue
from infra.encryption import Encryption
from infra.grants_access import allow_grants
from infra.network import Network, allow_network_interfaces, network
from infra.removal import KEEP
from infra.settings import EnvironmentSettings
from infra.state import ConfigSecret, StateTable
from infra.storage import CONFIGS_PREFIX, HOUSEKEEPING_PREFIX, RUNS_PREFIX, WorkBucket

CATALOGS, WRITE_CATALOG, READ_DATA, WRITE_REPLICAS, DELETE_REPLICAS, STATE, PUBLISH = (
    "catalogs", "write-catalog", "read-data", "write-replicas", "delete-replicas", "state",
    "publish",
)  # fmt: skip
#: Writes its report under the work bucket's ``housekeeping/``.
HOUSEKEEPING_REPORTS = "housekeeping-reports"
#: The change feeds' windows and positions in the state table, and nothing else of it.
FEED_STATE = "feed-state"
#: Reads the state table (outcomes, locks), writes nothing of it.
READ_STATE = "read-state"
#: PutMetricData in the namespace ``Ferry`` only (``cloudwatch:namespace``).
PUT_METRICS = "put-metrics"
#: The copy budget's slots and line in the state table (``ferry.copying.budget.dynamodb``) only.
BUDGET_STATE = "budget-state"
#: Reads and alters the configured replica tables (``DataAccess.promote_replicas``).
PROMOTE_REPLICAS = "promote-replicas"
#: Reads both sides' Lake Formation grants and checks the replica's (``infra/grants_access.py``).
READ_GRANTS = "read-grants"
#: Gives and revokes the replica's Lake Formation grants and LF-tags.
WRITE_GRANTS = "write-grants"
#: Failback's reverse run, as the settings' ``failback`` allows: its snapshots below the
#: sources' locations, the source tables (``DataAccess.write_sources``).
FAILBACK = "failback"

#: What each function's step does besides reading its config and its run's files.
NEEDS: dict[str, frozenset[str]] = {
    "ResolveTables": frozenset({CATALOGS}),  # expands patterns and databases
    # Lock, START, diff, listing (an Iceberg table's metadata read too): it writes only its
    # run's own files in the work bucket, never below a replica.
    "Plan": frozenset({CATALOGS, READ_DATA, STATE, PUBLISH, READ_GRANTS}),
    # A copy removes an object of its own snapshot that fails verification (corrupt, short,
    # its source changed): nothing wrong is left where the commit would point.
    "InlineCopy": frozenset({READ_DATA, WRITE_REPLICAS, DELETE_REPLICAS, FAILBACK}),
    "S3CopyBatch": frozenset({READ_DATA, WRITE_REPLICAS, DELETE_REPLICAS, FAILBACK}),
    # Reads the plan (its table's priority), takes a copy slot or waits in line.
    "CopySlot": frozenset({BUDGET_STATE}),
    # Avro schema copies, an Iceberg replica's manifest lists and metadata.json, the replica's
    # catalog, the ledger of superseded snapshots.
    "Commit": frozenset(
        {CATALOGS, WRITE_CATALOG, READ_DATA, WRITE_REPLICAS, STATE, FAILBACK, WRITE_GRANTS}
    ),
    "NotifySuccess": frozenset({STATE, PUBLISH}),  # SUCCESS, then the lock is released
    # Removes an unreferenced snapshot (asking the catalog first), FAILURE, the lock.
    "Abort": frozenset(
        {CATALOGS, WRITE_CATALOG, READ_DATA, DELETE_REPLICAS, STATE, PUBLISH, FAILBACK}
    ),
    # Reads the tables' outcomes (the Map's results in the work bucket); aborts a table whose
    # iteration failed where no Catch takes the error, as Abort does.
    "Summarize": frozenset(
        {CATALOGS, WRITE_CATALOG, READ_DATA, DELETE_REPLICAS, STATE, PUBLISH, FAILBACK}
    ),
    "Housekeeping": frozenset({CATALOGS, READ_DATA, DELETE_REPLICAS, STATE, HOUSEKEEPING_REPORTS}),
    # The catalog change feeds (ferry.feeds) keep their windows and positions in the state
    # table under keys of their own (FEED_STATE_ACTIONS). The intake of Glue's events reads
    # no catalog; the poller reads the Hive notification log (and, after a gap, lists the
    # source's tables); Claim changes asks both catalogs whether the table is still there.
    "CatalogEvents": frozenset({FEED_STATE}),
    "CatalogPoller": frozenset({CATALOGS, FEED_STATE}),
    "ClaimChanges": frozenset({CATALOGS, FEED_STATE}),
    "CloseWindow": frozenset({FEED_STATE}),
    # Measures every table's freshness from both catalogs and the state table (no data, no
    # copy, no lock) and publishes it (ferry.freshness.metrics).
    "FreshnessCheck": frozenset({CATALOGS, READ_STATE, PUT_METRICS}),
    # Turns a config's rules and schedules off and on, stops its runs, releases its claims:
    # nothing of the data, the catalogs or the configs (infra/failover.py grants it all).
    "FailoverSwitch": frozenset(),
    # Checks, baselines and promotes a config's replicas (infra/failover_function.py grants
    # it): the replica catalog only, reached through the VPC when it is a Hive metastore.
    "Failover": frozenset({PROMOTE_REPLICAS}),
    # Plans and runs a config's failback (infra/failback_function.py grants it): both
    # catalogs, so in the VPC when the environment has one.
    "Failback": frozenset({CATALOGS, PROMOTE_REPLICAS}),
}

#: The state table's actions each feed function calls (``ferry.feeds.FeedState``): notes and
#: positions are conditional updates, a claim reads then updates, a close deletes; the
#: intake and the poller query the config's open windows for one to resume.
FEED_STATE_ACTIONS: dict[str, tuple[str, ...]] = {
    "CatalogEvents": ("dynamodb:UpdateItem", "dynamodb:Query"),
    "CatalogPoller": ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"),
    "ClaimChanges": ("dynamodb:GetItem", "dynamodb:UpdateItem"),
    "CloseWindow": ("dynamodb:DeleteItem",),
}


@dataclass(frozen=True)
class Sizing:
    memory_mb: int
    timeout: Duration


#: Copies and plans stream many files: memory buys network and CPU in Lambda.
SIZING = {
    "Plan": Sizing(3008, Duration.minutes(15)),
    "InlineCopy": Sizing(3008, Duration.minutes(15)),
    "S3CopyBatch": Sizing(1024, Duration.minutes(15)),
    "Commit": Sizing(1024, Duration.minutes(15)),
    "Abort": Sizing(1024, Duration.minutes(15)),
    "Housekeeping": Sizing(1024, Duration.minutes(15)),
    "Summarize": Sizing(1024, Duration.minutes(15)),  # may abort tables no Catch took
    # Polls for up to ferry.feeds.trigger_events.POLL_SECONDS, then returns: a schedule starts it
    # every minute, so one run ends about when the next starts.
    "CatalogPoller": Sizing(512, Duration.seconds(90)),
    # Every table of every config, a few catalog calls each (16 at once): seconds for a
    # thousand tables. A check that overlaps the next one only reads.
    "FreshnessCheck": Sizing(1024, Duration.minutes(5)),
    # Waits up to 14 minutes for a config's runs to end (``ferry failover --wait``).
    "FailoverSwitch": Sizing(512, Duration.minutes(15)),
    # Lists every partition's files of each failing-over replica (its baseline).
    "Failover": Sizing(1024, Duration.minutes(15)),
    # Lists both sides' files of each table (its changes), writes Iceberg snapshots home.
    "Failback": Sizing(2048, Duration.minutes(15)),
}
DEFAULT_SIZING = Sizing(512, Duration.minutes(5))


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: EnvironmentSettings,
        encryption: Encryption,
        work: WorkBucket,
        state: StateTable,
        secret: ConfigSecret,
        access: DataAccess,
        configs: ReplicationConfigs,
    ):
        super().__init__(scope, construct_id)
        code = lambda_code()
        vpc = network(self, settings)
        self.by_name: dict[str, lambda_.Function] = {}
        #: The dead-letter queue of each function started outside Step Functions.
        self.dead_letters: dict[str, sqs.Queue] = {}
        environment = _environment(settings, work, state, secret)
        for name, handler in statemachine.ALL_FUNCTIONS.items():
            function, role = self._function(
                name, handler, code=code, vpc=vpc, environment=environment,
                settings=settings, encryption=encryption,
            )  # fmt: skip
            needs = NEEDS[name]
            if name not in statemachine.OPERATOR_FUNCTIONS:  # infra/failover.py grants it
                self._grant(
                    function, needs, work, state, secret, access, encryption, configs,
                    runs=name not in statemachine.CHECK_FUNCTIONS,  # a check has no run's files
                )  # fmt: skip
            if FEED_STATE in needs:
                state.grant_feed_state(function, FEED_STATE_ACTIONS[name])
            if BUDGET_STATE in needs:
                state.grant_budget_state(function)
            self.by_name[name] = function
            if name in statemachine.OUT_OF_BAND_FUNCTIONS:
                self.dead_letters[name] = self._on_failure(
                    function, role, name, settings, encryption
                )

    def _function(
        self, name: str, handler: str, *, code: lambda_.Code, vpc: Network | None,
        environment: dict[str, str], settings: EnvironmentSettings, encryption: Encryption,
    ) -> tuple[lambda_.Function, iam.Role]:  # fmt: skip
        """One state's function, its role and its log group (in the VPC when it talks to
        the catalogs)."""
        needs = NEEDS[name]
        sizing = SIZING.get(name, DEFAULT_SIZING)
        role = iam.Role(
            self,
            f"{name}Role",
            # Lambda sets aws:SourceAccount, not aws:SourceArn, for an execution role.
            assumed_by=trusted_service("lambda.amazonaws.com", settings.account),
            description=f"Ferry {settings.name}: the {name} step",
        )
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            log_group_name=f"/aws/lambda/ferry-{settings.name}-{kebab(name)}",
            retention=retention(settings.log_retention_days),
            encryption_key=encryption.key,
            removal_policy=KEEP,
        )
        in_vpc = vpc is not None and bool(needs & {CATALOGS, PROMOTE_REPLICAS})
        function = lambda_.Function(
            self,
            name,
            function_name=f"ferry-{settings.name}-{kebab(name)}",
            description=f"Ferry: the {name} state ({handler})",
            runtime=bundling.LAMBDA_RUNTIME,
            architecture=bundling.LAMBDA_ARCHITECTURE,
            handler=handler,
            code=code,
            role=role,
            memory_size=sizing.memory_mb,
            timeout=sizing.timeout,
            environment=environment,
            environment_encryption=encryption.key,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            **(vpc.options() if in_vpc and vpc else {}),
        )
        log_group.grant_write(role)
        if in_vpc:
            allow_network_interfaces(role)
        return function, role

    def _on_failure(
        self, function: lambda_.Function, role: iam.Role, name: str,
        settings: EnvironmentSettings, encryption: Encryption,
    ) -> sqs.Queue:  # fmt: skip
        """A rule or a schedule invokes ``function`` asynchronously: Lambda retries a failed
        invocation twice, then sends AWS's record of it (the event and the error) to the
        function's dead-letter queue, with the function's role."""
        queue = dead_letter_queue(
            self,
            f"{name}DeadLetters",
            name=f"ferry-{settings.name}-{kebab(name)}-dead-letters",
            key=encryption.key,
            what=f"an invocation of the {name} function that failed its retries",
        )
        allow(role, ["sqs:SendMessage"], [queue.queue_arn])
        config = lambda_.CfnEventInvokeConfig(
            self,
            f"{name}OnFailure",
            function_name=function.function_name,
            qualifier="$LATEST",
            maximum_retry_attempts=ASYNC_RETRY_ATTEMPTS,
            maximum_event_age_in_seconds=int(ASYNC_MAX_EVENT_AGE.to_seconds()),
            destination_config=lambda_.CfnEventInvokeConfig.DestinationConfigProperty(
                on_failure=lambda_.CfnEventInvokeConfig.OnFailureProperty(
                    destination=queue.queue_arn
                )
            ),
        )
        # Lambda checks at configuration that the role may send to the destination.
        config.node.add_dependency(role)
        return queue

    def _grant(
        self, function: lambda_.Function, needs: frozenset[str], work: WorkBucket,
        state: StateTable, secret: ConfigSecret, access: DataAccess, encryption: Encryption,
        configs: ReplicationConfigs, *, runs: bool = True,
    ) -> None:  # fmt: skip
        encryption.grant_use(function)
        secret.secret.grant_read(function)
        configs.grant_read(function)
        allow(function, ["s3:GetObject"], [work.bucket.arn_for_objects(f"{CONFIGS_PREFIX}*")])
        if runs:
            allow_prefix(
                function, work.bucket.bucket_arn, RUNS_PREFIX, ("s3:GetObject", "s3:PutObject")
            )
        if CATALOGS in needs:
            access.read_catalogs(function)
        if WRITE_CATALOG in needs:
            access.write_replica_catalog(function)
        if needs & {READ_GRANTS, WRITE_GRANTS}:
            allow_grants(
                function, access.settings.configs.values(), access.settings.account,
                write=WRITE_GRANTS in needs, ad_hoc=access.settings.ad_hoc_access.grant_principals,
            )  # fmt: skip
        if READ_DATA in needs:
            access.read_data(function)
        if WRITE_REPLICAS in needs:
            access.write_replicas(function)
        if DELETE_REPLICAS in needs:
            access.delete_replicas(function)
        if STATE in needs:
            state.grant_state(function)
        if PUBLISH in needs:
            access.publish(function)
        if FAILBACK in needs:
            access.write_sources(
                function,
                data=WRITE_REPLICAS in needs,
                delete=DELETE_REPLICAS in needs,
                catalog=WRITE_CATALOG in needs,
            )
        if needs & {CATALOGS, READ_DATA, WRITE_REPLICAS, DELETE_REPLICAS}:
            access.assume_side_roles(function)
        if HOUSEKEEPING_REPORTS in needs:
            allow_prefix(function, work.bucket.bucket_arn, HOUSEKEEPING_PREFIX, ("s3:PutObject",))
        if READ_STATE in needs:
            allow(function, StateTable.READ_ACTIONS, [state.table.table_arn])
        if PUT_METRICS in needs:
            allow_metrics(function)


def _environment(
    settings: EnvironmentSettings, work: WorkBucket, state: StateTable, secret: ConfigSecret
) -> dict[str, str]:
    """What ``lambdas/runtime.py`` reads, the same for every function."""
    return {
        **settings.config_environment(),
        "FERRY_WORK_URI": work.work_uri,
        "FERRY_STATE_TABLE": state.table.table_name,
        "FERRY_CONFIG_SECRET": secret.secret.secret_arn,
        "FERRY_CONFIG_SECRET_VARIABLES": ",".join(secret.names),
        "FERRY_MAX_CONCURRENCY": str(settings.tables_at_once),
        # A replica's lock lasts as long as the execution that takes it may run.
        "FERRY_LOCK_LEASE": f"PT{statemachine.timeout_seconds()}S",
        # Claim copy slot takes a slot (as long as the lock), Commit and Abort free it.
        **settings.copy_budget.environment(),
        "POWERTOOLS_SERVICE_NAME": "ferry",
        "POWERTOOLS_METRICS_NAMESPACE": "Ferry",
    }


def allow_metrics(grantee: iam.IGrantable) -> None:
    """PutMetricData, which IAM authorizes on "*" only: in the namespace ``Ferry`` only."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
        )
    )


def kebab(name: str) -> str:
    """``CatalogEvents`` → ``catalog-events``: the functions' names in their ARNs."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in name).lstrip("-")


#: CloudWatch Logs' retention periods, in days.
_RETENTION = {
    1: "ONE_DAY", 3: "THREE_DAYS", 5: "FIVE_DAYS", 7: "ONE_WEEK", 14: "TWO_WEEKS",
    30: "ONE_MONTH", 60: "TWO_MONTHS", 90: "THREE_MONTHS", 120: "FOUR_MONTHS",
    150: "FIVE_MONTHS", 180: "SIX_MONTHS", 365: "ONE_YEAR", 400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS", 731: "TWO_YEARS", 1096: "THREE_YEARS", 1827: "FIVE_YEARS",
    2192: "SIX_YEARS", 2557: "SEVEN_YEARS", 2922: "EIGHT_YEARS", 3288: "NINE_YEARS",
    3653: "TEN_YEARS",
}  # fmt: skip


def retention(days: int) -> logs.RetentionDays:
    """The longest retention CloudWatch offers that is no longer than ``days``."""
    return logs.RetentionDays[_RETENTION[max(d for d in _RETENTION if d <= days)]]
