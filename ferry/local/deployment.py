"""Whether the AWS emulator already holds the pipeline this checkout would deploy.

The emulator keeps its state across ``ferry local down`` / ``up`` (``ferry.local.
emulator_snapshot``); deploying the same stack again into it would only cost time. Each
deploy leaves a marker in the emulated AWS itself — an SSM parameter holding the digest of
the synthesized template and its assets — so the marker is saved and restored with what it
describes: a restored emulator whose marker matches this checkout's template is not
deployed again, and its secret only gets the running metastores' URIs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from ferry.local import deploy, emulator

#: The SSM parameter of the emulator that names the template deployed into it.
PARAMETER = "/ferry/local/deployed-template"


def template_digest(state_dir: Path) -> str:
    """The digest of the stack's template and assets manifest (synthesized if they changed)."""
    assembly = deploy.synthesize(state_dir)
    stack_name = f"Ferry-{deploy.ENVIRONMENT}"
    digest = hashlib.sha256()
    for suffix in ("template.json", "assets.json"):
        path = assembly / f"{stack_name}.{suffix}"
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def _client(endpoint: str, service: str) -> Any:
    return boto3.session.Session(
        aws_access_key_id=emulator.EMULATOR_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=emulator.EMULATOR_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
        region_name=deploy.REGION,
    ).client(service, endpoint_url=endpoint)


def refresh(endpoint: str, state_dir: Path, secret_values: dict[str, str]) -> bool:
    """True when the emulator at ``endpoint`` holds the pipeline deployed from this
    checkout's template: its secret then gets ``secret_values`` and nothing is deployed."""
    pipeline = deploy.Pipeline.load(state_dir)
    if pipeline is None or not pipeline.config_secret_arn:
        return False
    try:
        deployed = _client(endpoint, "ssm").get_parameter(Name=PARAMETER)["Parameter"]["Value"]
    except ClientError:
        return False  # never deployed into this emulator's state
    if deployed != template_digest(state_dir):
        return False
    try:
        _client(endpoint, "secretsmanager").put_secret_value(
            SecretId=pipeline.config_secret_arn, SecretString=json.dumps(secret_values)
        )
    except ClientError:
        return False  # the recorded pipeline is not this emulator's: deploy it
    return True


def record(endpoint: str, state_dir: Path) -> None:
    """Mark the emulator at ``endpoint`` as holding the pipeline of this checkout's template."""
    _client(endpoint, "ssm").put_parameter(
        Name=PARAMETER, Value=template_digest(state_dir), Type="String", Overwrite=True
    )
