"""The environment's replication configs, uploaded as they are (placeholders included).

Each config is a content-addressed asset: a changed config is a new object, so an
execution always reads the config it was started with. The functions resolve the
placeholders when they load it (their environment, then their secret). The object's URI is
the config's identity: the change feeds key their items by it (``ferry.feeds.windows``), so
two files of the same content, one object, are refused; so are two files of the same name,
whose rules and schedules would have one name (``ferry-<env>-<name>-…``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from infra.access import allow
from infra.settings import ROOT, EnvironmentSettings, SettingsError


class ReplicationConfigs(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings):
        super().__init__(scope, construct_id)
        check_distinct(settings.name, settings.configs)
        self.assets: dict[Path, s3_assets.Asset] = {}
        for index, path in enumerate(settings.configs):
            self.assets[path] = s3_assets.Asset(
                self, f"Config{index}", path=str(path if path.is_absolute() else ROOT / path)
            )

    def uri(self, path: Path) -> str:
        """Where the functions read the config: ``s3://<assets bucket>/<hash>.yml``."""
        return self.assets[path].s3_object_url

    def grant_read(self, grantee: iam.IGrantable) -> None:
        """Read these objects, nothing else of the assets bucket."""
        allow(
            grantee,
            ["s3:GetObject"],
            [a.bucket.arn_for_objects(a.s3_object_key) for a in self.assets.values()],
        )


def check_distinct(environment: str, paths: Iterable[Path]) -> None:
    """Refuse, in one line naming both, two configs of one environment that would deploy as
    one: the same file name (their rules', schedules' and outputs' names), or the same content
    (one object, whose change feeds' position and windows both would take)."""
    names: dict[str, Path] = {}
    contents: dict[str, Path] = {}
    for path in paths:
        first = names.setdefault(path.stem, path)
        if first != path:
            raise SettingsError(
                f"{environment}: the configs {first} and {path} have the same name "
                f"{path.stem!r}: their rules and schedules (ferry-{environment}-{path.stem}-…) "
                "would be one; rename one of the files"
            )
        digest = hashlib.sha256((path if path.is_absolute() else ROOT / path).read_bytes())
        first = contents.setdefault(digest.hexdigest(), path)
        if first != path:
            raise SettingsError(
                f"{environment}: the configs {first} and {path} are the same file: deployed, "
                "they are one object, whose change feeds (position, windows) both would "
                "share; keep one"
            )
