"""How data is copied: ``copier-options`` (Ferry's, and Circus Train's S3 to S3 options
translated), and where ``ferry replicate`` runs the Spark copy (``emr-serverless``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, model_validator

from ferry.config.base import WholeNumber, _Model
from ferry.config.circus_train import (
    ASSUME_ROLE,
    COPIER_CHOSEN,
    NO_BANDWIDTH_LIMIT,
    RETRIES,
    S3_MULTIPART_UPLOAD,
    SDK_CREDENTIALS,
    SPARK_BALANCES,
)
from ferry.storage.s3 import MiB

#: Locations a plan lists at once unless ``copier-options.threads`` says otherwise.
LISTING_THREADS = 8


class CopierOptions(_Model):
    """How data is copied: Ferry's options, and Circus Train's S3 to S3 options translated.

    Circus Train's ``s3s3-*`` sizes are bytes; Ferry's are MiB (rounded up). Its other
    copier options (DistCp's, S3MapReduceCp's) are accepted with a warning.
    """

    circus_train_keys: ClassVar[Mapping[str, str]] = {
        # DistCp (to HDFS)
        "file-attribute": (
            "Ferry copies file contents only: the replica's owner, permissions and times are "
            "the writer's (object stores keep none)"
        ),
        "preserve-raw-xattrs": "Ferry copies file contents only, never extended attributes",
        "atomic-commit": (
            "every Ferry run writes a new snapshot folder and points the replica at it only "
            "after every file is verified: readers never see a partial copy"
        ),
        "atomic-work-path": "Ferry writes straight into the run's new snapshot folder",
        "blocking": "Ferry's copies always finish (and are verified) before the commit",
        "copy-strategy": SPARK_BALANCES,
        "max-maps": SPARK_BALANCES,
        "num-of-workers-per-map": SPARK_BALANCES,
        "filters-file": "Ferry copies every file of a selected partition",
        "ignore-failures": (
            "a file Ferry cannot copy fails its table (its new snapshot is removed unless "
            "referenced); the other tables go on"
        ),
        "log-path": "Ferry writes each copy's report under the work location, runs/<event-id>/",
        "task-bandwidth": NO_BANDWIDTH_LIMIT,
        "skip-crc": "Ferry verifies every copied file's size at the target",
        "ssl-configuration-file": "Ferry reaches S3 and GCS over TLS by default; no hftps://",
        "ignore-missing-partition-folder-errors": (
            "Ferry lists each partition's folder; a missing folder has no files to copy"
        ),
        "copier-factory-class": COPIER_CHOSEN,
        "data-manipulator-factory-class": "Ferry deletes replica data through its own file layer",
        "tmp-dir": "Ferry stages nothing: files stream into the snapshot folder",
        # S3MapReduceCp (HDFS to S3) and S3 to S3
        "credential-provider": SDK_CREDENTIALS,
        "storage-class": (
            "Ferry writes objects in the bucket's default storage class; an S3 lifecycle rule "
            "can move them to another"
        ),
        "s3-server-side-encryption": (
            "Ferry's objects get the target bucket's default encryption (SSE-S3, or SSE-KMS "
            "when the bucket sets it)"
        ),
        "canned-acl": (
            "Ferry sets no ACL: the bucket owner owns the objects (S3's default, ACLs disabled)"
        ),
        "region": "Ferry looks each bucket's region up (HeadBucket)",
        "s3-endpoint-uri": "Ferry's S3 endpoint is AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL",
        "multipart-upload-chunk-size": S3_MULTIPART_UPLOAD,
        "multipart-upload-threshold": S3_MULTIPART_UPLOAD,
        "upload-retry-count": RETRIES,
        "upload-retry-delay-ms": RETRIES,
        "s3s3-retry-max-copy-attempts": RETRIES,
        "upload-buffer-size": "Ferry's streaming buffer is copier-options.chunk-size-mib",
        # The top-level ones become replica-catalog.assume-role (ferry.config.assume_role).
        "assume-role": ASSUME_ROLE,
        "assume-role-session-duration-seconds": ASSUME_ROLE,
    }
    #: Circus Train's S3 to S3 options and the Ferry option each sets (sizes: bytes → MiB).
    circus_train_translations: ClassVar[Mapping[str, tuple[str, bool]]] = {
        "s3s3-max-thread-pool-size": ("threads", False),
        "s3s3-multipart-copy-threshold-in-bytes": ("multipart-threshold-mib", True),
        "s3s3-multipart-copy-part-size-in-bytes": ("part-size-mib", True),
    }

    #: Files copied at once. None: each copier chooses from the manifest (many small
    #: files: more threads; a few large ones: fewer, each in parallel parts) and a plan
    #: lists on ``LISTING_THREADS``.
    threads: WholeNumber | None = Field(default=None, ge=1, le=256)
    #: Read and write size; a file up to this size is copied to S3 with one request.
    chunk_size_mib: WholeNumber = Field(default=8, ge=1, le=1024)
    #: At most this much data is copied inline (in the CLI, or in a Lambda); more goes to Spark.
    inline_threshold_mib: WholeNumber = Field(default=1024, ge=0)
    #: Files per batch of the S3 server-side copy (one Lambda invocation each).
    s3_batch_files: WholeNumber = Field(default=100, ge=1, le=1000)
    #: Bytes per batch of the S3 server-side copy, at most (a larger object is a batch of its
    #: own): what one 15-minute Lambda copies, across regions too, with time to spare.
    s3_batch_gib: WholeNumber = Field(default=25, ge=1, le=5120)
    #: Objects above this size are copied in parts (CopyObject's own limit is 5 GiB).
    multipart_threshold_mib: WholeNumber = Field(default=5120, ge=5, le=5120)
    part_size_mib: WholeNumber = Field(default=512, ge=5, le=5120)

    @property
    def listing_threads(self) -> int:
        """Locations a plan lists at once: ``threads`` when given."""
        return self.threads or LISTING_THREADS

    @model_validator(mode="before")
    @classmethod
    def _translate_circus_train(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key, (ferry_key, in_bytes) in cls.circus_train_translations.items():
            if key not in data:
                continue
            value = data.pop(key)
            if ferry_key in data or ferry_key.replace("-", "_") in data:
                raise ValueError(f"give '{ferry_key}' or Circus Train's '{key}', not both")
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f"{key}: {value!r} is not a whole number")
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"{key}: {value!r} is not a whole number") from None
            data[ferry_key] = -(-number // MiB) if in_bytes else number
        return data


class EmrServerlessSettings(_Model):
    """Where ``ferry replicate`` runs the Spark copy on AWS (else: spark-submit, locally)."""

    application_id: str
    execution_role_arn: str
    #: The copy job, uploaded (``emr_jobs/copy_files.py``), e.g. ``s3://bucket/copy_files.py``.
    entry_point: str
    spark_submit_parameters: str | None = None
    region: str | None = None
