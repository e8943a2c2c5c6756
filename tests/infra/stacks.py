"""One environment's stack synthesized on its own, from settings a test changed."""

from __future__ import annotations

from typing import Any

from infra.settings import EnvironmentSettings


def synthesized(settings: EnvironmentSettings) -> dict[str, Any]:
    """The template of ``settings``' stack, as ``cdk synth`` writes it."""
    from aws_cdk import App
    from aws_cdk.assertions import Template

    from infra.stack import FerryStack

    return Template.from_stack(FerryStack(App(), settings.stack_name, settings=settings)).to_json()
