import os

import pytest

# The CDK's jsii runtime prints a banner on every start about Node 20's support window.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


@pytest.fixture(scope="session")
def app(tmp_path_factory):
    """Every example environment, synthesized once (the checks run as in ``make synth``)."""
    from infra.app import build_app

    app = build_app(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    app.synth()
    return app


@pytest.fixture(scope="session")
def stacks(app):
    from infra.stack import FerryStack

    return {c.settings.name: c for c in app.node.children if isinstance(c, FerryStack)}


@pytest.fixture(scope="module")
def simulator():
    """The IAM policy simulator the local runtime uses (``ferry.local.simulator``)."""
    from ferry.local.simulator import PolicySimulator, simulator_problem

    problem = simulator_problem()
    if problem:
        pytest.fail(problem)
    with PolicySimulator() as running:
        yield running


def _environment_names() -> list[str]:
    from infra.settings import environment_names

    return environment_names()


@pytest.fixture(scope="module", params=_environment_names())
def deployed(request, stacks):
    """Each example environment's stack, its template, and the template resolved as AWS will."""
    from aws_cdk.assertions import Template

    from ferry.local.template import resolved_statically

    stack = stacks[request.param]
    template = Template.from_stack(stack).to_json()
    resolved = resolved_statically(
        template, stack.stack_name, stack.settings.account, stack.settings.region
    )
    return stack, template, resolved
