"""The environment's replication configs, uploaded as they are (placeholders included).

Each config is a content-addressed asset: a changed config is a new object, so an
execution always reads the config it was started with. The functions resolve the
placeholders when they load it (their environment, then their secret).
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from infra.access import allow
from infra.settings import ROOT, EnvironmentSettings


class ReplicationConfigs(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: EnvironmentSettings):
        super().__init__(scope, construct_id)
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
