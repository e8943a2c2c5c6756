"""The checks of every stack at synth: resource names within their services' limits, and the
AWS Solutions checks (cdk-nag 3) with the reason of each acknowledged finding.

A literal resource name that its service would refuse (``ferry.core.resource_names``: a rule or a
schedule of more than 64 characters, a role with a space) stops the synth with one line
naming the resource, the config or environment it came from and the limit, as CloudFormation
would stop the deploy.

The checks run once on each stack as it is built; each finding is matched against the
reasons below, which are specific (the rule, and for wildcard findings the resource's
shape: a configured prefix, the runs of this pipeline, a service without resource-level
permissions). A matched finding is acknowledged on its own construct with its reason; one
that matches nothing is left, and the synth fails on it (``Validations`` runs the pack
again at synth).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aws_cdk import Acknowledgment, App, CfnResource, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from ferry.core.resource_names import NAME_RULES, name_problem
from infra.bundling import LAMBDA_RUNTIME
from infra.grants_access import LAKE_FORMATION_READ, LAKE_FORMATION_WRITE
from infra.network import NETWORK_INTERFACE_ACTIONS
from infra.settings import SettingsError

_WILDCARD = re.compile(r"^AwsSolutions-IAM5\[Resource::(?P<resource>.+)\]$")


def check(app: App) -> None:
    """Check each stack's names; acknowledge its reasoned findings, then make the pack part
    of the synth."""
    for stack in [c for c in app.node.children if isinstance(c, Stack)]:
        problems = name_problems(stack)
        if problems:
            raise SettingsError(problems[0])
        acknowledge(stack)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def name_problems(stack: Stack) -> list[str]:
    """Each literal resource name of ``stack`` its service would refuse, one line each."""
    settings = getattr(stack, "settings", None)
    problems = []
    for construct in stack.node.find_all():
        if not isinstance(construct, CfnResource):
            continue
        rule = NAME_RULES.get(construct.cfn_resource_type)
        if rule is None:
            continue
        properties = stack.resolve(construct._cfn_properties)  # the template's, camelCased
        name = properties.get(rule.property[:1].lower() + rule.property[1:])
        problem = name_problem(construct.cfn_resource_type, name) if isinstance(name, str) else None
        if problem:
            problems.append(
                f"{stack.stack_name}: {construct.node.path} ({_origin(settings, name)}): {problem}"
            )
    return problems


def _origin(settings: object, name: str) -> str:
    """The config a name was made from (its file's name is in it), else the environment."""
    if settings is None:
        return "this stack"
    for path in getattr(settings, "configs", {}):
        if path.stem in name:
            return f"config {path}"
    return f"environment {getattr(settings, 'name', '?')}"


def acknowledge(stack: Stack) -> list[tuple[str, str, str]]:
    """Acknowledge the findings that have a reason; (rule, path, reason) of each one."""
    report = AwsSolutionsChecks(verbose=False).validate_scope(stack)
    done = []
    for violation in report.violations:
        for resource in violation.violating_resources:
            construct = _at(stack, resource.construct_path)
            reason = reason_for(violation.rule_name, resource.construct_path, stack)
            if reason is None or construct is None:
                continue
            Validations.of(construct).acknowledge(
                Acknowledgment(id=violation.rule_name, reason=reason)
            )
            done.append((violation.rule_name, resource.construct_path, reason))
    return done


def reason_for(rule: str, path: str, stack: Stack) -> str | None:
    """Why a finding is accepted here, or None: then it must be fixed."""
    if rule == "AwsSolutions-L1":
        return (
            f"Ferry's functions run on {LAMBDA_RUNTIME.name}: the newest runtime its pinned "
            "dependencies are built and tested for (pyarrow's wheels, infra/bundling.py)"
        )
    if rule == "AwsSolutions-SMG4":
        return (
            "The secret holds the configs' placeholder values (metastore endpoints and the "
            "like) that operators set; there is no credential for a rotation function to renew"
        )
    if rule == "AwsSolutions-S1" and path.endswith("AccessLogs/Resource"):
        return "This bucket receives the work bucket's access logs; logging it would loop"
    matched = _WILDCARD.match(rule)
    if matched:
        return _wildcard_reason(matched["resource"], path, stack)
    return None


def _wildcard_reason(resource: str, path: str, stack: Stack) -> str | None:
    """Why a wildcard resource is accepted: something the settings name by pattern, or one
    of the shapes of this pipeline's own resources."""
    settings = getattr(stack, "settings", None)
    reason = _settings_reason(resource, settings)
    if reason is not None:
        return reason
    for applies, reason in _shape_reasons(path, stack, settings):
        if applies(resource):
            return reason
    return None


def _settings_reason(resource: str, settings: Any) -> str | None:
    """A location, topic, role, DR bucket, KMS key or Glue database the environment's
    settings name by pattern."""
    locations, topics, databases = [], [], set()
    if settings is not None:
        ad_hoc = settings.ad_hoc_access
        locations = [*settings.write_locations, *ad_hoc.read_locations] + [
            location for r in settings.replications for location in r.read_locations
        ]
        if settings.failback is not None:
            locations += settings.failback.write_locations
        topics = ad_hoc.topics
        databases = {d for a in ad_hoc.glue for d in a.read_databases + a.write_databases}
    for location in locations:
        bucket = location.removeprefix("s3://").split("/", 1)[0]
        prefix = "arn:aws:s3:::" + location.removeprefix("s3://").rstrip("/") + "/*"
        if resource == prefix:
            return (
                f"Objects below {location}, a location the environment's settings name "
                "(read-locations, write-locations or failback.write-locations); table data "
                "is many objects"
            )
        if resource == prefix.removesuffix("/*") + "/*/metadata/*":
            return (
                f"The metadata files of the Iceberg replicas below {location}, a location the "
                "environment's settings name (write-locations): a failover reads the current "
                "snapshot of each"
            )
        if "*" in bucket and resource == f"arn:aws:s3:::{bucket}":
            return (
                f"The buckets {bucket} of a location the environment's settings name by "
                "pattern (listed only below the location's prefix)"
            )
    if resource in topics:
        return "Topics the environment's settings name by pattern (ad-hoc-access.topics)"
    if settings is not None and resource in settings.ad_hoc_access.grant_principals:
        return (
            "IAM roles the environment's settings name by pattern "
            "(ad-hoc-access.grant-principals): looked up before Lake Formation grants to them"
        )
    if settings is not None and resource in settings.ad_hoc_access.assume_roles:
        return (
            "Roles of another account the environment's settings name by pattern "
            "(ad-hoc-access.assume-roles): the DR roles configs run by hand assume"
        )
    dr_account = getattr(settings, "dr_account", None)
    dr_objects = {f"arn:aws:s3:::{b}/*" for b in dr_account.bucket_names} if dr_account else set()
    if resource in dr_objects:
        return (
            "Objects of a DR bucket the environment's settings name (dr-account.buckets), "
            "written by the DR role only; table data is many objects"
        )
    if settings is not None:
        keys = {k for r in settings.replications for k in r.read_kms_keys}
        keys |= set(settings.write_kms_keys) | set(settings.ad_hoc_access.read_kms_keys)
        if resource in keys:
            return (
                "KMS keys of data buckets the environment's settings name by pattern, used "
                "only through S3 (kms:ViaService)"
            )
    glue = re.fullmatch(r"arn:aws:glue:[\w-]+:\d{12}:(database|table)/([\w*?]+)(/\*)?", resource)
    if glue and glue.group(2) in databases:
        return (
            "Glue databases the environment's settings name by pattern "
            "(ad-hoc-access.glue), and their tables"
        )
    return None


def _shape_reasons(
    path: str, stack: Stack, settings: Any
) -> list[tuple[Callable[[str], bool], str]]:
    """The shapes of this pipeline's own wildcard resources, each with its reason."""
    return [
        (
            lambda r: (
                re.fullmatch(
                    r"<WorkBucket\w+\.Arn>/"
                    r"(runs|configs|configs/failback|spark-logs|housekeeping|failover)/\*",
                    r,
                )
                is not None
            ),
            "One prefix of the work bucket (runs/<event-id>/..., configs/, configs/failback/, "
            "spark-logs/, housekeeping/, failover/): "
            "the names below it are made per run",
        ),
        (
            lambda r: re.fullmatch(r"arn:aws:glue:[\w-]+:\d{12}:table/[\w]+/\*", r) is not None,
            "The tables of one database a config names (a table-name-pattern selects its "
            "tables when the run starts)",
        ),
        (
            lambda r: re.fullmatch(r"<SparkApplication\w+\.Arn>/jobruns/\*", r) is not None,
            "Job runs of the pipeline's own EMR Serverless application, created per run",
        ),
        (
            lambda r: (
                re.fullmatch(
                    r"arn:<AWS::Partition>:states:[\w-]+:\d{12}:execution:ferry-[\w-]+-replication/\*",
                    r,
                )
                is not None
            ),
            "The Distributed Map's child executions of this state machine, named per run",
        ),
        (
            lambda r: (
                re.fullmatch(
                    r"arn:<AWS::Partition>:states:[\w-]+:\d{12}:execution:"
                    r"ferry-[\w-]+-(replication|catalog-changes):\*",
                    r,
                )
                is not None
            ),
            "Executions of one state machine of this pipeline, named per run or change window "
            "(a change window runs the replication state machine and watches its execution)",
        ),
        (
            lambda r: (
                settings is not None
                and r
                in (
                    f"arn:aws:events:{settings.region}:{settings.account}:rule/ferry-{settings.name}-*",
                    f"arn:aws:scheduler:{settings.region}:{settings.account}:schedule/"
                    f"ferry-{settings.name}/*",
                )
            ),
            "The environment's own rules (ferry-<environment>-...) and the schedules of its own "
            "group, one or more per config: the failover switch turns a config's off and on",
        ),
        (
            lambda r: r == "*" and _only_service_wide_actions(path, stack),
            "X-Ray tracing, CloudWatch Logs delivery, a VPC function's network interfaces "
            "(created by Lambda with the function's role), CloudWatch metric data (one "
            "namespace, by its condition) and Lake Formation's permissions and LF-tags have "
            "no resource-level permissions",
        ),
    ]


#: Actions AWS authorizes on "*" only (or, for a function's network interfaces, on interfaces
#: Lambda names itself).
SERVICE_WIDE_ACTIONS = {
    *NETWORK_INTERFACE_ACTIONS,
    *LAKE_FORMATION_READ,
    *LAKE_FORMATION_WRITE,
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


def _only_service_wide_actions(path: str, stack: Stack) -> bool:
    """True when every statement of the policy at ``path`` on "*" is service-wide only."""
    construct = _at(stack, path)
    if construct is None:
        return False
    document = stack.resolve(construct.policy_document)  # type: ignore[attr-defined]
    for statement in document.get("Statement", []):
        if statement.get("Resource") in ("*", ["*"]):
            actions = statement["Action"]
            actions = [actions] if isinstance(actions, str) else actions
            if not set(actions) <= SERVICE_WIDE_ACTIONS and not _one_namespace(statement):
                return False
    return True


def _one_namespace(statement: dict) -> bool:
    """PutMetricData alone, in the one namespace its condition names."""
    actions = statement["Action"]
    namespace = statement.get("Condition", {}).get("StringEquals", {}).get("cloudwatch:namespace")
    return actions in ("cloudwatch:PutMetricData", ["cloudwatch:PutMetricData"]) and isinstance(
        namespace, str
    )


def _at(stack: Stack, path: str) -> IConstruct | None:
    """The construct at a construct path (``Stack/Child/Resource``) below ``stack``."""
    current: IConstruct | None = stack
    for part in path.split("/")[1:]:
        current = current.node.try_find_child(part) if current is not None else None
    return current
