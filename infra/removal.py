"""What a deployment keeps when its stack is deleted, or a resource replaced.

Data and evidence outlive the stack (the ledger of snapshots to delete, the work bucket's
runs, logs, the key that encrypts them): CloudFormation keeps them on deletion and on
replacement. Not on a failed first create, though: a resource kept then ("Retain") survives
the rollback, and one with a name (``ferry-<env>-state``, the log groups, the secret) makes
the next deploy fail with "already exists". ``RETAIN_ON_UPDATE_OR_DELETE`` is CloudFormation's
``DeletionPolicy: RetainExceptOnCreate``: kept, except when the stack's creation fails.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy

KEEP = RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE
