"""The stack's access resources, created in the emulator (``ferry.local.stack``): IAM roles
and policies, the KMS key and its alias, the Secrets Manager secret."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ferry.local.stack_context import Creator, StackContext

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


def role(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    iam = stack.client("iam")
    name = properties.get("RoleName") or stack.name(logical, limit=64)
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
    stack.set(logical, name, Arn=arn, RoleId=name)


def policy(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    iam = stack.client("iam")
    for role in properties.get("Roles", []):
        iam.put_role_policy(
            RoleName=role,
            PolicyName=properties["PolicyName"],
            PolicyDocument=json.dumps(properties["PolicyDocument"]),
        )
    stack.set(logical, properties["PolicyName"])


def key(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    kms = stack.client("kms")
    description = properties.get("Description") or logical
    for key in kms.list_keys()["Keys"]:
        metadata = kms.describe_key(KeyId=key["KeyId"])["KeyMetadata"]
        if metadata.get("Description") == description and metadata["KeyState"] == "Enabled":
            kms.put_key_policy(
                KeyId=key["KeyId"],
                PolicyName="default",
                Policy=json.dumps(properties["KeyPolicy"]),
            )
            stack.set(logical, key["KeyId"], Arn=metadata["Arn"], KeyId=key["KeyId"])
            return
    metadata = kms.create_key(
        Policy=json.dumps(properties["KeyPolicy"]),
        Description=description,
        BypassPolicyLockoutSafetyCheck=True,
    )["KeyMetadata"]
    stack.set(logical, metadata["KeyId"], Arn=metadata["Arn"], KeyId=metadata["KeyId"])


def alias(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    kms = stack.client("kms")
    name = properties["AliasName"]
    aliases = {a["AliasName"] for a in kms.list_aliases()["Aliases"]}
    if name in aliases:
        kms.update_alias(AliasName=name, TargetKeyId=properties["TargetKeyId"])
    else:
        kms.create_alias(AliasName=name, TargetKeyId=properties["TargetKeyId"])
    stack.set(logical, name)


def secret(stack: StackContext, logical: str, properties: dict[str, Any]) -> None:
    """As CloudFormation: the value is written on create, and again only when the
    template's ``SecretString`` or ``GenerateSecretString`` changed since the last deploy
    (a new ``GenerateSecretString`` draws a new value); otherwise it is the operator's.
    The template's value is remembered as a digest in a tag of the secret."""
    secrets = stack.client("secretsmanager")
    name = properties.get("Name") or stack.name(logical)
    value = {k: properties[k] for k in ("SecretString", "GenerateSecretString") if k in properties}
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
            secrets.tag_resource(SecretId=arn, Tags=[{"Key": TEMPLATE_VALUE_TAG, "Value": digest}])
    stack.set(logical, arn, Id=arn)


#: The creator of each resource type of this module, by CloudFormation type.
CREATORS: dict[str, Creator] = {
    "AWS::IAM::Role": role,
    "AWS::IAM::Policy": policy,
    "AWS::KMS::Key": key,
    "AWS::KMS::Alias": alias,
    "AWS::SecretsManager::Secret": secret,
}
