"""Deploy a synthesized CloudFormation template into the AWS emulator.

The local runtime runs what ``cdk deploy`` creates, not a twin of it written by hand: the
template ``make synth`` would produce for the local runtime's environment
(``ferry/local/environment.yml``) is read resource by resource, its intrinsic functions
resolved (``ferry.local.template``), and each resource created through the emulator's own
API: the roles with their policies, the functions with their environment, role and
permissions, the state machines with their definition substitutions, the topics with their
policies, the buckets, the key, the table, the secret, the schedules and rules, the
dead-letter queues with their policies and the functions' on-failure destinations, the
alarms (``ferry.local.emulator_cloudwatch`` evaluates them). A resource
type the emulator cannot hold is named in one error.

Physical names are CloudFormation's where the template gives one; where it does not, a
stable name is made from the stack and the logical id (CloudFormation adds a random
suffix; the emulator needs no such protection).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ferry.core.resource_names import template_name_problems
from ferry.local.definitions import InvalidDefinitionError, check_definition
from ferry.local.template import Resolved, TemplateError, creation_order, physical_name

#: Resources of no consequence to what the pipeline does in the emulator (it has no
#: rollback, and no e-mail); everything else is created.
NOT_EMULATED: frozenset[str] = frozenset(
    {
        "AWS::CDK::Metadata",
        "AWS::SNS::Subscription",  # e-mail subscriptions of the operations topic
    }
)


#: The tag that remembers which template value a secret was last given (a digest).
TEMPLATE_VALUE_TAG = "ferry:template-value"


def _secret_string(secrets: Any, value: dict[str, Any]) -> str | None:
    """The value a secret's template properties give it: its ``SecretString``, or a value
    drawn for its ``GenerateSecretString``; None for neither."""
    if "SecretString" in value:
        return str(value["SecretString"])
    if "GenerateSecretString" in value:
        return secrets.get_random_password()["RandomPassword"]
    return None


def placeholder_code() -> bytes:
    """A function's code in the emulator: the handlers run from this checkout instead."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "Ferry local runtime: handlers run from the checkout.\n")
    return buffer.getvalue()


Client = Callable[..., Any]


