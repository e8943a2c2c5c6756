"""AWS's limits on resource names, and the names Ferry makes from a config's name."""

from __future__ import annotations

import pytest

from ferry.core.resource_names import fitted, name_problem, template_name_problems


def test_a_name_that_fits_is_kept_as_it_is():
    assert fitted("ferry-prod-", "sales-dr", "-catalog-poller", 64) == (
        "ferry-prod-sales-dr-catalog-poller"
    )


def test_a_long_name_keeps_its_start_and_end_and_gets_a_digest_of_the_whole():
    config = "sales-and-customers-nightly-dr-eu1"  # 34 characters
    name = fitted("ferry-production-", config, "-catalog-poller", 64)
    assert len(name) == 64
    assert name.startswith("ferry-production-sales-and-customers")
    assert name.endswith("-catalog-poller")
    assert name == fitted("ferry-production-", config, "-catalog-poller", 64)  # stable
    # Two configs that share their first characters still get two names.
    other = fitted("ferry-production-", config[:-1] + "2", "-catalog-poller", 64)
    assert other != name and len(other) == 64
    assert name_problem("AWS::Scheduler::Schedule", name) is None


def test_no_room_for_the_config_is_an_error():
    with pytest.raises(ValueError, match="no room"):
        fitted("x" * 60, "config", "-suffix", 64)


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        (
            "AWS::Scheduler::Schedule",
            "s" * 70,
            "has 70 characters; AWS::Scheduler::Schedule allows 1 to 64",
        ),
        ("AWS::Events::Rule", "a rule", "allows letters, digits and '.-_'"),
        ("AWS::StepFunctions::StateMachine", "m" * 81, "allows 1 to 80"),
        ("AWS::IAM::Role", "r" * 65, "allows 1 to 64"),
        ("AWS::Lambda::Function", "f" * 65, "allows 1 to 64"),
        ("AWS::Logs::LogGroup", "/aws/" + "l" * 510, "allows 1 to 512"),
        ("AWS::S3::Bucket", "Upper", "lower-case letters"),
    ],
)
def test_a_name_its_service_refuses_says_why(kind, name, expected):
    assert expected in name_problem(kind, name)


def test_names_at_their_limits_pass():
    assert name_problem("AWS::Scheduler::Schedule", "s" * 64) is None
    assert name_problem("AWS::StepFunctions::StateMachine", "m" * 80) is None
    assert name_problem("AWS::CloudWatch::Alarm", "ferry-prod-replication-timed-out") is None


def test_a_template_names_each_resource_it_refuses():
    template = {
        "Resources": {
            "Ok": {"Type": "AWS::Events::Rule", "Properties": {"Name": "ok"}},
            "Computed": {"Type": "AWS::Events::Rule", "Properties": {"Name": {"Ref": "X"}}},
            "Long": {"Type": "AWS::Scheduler::Schedule", "Properties": {"Name": "x" * 65}},
        }
    }
    assert template_name_problems(template, "stack S: ") == [
        "stack S: resource Long: Name '" + "x" * 65 + "' has 65 characters; "
        "AWS::Scheduler::Schedule allows 1 to 64"
    ]
