"""State `Copy batch`: server-side copy of one batch of the manifest (one item of the S3
copy Map; ``ferry.lifecycle.copy_work``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ferry.config import CopierOptions
from ferry.copying.copier import Progress
from ferry.copying.side_credentials import side_of_batch
from ferry.lifecycle import copy_work
from ferry.statemachine.replication_payloads import CopyBatchInput, CopyBatchResult
from ferry.states.context import StateContext


def run(
    context: StateContext,
    payload: CopyBatchInput | Mapping[str, Any],
    progress: Progress | None = None,
) -> CopyBatchResult:
    """Copy the batch with ``CopyObject``/``UploadPartCopy``; a resumed attempt skips what
    its earlier attempt verified."""
    payload = CopyBatchInput.model_validate(payload)
    # A target bucket of another account is written (and the source read) as its role.
    aws = side_of_batch(payload.batch, payload.manifest_uri, context.aws)
    return copy_work.copy_batch_server_side(
        payload.batch,
        payload.manifest_uri,
        CopierOptions.model_validate(payload.copier_options),
        resume=bool(payload.attempt),
        s3_client=lambda region, connections: aws.client("s3", region, connections=connections),
        progress=progress,
    )
