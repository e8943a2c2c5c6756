"""The parts of an environment's settings (``infra/settings.py``) that name data, catalogs and
accounts beyond its replications: ad-hoc access, failback's reverse run, the DR account.

Locations, databases, topics, roles and keys may use IAM's wildcards (``*``, ``?``); each is
checked as its service names it, and a mistake is the settings' one line naming the key.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ferry.config import AssumeRole, check_bucket_name
from ferry.config.objectives import parse_rpo

ACCOUNT = re.compile(r"\d{12}")
REGION = re.compile(r"[a-z]{2}(-gov)?-[a-z]+-\d")


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class SettingsModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=_kebab, populate_by_name=True, extra="forbid", frozen=True
    )


def _s3_prefix(value: str) -> str:
    """An S3 location, where IAM's wildcards (``*``, ``?``) may stand for any characters:
    ``s3://dr-*/warehouse/`` is every bucket whose name starts with ``dr-``."""
    bucket = value.removeprefix("s3://").partition("/")[0]
    if not value.startswith("s3://"):
        raise ValueError(f"{value!r} is not an S3 location (s3://bucket/prefix/)")
    # The configs' own check of a bucket's name, on the name with its wildcards filled in.
    check_bucket_name(bucket.replace("*", "a").replace("?", "a"))
    return value


S3Prefix = Annotated[str, AfterValidator(_s3_prefix)]


