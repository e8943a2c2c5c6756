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
