"""The CDK's file assets of a stack (``<stack>.assets.json``), with their destinations in the
bootstrap bucket: what the local runtime's deploy publishes before it creates the stack."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


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
