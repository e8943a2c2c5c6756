"""``python -m infra.app`` (or ``cdk synth``): the CDK app, one stack per environment.

The environment comes from the context: ``cdk synth -c environment=prod``.
"""

from __future__ import annotations

import aws_cdk as cdk

from infra.stack import FerryStack


def build_app(outdir: str | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir) if outdir else cdk.App()
    environment = app.node.try_get_context("environment") or "dev"
    FerryStack(app, f"Ferry-{environment}", environment=environment)
    return app


if __name__ == "__main__":
    import os

    # The CDK CLI passes CDK_OUTDIR; run directly, write where the CLI would.
    build_app(os.environ.get("CDK_OUTDIR", "cdk.out")).synth()