def _matching(pattern: str, what: str) -> AfterValidator:
    """A value that matches ``pattern`` whole; otherwise ``what`` says what it should be."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return AfterValidator(check)


GlueDatabase = Annotated[
    str,
    _matching(
        r"[a-z0-9_*?]{1,255}",
        "a Glue database name (lower-case letters, digits and '_'; IAM's wildcards * and ? "
        "allowed)",
    ),
]


class GlueAccess(SettingsModel):
    """Glue databases of one catalog (IAM wildcards allowed): read, and written as replicas."""

    #: The catalog's region and account (its id); the environment's own by default.
    region: str | None = Field(default=None, pattern=REGION.pattern)
    catalog_id: str | None = Field(default=None, pattern=ACCOUNT.pattern)
    read_databases: list[GlueDatabase] = Field(default_factory=list)
    write_databases: list[GlueDatabase] = Field(default_factory=list)


class AdHocAccess(SettingsModel):
    """What configs that are not among ``replications`` may use when someone runs them with
    ``ferry execute`` on this environment: the deployed roles grant exactly the configured
    data, catalogs and topics, so anything else must be named here. Replicas are still written
    below ``write-locations`` only."""

    read_locations: list[S3Prefix] = Field(default_factory=list)
    read_kms_keys: list[KmsKey] = Field(default_factory=list)
    glue: list[GlueAccess] = Field(default_factory=list)
    #: SNS topics (ARNs, IAM wildcards allowed) such configs publish to.
    topics: list[str] = Field(default_factory=list)
    #: Roles of other accounts (ARNs, IAM wildcards allowed) such configs assume
    #: (``assume-role``): the DR roles of ``infra/dr_account.py``.
    assume_roles: list[str] = Field(default_factory=list)
    #: IAM roles and users (ARNs, IAM wildcards allowed) such configs map Lake Formation
    #: grants to (``permissions.lake-formation``): with any, Plan and Commit get the Lake
    #: Formation actions of replicating grants (``infra/grants_access.py``).
    grant_principals: list[str] = Field(default_factory=list)

    @field_validator("assume_roles")
    @classmethod
    def _role_arns(cls, roles: list[str]) -> list[str]:
        for role in roles:
            if not re.fullmatch(r"arn:aws[\w-]*:iam::\d{12}:role/[\w+=,.@/*?-]+", role):
                raise ValueError(f"{role!r} is not an IAM role ARN")
        return roles

    @field_validator("grant_principals")
    @classmethod
    def _principal_arns(cls, principals: list[str]) -> list[str]:
        for principal in principals:
            if not re.fullmatch(r"arn:aws[\w-]*:iam::\d{12}:(role|user)/[\w+=,.@/*?-]+", principal):
                raise ValueError(f"{principal!r} is not an IAM role or user ARN")
        return principals

    @field_validator("topics")
    @classmethod
    def _topic_arns(cls, topics: list[str]) -> list[str]:
        for topic in topics:
            if not re.fullmatch(r"arn:aws[\w-]*:sns:[\w*?-]+:[\d*?]+:[\w*?.-]+", topic):
                raise ValueError(f"{topic!r} is not an SNS topic ARN")
        return topics


KmsKey = Annotated[
    str,
    _matching(
        r"arn:aws[\w-]*:kms:[a-z0-9-]+:\d{12}:key/[\w*?-]+",
        "a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>; not an alias: S3 names the "
        "key itself)",
    ),
]


class Failback(SettingsModel):
    """What ``ferry failback``'s reverse run may write through the pipeline: it replicates
    DR's changes into the source tables, so the roles of Plan, the copies and Commit need the
    source's locations and catalog. Never granted by default: an environment without it
    grants nothing of the source beyond reading it."""

    #: Below these (the source tables' locations) the reverse run writes its snapshots.
    write_locations: list[S3Prefix] = Field(min_length=1)
    #: The source Glue databases whose tables it alters (IAM wildcards allowed), in each
    #: config's source catalog; a Hive source metastore is reached through the VPC.
    databases: list[GlueDatabase] = Field(default_factory=list)
    #: The KMS keys the source buckets encrypt with, which writing there needs.
    kms_keys: list[KmsKey] = Field(default_factory=list)


class DrBucket(SettingsModel):
    """A bucket of the DR account's replica side (``infra/dr_buckets.py``): one the DR stack
    creates, with its policy (and its key), or one of the account's own, whose policy the
    operator completes with the statements the stack outputs. A bare name is an existing one."""

    name: str
    #: The DR stack creates the bucket and owns its policy.
    create: bool = False
    #: Encrypted with the DR stack's KMS key (a created bucket only).
    kms: bool = False

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: object) -> object:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        return check_bucket_name(name)

    @field_validator("kms")
    @classmethod
    def _kms_of_created(cls, kms: bool, info: ValidationInfo) -> bool:
        if kms and not info.data.get("create"):
            raise ValueError(
                "only a bucket the stack creates (create: true) gets its key; the key of an "
                "existing bucket goes in dr-account.kms-keys"
            )
        return kms


class DrAccount(SettingsModel):
    """The disaster-recovery account (``infra/dr_account.py``): the role Ferry's roles assume
    there, and the buckets and Glue databases of the replica side it may use."""

    account: str = Field(pattern=ACCOUNT.pattern)
    region: str = Field(pattern=REGION.pattern)
    role_name: str = Field(pattern=r"^[\w+=,.@-]{1,64}$")
    buckets: list[DrBucket] = Field(min_length=1)
    glue_databases: list[GlueDatabase] = Field(default_factory=list)
    #: The KMS keys the existing DR buckets encrypt with (SSE-KMS), used through S3 only.
    kms_keys: list[KmsKey] = Field(default_factory=list)
    #: What the configs' ``assume-role.external-id`` gives; the role's trust asks for it.
    external_id: str | None = None
    #: The longest session the role grants (STS: 1 to 12 hours); the configs'
    #: ``assume-role.session-duration`` must fit in it.
    max_session_duration: timedelta = timedelta(hours=1)

    @field_validator("buckets")
    @classmethod
    def _each_bucket_once(cls, buckets: list[DrBucket]) -> list[DrBucket]:
        names = [bucket.name for bucket in buckets]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"bucket {twice[0]!r} is named twice")
        return buckets

    @property
    def bucket_names(self) -> list[str]:
        """Every DR bucket's name, created by the stack or not."""
        return [bucket.name for bucket in self.buckets]

    @field_validator("external_id")
    @classmethod
    def _external_id(cls, value: str | None) -> str | None:
        if value is not None:
            AssumeRole(role_arn=f"arn:aws:iam::{'0' * 12}:role/x", external_id=value)
        return value

    @field_validator("max_session_duration", mode="before")
    @classmethod
    def _session(cls, value: object) -> timedelta:
        duration = parse_rpo(value)
        if not timedelta(hours=1) <= duration <= timedelta(hours=12):
            raise ValueError(f"{value!r}: IAM allows a role's sessions of PT1H to PT12H")
        return duration

    @property
    def role_arn(self) -> str:
        return f"arn:aws:iam::{self.account}:role/{self.role_name}"
