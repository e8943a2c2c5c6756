"""``python -m infra.app`` (``make synth``, or ``cdk synth``): the CDK app of every environment.

Each ``infra/environments/<name>.yml`` is one stack, ``Ferry-<name>`` (plus one small stack
per other region whose buckets trigger it, and ``Ferry-<name>-dr-account`` in the DR account
when it names one, ``infra/dr_account.py``). ``-c environment=prod`` synthesizes one only, as
``cdk deploy -c environment=prod`` deploys it. The AWS Solutions checks (cdk-nag) run on
every stack: a finding that is not acknowledged, with its reason, fails the synth.
"""

from __future__ import annotations

import aws_cdk as cdk

from infra.checks import check
from infra.dr_account import DrAccountStack
from infra.forwarding import EventForwarding
from infra.settings import EnvironmentSettings, environment_names, load_environment
from infra.stack import FerryStack
from infra.triggers import foreign_regions


def build_app(
    outdir: str | None = None,
    environments: list[str] | None = None,
    settings: list[EnvironmentSettings] | None = None,
) -> cdk.App:
    """The app of the named environments (all of ``infra/environments/`` by default), or of
    the ``settings`` given (the local runtime's own environment)."""
    app = cdk.App(outdir=outdir) if outdir else cdk.App()
    chosen = app.node.try_get_context("environment")
    if settings is None:
        names = environments or ([chosen] if chosen else environment_names())
        settings = [load_environment(name) for name in names]
    for environment in settings:
        build_environment(app, environment)
    check(app)
    return app


def build_environment(app: cdk.App, settings: EnvironmentSettings) -> None:
    """The stacks of one environment: its pipeline, a forwarder per other region, and the
    DR account's role when its settings name a DR account."""
    FerryStack(app, settings.stack_name, settings=settings)
    if settings.dr_account is not None:
        DrAccountStack(app, f"{settings.stack_name}-dr-account", settings=settings)
    for region, patterns in sorted(foreign_regions(settings).items()):
        EventForwarding(
            app,
            f"{settings.stack_name}-events-{region}",
            settings=settings,
            region=region,
            patterns=patterns,
        )


def main(argv: list[str] | None = None) -> None:
    """``python -m infra.app [-c environment=NAME]``: synthesize; a mistake in the settings is
    one line on stderr, exit code 2, nothing written."""
    import os
    import sys

    from ferry.core.errors import FerryError
    from infra.settings import SettingsError

    arguments = sys.argv[1:] if argv is None else argv
    environments = [
        value.removeprefix("environment=")
        for flag, value in zip(arguments, arguments[1:], strict=False)
        if flag in ("-c", "--context") and value.startswith("environment=")
    ]
    try:
        # The CDK CLI passes CDK_OUTDIR (and the context); run directly, write where the CLI
        # would.
        assembly = build_app(
            os.environ.get("CDK_OUTDIR", "cdk.out"), environments=environments or None
        ).synth()
    except (SettingsError, FerryError) as error:
        print(f"ferry: error: {error}", file=sys.stderr)
        sys.exit(2)
    for stack in assembly.stacks:
        region = stack.environment.region
        print(f"synthesized {stack.stack_name} ({region}): {stack.template_full_path}")


if __name__ == "__main__":
    main()
