"""``python -m infra.app`` (``make synth``, or ``cdk synth``): the CDK app of every environment.

Each ``infra/environments/<name>.yml`` is one stack, ``Ferry-<name>`` (plus one small stack
per other region whose buckets trigger it). ``-c environment=prod`` synthesizes one only, as
``cdk deploy -c environment=prod`` deploys it. The AWS Solutions checks (cdk-nag) run on
every stack: a finding that is not acknowledged, with its reason, fails the synth.
"""

from __future__ import annotations

import aws_cdk as cdk

from infra.checks import check
from infra.settings import environment_names, load_environment
from infra.stack import FerryStack
from infra.triggers import S3EventForwarding, foreign_regions


def build_app(outdir: str | None = None, environments: list[str] | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir) if outdir else cdk.App()
    chosen = app.node.try_get_context("environment")
    names = environments or ([chosen] if chosen else environment_names())
    for name in names:
        settings = load_environment(name)
        FerryStack(app, settings.stack_name, settings=settings)
        for region, patterns in sorted(foreign_regions(settings).items()):
            S3EventForwarding(
                app,
                f"{settings.stack_name}-events-{region}",
                settings=settings,
                region=region,
                patterns=patterns,
            )
    check(app)
    return app


def main() -> None:
    import os
    import sys

    from ferry.errors import FerryError
    from infra.settings import SettingsError

    try:
        # The CDK CLI passes CDK_OUTDIR; run directly, write where the CLI would.
        assembly = build_app(os.environ.get("CDK_OUTDIR", "cdk.out")).synth()
    except (SettingsError, FerryError) as error:
        sys.exit(f"ferry: error: {error}")
    for stack in assembly.stacks:
        region = stack.environment.region
        print(f"synthesized {stack.stack_name} ({region}): {stack.template_full_path}")


if __name__ == "__main__":
    main()
