"""The synthesized templates pass the AWS Solutions checks (every acknowledgement with its
reason) and cfn-lint, for every example environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks

from infra.checks import reason_for

pytestmark = pytest.mark.infra


def test_no_finding_is_left_unacknowledged(app):
    for stack in app.node.children:
        report = AwsSolutionsChecks(verbose=False).validate_scope(stack)
        assert [v.rule_name for v in report.violations] == [], stack.node.id


def test_every_acknowledgement_has_its_reason(app):
    from aws_cdk import Stack, Validations

    acknowledged = 0
    for stack in [c for c in app.node.children if isinstance(c, Stack)]:
        for construct in stack.node.find_all():
            for entry in construct.node.metadata:
                if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                    for rule, reason in entry.data.items():
                        assert len(str(reason)) > 30, (construct.node.path, rule)
                        acknowledged += 1
    assert acknowledged > 0


def test_a_wildcard_outside_the_configured_resources_has_no_reason(stacks):
    stack = stacks["dev"]
    path = "Ferry-dev/Functions/PlanRole/DefaultPolicy/Resource"
    assert (
        reason_for("AwsSolutions-IAM5[Resource::arn:aws:s3:::someone-elses-bucket/*]", path, stack)
        is None
    )
    assert reason_for("AwsSolutions-IAM5[Action::s3:*]", path, stack) is None
    # "*" is accepted for X-Ray and log delivery only, not beside any other action.
    assert reason_for("AwsSolutions-IAM5[Resource::*]", path, stack) is not None
    other = Stack(App(), "Other")
    role = iam.Role(other, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=["xray:PutTraceSegments", "s3:GetObject"], resources=["*"])
    )
    assert (
        reason_for("AwsSolutions-IAM5[Resource::*]", "Other/Role/DefaultPolicy/Resource", other)
        is None
    )
    assert reason_for("AwsSolutions-S1", "Ferry-dev/Work/Bucket/Resource", stack) is None


def test_cfn_lint_finds_no_error(app):
    from cfnlint.api import lint_file

    templates = sorted(Path(app.outdir).glob("*.template.json"))
    assert len(templates) >= 3  # two environments and a forwarder
    for template in templates:
        errors = [
            f"{m.rule.id} {m.message} ({m.path_string})"
            for m in lint_file(template)
            if m.rule.id.startswith("E")
        ]
        assert errors == [], template.name
