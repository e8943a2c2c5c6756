"""The IAM checks AWS makes for an HTTP request: its actions, resources and condition keys.

The emulator's front door (``ferry.local.emulator_iam``) reads who signed a request
(``ferry.local.iam_request``), turns the request into the checks AWS would evaluate
(``checks_of``) and hands them to ``ferry.local.authorization``. Each service's requests are
mapped where its protocol puts the operation: S3 (``iam_actions_s3``); the JSON services,
by ``X-Amz-Target`` (``iam_actions_json``); the query services, by the form's ``Action``
(``iam_actions_query``); the REST services, by method and path (``iam_actions_rest``;
Lake Formation's, ``iam_actions_lakeformation``). A
request no mapper knows is ``Unmodelled``: refused with a message that names it, never
silently allowed.
"""

from __future__ import annotations

from collections.abc import Callable

from ferry.local.authorization import Check
from ferry.local.iam_actions_json import (
    dynamodb_checks,
    events_checks,
    glue_checks,
    kms_checks,
    secretsmanager_checks,
    states_checks,
)
from ferry.local.iam_actions_lakeformation import lakeformation_checks
from ferry.local.iam_actions_query import iam_checks, monitoring_checks, sns_checks, sts_checks
from ferry.local.iam_actions_rest import emr_serverless_checks, lambda_checks, scheduler_checks
from ferry.local.iam_actions_s3 import s3_checks
from ferry.local.iam_request import HttpRequest, Unmodelled

#: The mapper of each service's requests, by the service its signature names.
_MAPPERS: dict[str, Callable[[HttpRequest], list[Check] | Unmodelled]] = {
    "s3": s3_checks,
    "glue": glue_checks,
    "dynamodb": dynamodb_checks,
    "secretsmanager": secretsmanager_checks,
    "states": states_checks,
    "kms": kms_checks,
    "sns": sns_checks,
    "sts": sts_checks,
    "monitoring": monitoring_checks,
    "lambda": lambda_checks,
    "emr-serverless": emr_serverless_checks,
    "events": events_checks,
    "scheduler": scheduler_checks,
    "lakeformation": lakeformation_checks,
    "iam": iam_checks,
}


def checks_of(request: HttpRequest) -> list[Check] | Unmodelled:
    """The IAM checks AWS makes for ``request``."""
    service = request.signed.service
    mapper = _MAPPERS.get(service)
    if mapper is None:
        return Unmodelled(f"{service} {request.method} {request.path}")
    return mapper(request)
