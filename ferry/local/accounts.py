"""The emulator's other accounts: a DR account next to the pipeline's.

moto keeps every account apart and serves a request in the account of its credentials (an
assumed role's account is the role's). An administrator of another account — what
``cdk deploy`` runs as there — is a client whose requests carry moto's header
``x-moto-account-id``: requests signed with the emulator's plain test credentials pass
unauthorized, as a person's do (``ferry.local.authorization``), and land in that account.

``deploy_dr_account`` deploys the DR account's stack (``infra/dr_account.py``), as
synthesized, into its account of the emulator: the role Ferry's roles assume there, with
its trust and its permissions, evaluated by the emulator like every policy of the stack.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

ACCOUNT_HEADER = "x-moto-account-id"


def in_account(client: Any, account: str) -> Any:
    """``client``, its requests served in ``account`` (the emulator's administrator there)."""

    def header(request: Any, **_: Any) -> None:
        request.headers[ACCOUNT_HEADER] = account

    client.meta.events.register("before-sign", header)
    return client


def account_clients(account: str, region: str, endpoint: str | None = None) -> Callable[..., Any]:
    """``client(service, region=None)`` of ``account``'s administrator in the emulator."""
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region
    )

    def client(service: str, client_region: str | None = None) -> Any:
        made = session.client(service, region_name=client_region or region, endpoint_url=endpoint)
        return in_account(made, account)

    return client


def deploy_dr_account(settings: Any, outdir: Path, endpoint: str | None = None) -> dict[str, Any]:
    """Synthesize the DR account's stack of ``settings`` (an environment's, with
    ``dr-account``) and deploy it into that account of the emulator; the stack's outputs."""
    import aws_cdk as cdk

    from ferry.local.stack import Deployment
    from infra.dr_account import DrAccountStack

    dr = settings.dr_account
    app = cdk.App(outdir=str(outdir))
    stack = DrAccountStack(app, f"{settings.stack_name}-dr-account", settings=settings)
    template = app.synth().get_stack_by_name(stack.stack_name).template
    client = account_clients(dr.account, dr.region, endpoint)
    return Deployment(template, stack.stack_name, dr.account, dr.region, client).deploy()
