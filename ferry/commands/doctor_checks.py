"""``ferry doctor``: what a first deploy needs, checked before and after it, one line each.

Each check answers one question a person would otherwise need an AWS expert for, with the
user's own credentials, and says what to do when the answer is no: is the CDK bootstrapped
in every region the app deploys to; are these credentials the environment's account; is the
stack deployed and healthy; does the config secret still hold placeholders; does every
trigger bucket send its events to EventBridge; can the functions reach AWS's services and the
metastores from the configured subnets; does each metastore answer from inside the VPC (the
deployed Plan function, invoked in its check mode); does each Hive source whose config
declares ``catalog-events`` write its notification log (the deployed CatalogPoller function,
in its check mode); is the Spark copy's application and its packed environment there.

Against the local runtime (``--environment local``) every check that can be made there is
made the same way, through the emulator; the network checks are skipped (no VPC).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from ferry.commands.doctor_check_modes import (
    check_catalogs,
    check_notification_logs,
    polled_configs,
)
from ferry.commands.doctor_findings import (
    FAILED,
    OK,
    SKIPPED,
    Deployment,
    Finding,
    failed_call,
    guarded,
)
from ferry.commands.doctor_network import (
    POLLER_SERVICES,
    VPC_SERVICES,
    check_routes,
    check_security_groups,
    check_subnets,
    subnets_without_nat,
)
from ferry.commands.doctor_regions import check_other_regions, head_bucket_region, reached_elsewhere
from ferry.commands.doctor_spark import check_spark
from ferry.config.text import SECRET_PLACEHOLDER
from ferry.storage.aws import AwsClients

__all__ = [
    "FAILED", "OK", "SKIPPED", "POLLER_SERVICES", "VPC_SERVICES", "Doctor",
    "Finding", "check_routes", "check_security_groups", "check_subnets",
]  # fmt: skip

BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"


class Doctor:
    """The checks of one environment (``infra.settings.EnvironmentSettings``)."""

    def __init__(
        self,
        settings: Any,
        aws: AwsClients,
        *,
        local: Deployment | None = None,
        spark_job: bool = False,
    ):
        self.settings = settings
        self.aws = aws
        self.local = local
        self.spark_job = spark_job

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> list[Finding]:
        findings = [self.account(), *self.bootstrap()]
        deployment, found = self.stack()
        findings.append(found)
        findings.append(self.secret(deployment))
        findings.extend(self.trigger_buckets())
        findings.extend(self.network())
        findings.extend(self.catalogs(deployment))
        findings.extend(self.notification_logs(deployment))
        findings.extend(self.spark(deployment))
        return findings

    # -- account and bootstrap ---------------------------------------------------------------

    def account(self) -> Finding:
        def body() -> Finding:
            found = self.aws.client("sts").get_caller_identity()["Account"]
            if found != self.settings.account:
                return Finding(
                    "account",
                    FAILED,
                    f"these credentials are account {found}, the settings' is "
                    f"{self.settings.account}",
                    "use credentials of the environment's account (AWS_PROFILE)",
                )
            return Finding("account", OK, f"credentials of {found}")

        return guarded("account", body)

    def regions(self) -> list[str]:
        """Every region the app deploys to: the environment's, and each forwarder's."""
        from infra.triggers import foreign_regions

        return [self.settings.region, *sorted(foreign_regions(self.settings))]

    def bootstrap(self) -> list[Finding]:
        findings = []
        account = self.settings.account
        for region in self.regions():
            check = f"bootstrap {region}"
            command = f"npx aws-cdk@2 bootstrap aws://{account}/{region}"

            def body(region: str = region, check: str = check, command: str = command) -> Finding:
                ssm = self.aws.client("ssm", region)
                try:
                    version = ssm.get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"]["Value"]
                except ssm.exceptions.ParameterNotFound:
                    return Finding(check, FAILED, "the CDK is not bootstrapped here", command)
                return Finding(check, OK, f"CDK bootstrap version {version}")

            findings.append(guarded(check, body))
        return findings

    # -- the stack and its secret -------------------------------------------------------------

    def stack(self) -> tuple[Deployment | None, Finding]:
        name = self.settings.stack_name
        if self.local is not None:
            return self.local, Finding("stack", OK, self.local.description)
        cloudformation = self.aws.client("cloudformation", self.settings.region)
        try:
            [stack] = cloudformation.describe_stacks(StackName=name)["Stacks"]
        except cloudformation.exceptions.ClientError as error:
            if "does not exist" in str(error):
                return None, Finding(
                    "stack",
                    SKIPPED,
                    f"{name} is not deployed yet: the checks of the deployed stack are skipped",
                    f"npx aws-cdk@2 deploy -c environment={self.settings.name} --all",
                )
            raise
        status = stack["StackStatus"]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        deployment = Deployment(outputs, f"CloudFormation stack {name} {status}")
        if "ROLLBACK" in status or not status.endswith("COMPLETE"):
            return deployment, Finding(
                "stack",
                FAILED,
                f"{name} is {status}",
                "look at the stack's events in CloudFormation; deploy again once fixed",
            )
        return deployment, Finding("stack", OK, f"{name} {status}")

    def secret(self, deployment: Deployment | None) -> Finding:
        names = sorted(self.settings.secret_variables)
        secret_id = f"ferry/{self.settings.name}/config-variables"
        check = f"secret {secret_id}"
        if deployment is None:
            return Finding(check, SKIPPED, "not deployed yet")
        if not names:
            return Finding(check, OK, "the configs declare no secret values")
        secret_id = deployment.outputs.get("ConfigSecretArn", secret_id)

        def body() -> Finding:
            reply = self.aws.client("secretsmanager", self.settings.region).get_secret_value(
                SecretId=secret_id
            )
            try:
                values = json.loads(reply.get("SecretString") or "")
            except ValueError:
                values = None
            if not isinstance(values, dict):
                return Finding(check, FAILED, "holds no JSON object", _put_secret(secret_id, names))
            unset = [n for n in names if values.get(n) in (None, "", SECRET_PLACEHOLDER)]
            if unset:
                return Finding(
                    check,
                    FAILED,
                    f"{', '.join(unset)} not set (a placeholder): a run would refuse to start",
                    _put_secret(secret_id, unset),
                )
            return Finding(check, OK, f"{', '.join(names)} set")

        return guarded(check, body)

    # -- triggers ----------------------------------------------------------------------------

    def trigger_buckets(self) -> list[Finding]:
        seen: dict[str, tuple[str | None, list[str]]] = {}
        for path, config in self.settings.configs.items():
            for trigger in config.triggers.s3:
                seen.setdefault(trigger.bucket, (trigger.region, []))[1].append(path.name)
        findings = []
        for bucket, (region, configs) in sorted(seen.items()):
            check = f"trigger bucket {bucket}"

            def body(
                bucket: str = bucket,
                region: str | None = region,
                check: str = check,
                configs: list[str] = configs,
            ) -> Finding:
                s3 = self.aws.client("s3", region or self.settings.region)
                try:
                    configuration = s3.get_bucket_notification_configuration(Bucket=bucket)
                except s3.exceptions.ClientError as error:
                    if error.response.get("Error", {}).get("Code") != "NoSuchBucket":
                        raise
                    return self._missing_trigger_bucket(check, bucket, region, configs)
                if "EventBridgeConfiguration" not in configuration:
                    return Finding(
                        check,
                        FAILED,
                        "does not send its events to EventBridge: its triggers never fire",
                        f"aws s3api put-bucket-notification-configuration --bucket {bucket} "
                        "--notification-configuration '{\"EventBridgeConfiguration\": {}}'",
                    )
                return Finding(check, OK, "sends its events to EventBridge")

            findings.append(guarded(check, body))
        return findings

    def _missing_trigger_bucket(
        self, check: str, bucket: str, region: str | None, configs: list[str]
    ) -> Finding:
        where = region or self.settings.region
        if self.local is not None:
            # The local environment's trigger bucket is the demo's landing bucket: a runtime
            # the demo has not run on has none yet, and nothing is wrong with it.
            return Finding(
                check,
                SKIPPED,
                f"does not exist yet: `ferry demo` creates it (in {where}) and sends its "
                "events to EventBridge",
            )
        return Finding(
            check,
            FAILED,
            f"does not exist in {where}: the triggers of {', '.join(configs)} never fire",
            f"create the bucket in {where}, or correct triggers.s3 (bucket, region) in "
            f"{', '.join(configs)}",
        )

    # -- the network -------------------------------------------------------------------------

    def network(self) -> list[Finding]:
        network = self.settings.network
        if network is None:
            return [Finding("network", SKIPPED, "no VPC in the settings (Glue catalogs only)")]
        if self.local is not None:
            return [Finding("network", SKIPPED, "the local runtime has no VPC")]
        ec2 = self.aws.client("ec2", self.settings.region)
        return [
            guarded("subnets", lambda: check_subnets(ec2, network)),
            guarded(
                "services from the subnets",
                lambda: check_routes(ec2, network, self.settings.region, self.vpc_services()),
            ),
            guarded(
                "security groups",
                lambda: check_security_groups(ec2, network, self.metastore_ports()),
            ),
            *self.other_regions(ec2, network),
        ]

    def other_regions(self, ec2: Any, network: Any) -> list[Finding]:
        """The catalogs, buckets and topics of other regions, which the VPC's functions reach
        only through a NAT (``ferry.commands.doctor_regions``)."""
        from botocore.exceptions import BotoCoreError, ClientError

        s3 = self.aws.client("s3", self.settings.region)
        try:
            elsewhere = reached_elsewhere(self.settings, lambda b: head_bucket_region(s3, b))
            without_nat = subnets_without_nat(ec2, network)
        except (BotoCoreError, ClientError) as error:
            return [failed_call("other regions", error)]
        return check_other_regions(elsewhere, without_nat, self.settings.region)

    def metastore_ports(self) -> list[int]:
        ports = set()
        for config in self.settings.configs.values():
            for catalog in (config.source_catalog, config.replica_catalog):
                ports.update(metastore_ports(catalog.hive_metastore_uris))
        return sorted(ports)

    # -- the metastores, from inside --------------------------------------------------------

    def catalogs(self, deployment: Deployment | None) -> list[Finding]:
        """Does each metastore answer the deployed Plan function
        (``ferry.commands.doctor_check_modes``)?"""
        return check_catalogs(self.aws, self.settings, deployment)

    def vpc_services(self) -> tuple[str, ...]:
        """The services the functions in the VPC call: Step Functions too when a Hive
        notification log is polled (the poller starts the change windows)."""
        return (*VPC_SERVICES, *POLLER_SERVICES) if self.polled_configs() else VPC_SERVICES

    def polled_configs(self) -> list[Any]:
        """The configs whose Hive source's notification log the deployment polls."""
        return polled_configs(self.settings)

    # -- the Hive sources' notification logs -------------------------------------------------

    def notification_logs(self, deployment: Deployment | None) -> list[Finding]:
        """Does each polled Hive source write its notification log, as the deployed
        CatalogPoller finds it (``ferry.commands.doctor_check_modes``)?"""
        return check_notification_logs(self.aws, self.settings, deployment)

    # -- the Spark copy ---------------------------------------------------------------------

    def spark(self, deployment: Deployment | None) -> list[Finding]:
        """The Spark copy's application, code and, when asked, a job run
        (``ferry.commands.doctor_spark``)."""
        return check_spark(
            self.aws, self.settings, deployment,
            run_job=self.spark_job, local=self.local is not None,
        )  # fmt: skip


def _put_secret(secret_id: str, names: Iterable[str]) -> str:
    values = ", ".join(f'"{name}": "..."' for name in names)
    return (
        f"aws secretsmanager put-secret-value --secret-id {secret_id} "
        f"--secret-string '{{{values}}}'"
    )


def metastore_ports(uris: str | None) -> list[int]:
    """The ports of a catalog's ``hive-metastore-uris`` (``thrift://host:port,...``)."""
    if not uris:
        return []
    ports = []
    for uri in uris.split(","):
        parsed = urlparse(uri.strip())
        if parsed.scheme == "thrift":
            ports.append(parsed.port or 9083)
    return ports