class Deployment:
    """One stack's template, created in the emulator through ``client(service, region)``."""

    def __init__(
        self, template: dict[str, Any], stack_name: str, account: str, region: str, client: Client
    ):
        self.template = template
        self.resources: dict[str, dict[str, Any]] = template.get("Resources", {})
        self.resolved = Resolved(account, region, stack_name)
        self.client = client
        #: The functions' definitions as deployed (their handlers run from the checkout).
        self.functions: dict[str, dict[str, Any]] = {}

    def deploy(self) -> dict[str, Any]:
        """Create every resource in dependency order; the stack's outputs."""
        unknown = sorted(
            {
                f"{r['Type']} ({logical})"
                for logical, r in self.resources.items()
                if r["Type"] not in NOT_EMULATED and not hasattr(self, _handler_name(r["Type"]))
            }
        )
        if unknown:
            raise TemplateError(f"the local runtime cannot deploy {', '.join(unknown)}")
        self.check()
        for logical in creation_order(self.resources):
            resource = self.resources[logical]
            if resource["Type"] in NOT_EMULATED:
                self.resolved.refs[logical] = logical
                continue
            properties = self.resolved.value(resource.get("Properties", {}))
            getattr(self, _handler_name(resource["Type"]))(logical, properties)
        return {
            name: self.resolved.value(output["Value"])
            for name, output in self.template.get("Outputs", {}).items()
        }

    def check(self) -> None:
        """Refuse, before creating anything, what CloudFormation's services would refuse at
        create time: a literal name outside its service's limits (``ferry.core.resource_names``),
        a state machine definition Step Functions would not accept (``ferry.local.definitions``).
        """
        names = template_name_problems(self.template, f"stack {self.resolved.stack_name}: ")
        if names:
            raise TemplateError(names[0])
        for logical, resource in self.resources.items():
            if resource["Type"] != "AWS::StepFunctions::StateMachine":
                continue
            properties = resource.get("Properties", {})
            name = properties.get("StateMachineName")
            definition = properties.get("DefinitionString")
            if not isinstance(definition, str):
                definition = json.dumps(properties.get("Definition"))
            # The substitutions' values are made by the deploy (ARNs of functions not yet
            # created): a stand-in of the same shape for each, so nothing is created first.
            for placeholder in properties.get("DefinitionSubstitutions") or {}:
                stand_in = f"arn:aws:lambda:{self.region}:{self.account}:function:{placeholder}"
                definition = definition.replace("${" + placeholder + "}", stand_in)
            try:
                check_definition(name if isinstance(name, str) else logical, definition)
            except InvalidDefinitionError as error:
                raise TemplateError(str(error)) from None

    # -- helpers ----------------------------------------------------------------------------

    @property
    def account(self) -> str:
        return self.resolved.account

    @property
    def region(self) -> str:
        return self.resolved.region

    def _name(self, logical: str, **options: Any) -> str:
        return physical_name(self.resolved.stack_name, logical, **options)

    def _set(self, logical: str, ref: Any, **attributes: Any) -> None:
        self.resolved.refs[logical] = ref
        for attribute, value in attributes.items():
            self.resolved.attributes[(logical, attribute)] = value

    @staticmethod
    def _tags(properties: dict[str, Any]) -> list[dict[str, str]]:
        return [{"Key": t["Key"], "Value": str(t["Value"])} for t in properties.get("Tags", [])]

    # -- IAM ----------------------------------------------------------------------------------

    def aws_iam_role(self, logical: str, properties: dict[str, Any]) -> None:
        iam = self.client("iam")
        name = properties.get("RoleName") or self._name(logical, limit=64)
        try:
            arn = iam.get_role(RoleName=name)["Role"]["Arn"]
            iam.update_assume_role_policy(
                RoleName=name, PolicyDocument=json.dumps(properties["AssumeRolePolicyDocument"])
            )
        except iam.exceptions.NoSuchEntityException:
            arn = iam.create_role(
                RoleName=name,
                AssumeRolePolicyDocument=json.dumps(properties["AssumeRolePolicyDocument"]),
                Description=properties.get("Description", ""),
            )["Role"]["Arn"]
        for policy_arn in properties.get("ManagedPolicyArns", []):
            iam.attach_role_policy(RoleName=name, PolicyArn=policy_arn)
        for policy in properties.get("Policies", []):
            iam.put_role_policy(
                RoleName=name,
                PolicyName=policy["PolicyName"],
                PolicyDocument=json.dumps(policy["PolicyDocument"]),
            )
        self._set(logical, name, Arn=arn, RoleId=name)

    def aws_iam_policy(self, logical: str, properties: dict[str, Any]) -> None:
        iam = self.client("iam")
        for role in properties.get("Roles", []):
            iam.put_role_policy(
                RoleName=role,
                PolicyName=properties["PolicyName"],
                PolicyDocument=json.dumps(properties["PolicyDocument"]),
            )
        self._set(logical, properties["PolicyName"])

    # -- KMS ----------------------------------------------------------------------------------

    def aws_kms_key(self, logical: str, properties: dict[str, Any]) -> None:
        kms = self.client("kms")
        description = properties.get("Description") or logical
        for key in kms.list_keys()["Keys"]:
            metadata = kms.describe_key(KeyId=key["KeyId"])["KeyMetadata"]
            if metadata.get("Description") == description and metadata["KeyState"] == "Enabled":
                kms.put_key_policy(
                    KeyId=key["KeyId"],
                    PolicyName="default",
                    Policy=json.dumps(properties["KeyPolicy"]),
                )
                self._set(logical, key["KeyId"], Arn=metadata["Arn"], KeyId=key["KeyId"])
                return
        metadata = kms.create_key(
            Policy=json.dumps(properties["KeyPolicy"]),
            Description=description,
            BypassPolicyLockoutSafetyCheck=True,
        )["KeyMetadata"]
        self._set(logical, metadata["KeyId"], Arn=metadata["Arn"], KeyId=metadata["KeyId"])

    def aws_kms_alias(self, logical: str, properties: dict[str, Any]) -> None:
        kms = self.client("kms")
        name = properties["AliasName"]
        aliases = {a["AliasName"] for a in kms.list_aliases()["Aliases"]}
        if name in aliases:
            kms.update_alias(AliasName=name, TargetKeyId=properties["TargetKeyId"])
        else:
            kms.create_alias(AliasName=name, TargetKeyId=properties["TargetKeyId"])
        self._set(logical, name)

    # -- S3 -----------------------------------------------------------------------------------

    def aws_s3_bucket(self, logical: str, properties: dict[str, Any]) -> None:
        s3 = self.client("s3")
        name = properties.get("BucketName") or self._name(logical, lower=True)
        existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
        if name not in existing:
            if self.region == "us-east-1":
                s3.create_bucket(Bucket=name)
            else:
                s3.create_bucket(
                    Bucket=name, CreateBucketConfiguration={"LocationConstraint": self.region}
                )
        encryption = properties.get("BucketEncryption")
        if encryption:  # CloudFormation's names for the API's
            rules = [
                {
                    "ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"],
                    **(
                        {"BucketKeyEnabled": rule["BucketKeyEnabled"]}
                        if "BucketKeyEnabled" in rule
                        else {}
                    ),
                }
                for rule in encryption["ServerSideEncryptionConfiguration"]
            ]
            s3.put_bucket_encryption(
                Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules}
            )
        arn = f"arn:aws:s3:::{name}"
        self._set(
            logical,
            name,
            Arn=arn,
            DomainName=f"{name}.s3.amazonaws.com",
            RegionalDomainName=f"{name}.s3.{self.region}.amazonaws.com",
        )

    def aws_s3_bucketpolicy(self, logical: str, properties: dict[str, Any]) -> None:
        self.client("s3").put_bucket_policy(
            Bucket=properties["Bucket"], Policy=json.dumps(properties["PolicyDocument"])
        )
        self._set(logical, properties["Bucket"])

    # -- SNS ----------------------------------------------------------------------------------

    def aws_sns_topic(self, logical: str, properties: dict[str, Any]) -> None:
        name = properties.get("TopicName") or self._name(logical, limit=256)
        attributes = {
            key: str(properties[field_name])
            for field_name, key in (
                ("DisplayName", "DisplayName"),
                ("KmsMasterKeyId", "KmsMasterKeyId"),
            )
            if properties.get(field_name)
        }
        arn = self.client("sns").create_topic(Name=name, Attributes=attributes)["TopicArn"]
        self._set(logical, arn, TopicArn=arn, TopicName=name)

    def aws_sns_topicpolicy(self, logical: str, properties: dict[str, Any]) -> None:
        for topic in properties["Topics"]:
            self.client("sns").set_topic_attributes(
                TopicArn=topic,
                AttributeName="Policy",
                AttributeValue=json.dumps(properties["PolicyDocument"]),
            )
        self._set(logical, logical)

    # -- SQS: the dead-letter queues ----------------------------------------------------------

    def aws_sqs_queue(self, logical: str, properties: dict[str, Any]) -> None:
        sqs = self.client("sqs")
        name = properties.get("QueueName") or self._name(logical, limit=80)
        attributes = {
            key: str(properties[key])
            for key in (
                "KmsMasterKeyId",
                "KmsDataKeyReusePeriodSeconds",
                "MessageRetentionPeriod",
                "VisibilityTimeout",
            )
            if key in properties
        }
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        if attributes:  # a redeploy: the queue exists, its settings follow the template
            sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
        arn = f"arn:aws:sqs:{self.region}:{self.account}:{name}"
        self._set(logical, url, Arn=arn, QueueName=name, QueueUrl=url)

    def aws_sqs_queuepolicy(self, logical: str, properties: dict[str, Any]) -> None:
        for url in properties["Queues"]:
            self.client("sqs").set_queue_attributes(
                QueueUrl=url, Attributes={"Policy": json.dumps(properties["PolicyDocument"])}
            )
        self._set(logical, logical)

    def aws_lambda_eventinvokeconfig(self, logical: str, properties: dict[str, Any]) -> None:
        """What Lambda does with a failed asynchronous invocation of the function: its retries
        and its on-failure destination (``ferry.local.emulator_lambda`` follows them)."""
        config: dict[str, Any] = {
            key: int(properties[key])
            for key in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds")
            if key in properties
        }
        if properties.get("DestinationConfig"):
            config["DestinationConfig"] = properties["DestinationConfig"]
        awslambda = self.client("lambda")
        try:  # a redeploy replaces the configuration
            awslambda.delete_function_event_invoke_config(
                FunctionName=properties["FunctionName"]
            )
        except awslambda.exceptions.ResourceNotFoundException:
            pass
        awslambda.put_function_event_invoke_config(
            FunctionName=properties["FunctionName"],
            Qualifier=properties.get("Qualifier", "$LATEST"),
            **config,
        )
        self._set(logical, logical)

    # -- state ------------------------------------------------------------------------------

    def aws_dynamodb_table(self, logical: str, properties: dict[str, Any]) -> None:
        dynamodb = self.client("dynamodb")
        name = properties.get("TableName") or self._name(logical, limit=255)
        if name not in dynamodb.list_tables()["TableNames"]:
            dynamodb.create_table(
                TableName=name,
                KeySchema=properties["KeySchema"],
                AttributeDefinitions=properties["AttributeDefinitions"],
                BillingMode=properties.get("BillingMode", "PROVISIONED"),
            )
        arn = dynamodb.describe_table(TableName=name)["Table"]["TableArn"]
        self._set(logical, name, Arn=arn)

    def aws_secretsmanager_secret(self, logical: str, properties: dict[str, Any]) -> None:
        """As CloudFormation: the value is written on create, and again only when the
        template's ``SecretString`` or ``GenerateSecretString`` changed since the last deploy
        (a new ``GenerateSecretString`` draws a new value); otherwise it is the operator's.
        The template's value is remembered as a digest in a tag of the secret."""
        secrets = self.client("secretsmanager")
        name = properties.get("Name") or self._name(logical)
        value = {
            k: properties[k] for k in ("SecretString", "GenerateSecretString") if k in properties
        }
        digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
        try:
            described = secrets.describe_secret(SecretId=name)
        except secrets.exceptions.ResourceNotFoundException:
            arguments: dict[str, Any] = {
                "Name": name,
                "Description": properties.get("Description", ""),
                "Tags": [{"Key": TEMPLATE_VALUE_TAG, "Value": digest}],
            }
            if properties.get("KmsKeyId"):
                arguments["KmsKeyId"] = properties["KmsKeyId"]
            secret_string = _secret_string(secrets, value)
            if secret_string is not None:
                arguments["SecretString"] = secret_string
            arn = secrets.create_secret(**arguments)["ARN"]
        else:
            arn = described["ARN"]
            secrets.update_secret(SecretId=arn, Description=properties.get("Description", ""))
            tags = {t["Key"]: t["Value"] for t in described.get("Tags", [])}
            if tags.get(TEMPLATE_VALUE_TAG) != digest:
                secret_string = _secret_string(secrets, value)
                if secret_string is not None:
                    secrets.put_secret_value(SecretId=arn, SecretString=secret_string)
                secrets.tag_resource(
                    SecretId=arn, Tags=[{"Key": TEMPLATE_VALUE_TAG, "Value": digest}]
                )
        self._set(logical, arn, Id=arn)

    def aws_logs_loggroup(self, logical: str, properties: dict[str, Any]) -> None:
        logs = self.client("logs")
        name = properties.get("LogGroupName") or self._name(logical, limit=512)
        found = logs.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
        if not any(group["logGroupName"] == name for group in found):
            logs.create_log_group(logGroupName=name)
        arn = f"arn:aws:logs:{self.region}:{self.account}:log-group:{name}:*"
        self._set(logical, name, Arn=arn)

    # -- compute ----------------------------------------------------------------------------

    def aws_lambda_function(self, logical: str, properties: dict[str, Any]) -> None:
        awslambda = self.client("lambda")
        name = properties.get("FunctionName") or self._name(logical, limit=64)
        settings = {
            "Runtime": properties["Runtime"],
            "Role": properties["Role"],
            "Handler": properties["Handler"],
            "Timeout": int(properties.get("Timeout", 3)),
            "MemorySize": int(properties.get("MemorySize", 128)),
            "Environment": {"Variables": properties.get("Environment", {}).get("Variables", {})},
            "Description": properties.get("Description", ""),
        }
        try:
            awslambda.get_function(FunctionName=name)
            arn = awslambda.update_function_configuration(FunctionName=name, **settings)[
                "FunctionArn"
            ]
        except awslambda.exceptions.ResourceNotFoundException:
            arn = awslambda.create_function(
                FunctionName=name, Code={"ZipFile": placeholder_code()}, **settings
            )["FunctionArn"]
        self.functions[logical] = {"name": name, "arn": arn, **settings}
        self._set(logical, name, Arn=arn)

    def aws_lambda_permission(self, logical: str, properties: dict[str, Any]) -> None:
        """A statement of a function's resource-based policy (an EventBridge rule's target's:
        the emulator invokes a rule's function only when it allows the rule)."""
        awslambda = self.client("lambda")
        function = properties["FunctionName"]
        try:  # a redeploy replaces the statement, as CloudFormation's update does
            awslambda.remove_permission(FunctionName=function, StatementId=logical)
        except awslambda.exceptions.ResourceNotFoundException:
            pass
        arguments = {
            "FunctionName": function,
            "StatementId": logical,
            "Action": properties["Action"],
            "Principal": properties["Principal"],
        }
        for key in ("SourceArn", "SourceAccount"):
            if properties.get(key):
                arguments[key] = properties[key]
        awslambda.add_permission(**arguments)
        self._set(logical, logical)

    def aws_emrserverless_application(self, logical: str, properties: dict[str, Any]) -> None:
        emr = self.client("emr-serverless")
        name = properties.get("Name") or self._name(logical)
        for application in emr.list_applications()["applications"]:
            if application["name"] == name and application["state"] != "TERMINATED":
                identifier, arn = application["id"], application["arn"]
                break
        else:
            created = emr.create_application(
                name=name,
                releaseLabel=properties["ReleaseLabel"],
                type=properties["Type"],
                **(
                    {"architecture": properties["Architecture"]}
                    if "Architecture" in properties
                    else {}
                ),
            )
            identifier, arn = created["applicationId"], created["arn"]
        self._set(logical, identifier, ApplicationId=identifier, Arn=arn)

    def aws_stepfunctions_statemachine(self, logical: str, properties: dict[str, Any]) -> None:
        sfn = self.client("stepfunctions")
        name = properties.get("StateMachineName") or self._name(logical, limit=80)
        definition = properties.get("DefinitionString")
        if definition is None:
            definition = json.dumps(properties["Definition"])
        for placeholder, value in (properties.get("DefinitionSubstitutions") or {}).items():
            definition = definition.replace("${" + placeholder + "}", str(value))
        leftover = re.findall(r"\$\{([A-Za-z0-9]+)\}", definition)
        if leftover:
            raise TemplateError(
                f"state machine {name}: no substitution for {sorted(set(leftover))}"
            )
        for machine in sfn.list_state_machines()["stateMachines"]:
            if machine["name"] == name:
                arn = machine["stateMachineArn"]
                sfn.update_state_machine(
                    stateMachineArn=arn, definition=definition, roleArn=properties["RoleArn"]
                )
                break
        else:
            arn = sfn.create_state_machine(
                name=name, definition=definition, roleArn=properties["RoleArn"]
            )["stateMachineArn"]
        self._set(logical, arn, Arn=arn, Name=name)

    # -- triggers and operations --------------------------------------------------------------

    def aws_events_rule(self, logical: str, properties: dict[str, Any]) -> None:
        bus = properties.get("EventBusName")
        region = self.region
        if isinstance(bus, str) and bus.startswith("arn:"):
            region = bus.split(":")[3]
        events = self.client("events", region)
        name = properties.get("Name") or self._name(logical, limit=64)
        arguments: dict[str, Any] = {
            "Name": name,
            "State": properties.get("State", "ENABLED"),
            "Description": properties.get("Description", ""),
        }
        if "EventPattern" in properties:
            arguments["EventPattern"] = json.dumps(properties["EventPattern"])
        if "ScheduleExpression" in properties:
            arguments["ScheduleExpression"] = properties["ScheduleExpression"]
        arn = events.put_rule(**arguments)["RuleArn"]
        targets = [
            {
                key: (json.dumps(value) if key == "Input" and not isinstance(value, str) else value)
                for key, value in target.items()
            }
            for target in properties.get("Targets", [])
        ]
        if targets:
            events.put_targets(Rule=name, Targets=targets)
        self._set(logical, name, Arn=arn)

    def aws_scheduler_schedulegroup(self, logical: str, properties: dict[str, Any]) -> None:
        scheduler = self.client("scheduler")
        name = properties.get("Name") or self._name(logical, limit=64)
        try:
            arn = scheduler.get_schedule_group(Name=name)["Arn"]
        except scheduler.exceptions.ResourceNotFoundException:
            arn = scheduler.create_schedule_group(Name=name)["ScheduleGroupArn"]
        self._set(logical, name, Arn=arn)

    def aws_scheduler_schedule(self, logical: str, properties: dict[str, Any]) -> None:
        scheduler = self.client("scheduler")
        name = properties.get("Name") or self._name(logical, limit=64)
        target = {
            key: value
            for key, value in properties["Target"].items()
            if key in ("Arn", "RoleArn", "Input", "RetryPolicy", "DeadLetterConfig")
        }
        group = properties.get("GroupName", "default")
        arguments = {
            "Name": name,
            "GroupName": group,
            "ScheduleExpression": properties["ScheduleExpression"],
            "FlexibleTimeWindow": properties.get("FlexibleTimeWindow", {"Mode": "OFF"}),
            "Target": target,
            "State": properties.get("State", "ENABLED"),
        }
        if properties.get("ScheduleExpressionTimezone"):
            arguments["ScheduleExpressionTimezone"] = properties["ScheduleExpressionTimezone"]
        try:
            scheduler.get_schedule(Name=name, GroupName=group)
            scheduler.update_schedule(**arguments)
        except scheduler.exceptions.ResourceNotFoundException:
            scheduler.create_schedule(**arguments)
        arn = f"arn:aws:scheduler:{self.region}:{self.account}:schedule/{group}/{name}"
        self._set(logical, name, Arn=arn)

    def aws_cloudwatch_alarm(self, logical: str, properties: dict[str, Any]) -> None:
        name = properties.get("AlarmName") or self._name(logical, limit=255)
        arguments = {
            key: properties[key]
            for key in (
                "AlarmDescription",
                "AlarmActions",
                "OKActions",
                "InsufficientDataActions",
                "DatapointsToAlarm",
                "ExtendedStatistic",
                "MetricName",
                "Namespace",
                "Statistic",
                "Period",
                "EvaluationPeriods",
                "Threshold",
                "ComparisonOperator",
                "TreatMissingData",
                "Dimensions",
                "Metrics",
            )  # fmt: skip
            if key in properties
        }
        for number in ("Period", "EvaluationPeriods", "DatapointsToAlarm"):
            if number in arguments:
                arguments[number] = int(arguments[number])
        if "Threshold" in arguments:
            arguments["Threshold"] = float(arguments["Threshold"])
        self.client("cloudwatch").put_metric_alarm(AlarmName=name, **arguments)
        arn = f"arn:aws:cloudwatch:{self.region}:{self.account}:alarm:{name}"
        self._set(logical, name, Arn=arn)

    def aws_cloudwatch_dashboard(self, logical: str, properties: dict[str, Any]) -> None:
        name = properties.get("DashboardName") or self._name(logical)
        body = properties["DashboardBody"]
        self.client("cloudwatch").put_dashboard(
            DashboardName=name, DashboardBody=body if isinstance(body, str) else json.dumps(body)
        )
        self._set(logical, name)


def _handler_name(resource_type: str) -> str:
    return resource_type.lower().replace("::", "_")


# -- the CDK's assets ------------------------------------------------------------------------


@dataclass(frozen=True)
class FileAsset:
    """One file a stack's template refers to, as ``<stack>.assets.json`` lists it."""

    path: Path
    bucket: str
    key: str
    packaging: str


def file_assets(assembly: Path, stack_name: str, account: str, region: str) -> list[FileAsset]:
    """The stack's file assets with their destinations in the bootstrap bucket."""
    manifest = json.loads((assembly / f"{stack_name}.assets.json").read_text())
    found = []
    for asset in manifest.get("files", {}).values():
        source = asset["source"]
        for destination in asset["destinations"].values():
            bucket = (
                destination["bucketName"]
                .replace("${AWS::AccountId}", account)
                .replace("${AWS::Region}", region)
                .replace("${AWS::Partition}", "aws")
            )
            found.append(
                FileAsset(
                    assembly / source["path"],
                    bucket,
                    destination["objectKey"],
                    source.get("packaging", "file"),
                )
            )
    return found
