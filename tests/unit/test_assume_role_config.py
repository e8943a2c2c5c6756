"""The replica side in another account: ``replica-catalog.assume-role``, and Circus Train's
``copier-options.assume-role`` translated to it."""

from datetime import timedelta

import pytest

from ferry.config import parse_config_text
from ferry.core.errors import ConfigError

ROLE = "arn:aws:iam::210987654321:role/ferry-dr"

CONFIG = """
source-catalog:
  name: onprem
  hive-metastore-uris: thrift://metastore:9083
replica-catalog:
  name: dr
  glue: {{region: us-west-2, catalog-id: "210987654321"}}
{replica}
{copier}
table-replications:
  - source-table: {{database-name: sales, table-name: orders}}
    replica-table: {{table-location: "s3://dr-bucket/orders"}}
{table}
"""


def load(replica="", copier="", table=""):
    return parse_config_text(
        CONFIG.format(replica=replica, copier=copier, table=table), "replication.yml"
    )


def test_the_replica_side_names_a_role_in_the_dr_account():
    config = load(
        f"  assume-role:\n    role-arn: {ROLE}\n    external-id: ferry-dr-1\n"
        "    session-duration: PT2H"
    )
    role = config.replica_catalog.assume_role
    assert (role.role_arn, role.external_id, role.session_duration) == (
        ROLE,
        "ferry-dr-1",
        timedelta(hours=2),
    )
    assert role.account == "210987654321"
    assert role.parameters() == {
        "RoleArn": ROLE,
        "RoleSessionName": "ferry",
        "DurationSeconds": 7200,
        "ExternalId": "ferry-dr-1",
    }
    assert config.source_catalog.assume_role is None
    assert config.warnings == ()


def test_a_session_lasts_an_hour_unless_told():
    config = load(f"  assume-role: {{role-arn: {ROLE}}}")
    assert config.replica_catalog.assume_role.session_duration == timedelta(hours=1)


def test_circus_train_copier_options_assume_role_becomes_the_replica_sides_role():
    config = load(
        copier=(
            f"copier-options:\n  assume-role: {ROLE}\n"
            "  assume-role-session-duration-seconds: 1800\n  threads: 4"
        )
    )
    role = config.replica_catalog.assume_role
    assert (role.role_arn, role.session_duration) == (ROLE, timedelta(minutes=30))
    assert config.copier_options.threads == 4
    assert config.warnings == ()  # no warning: Ferry does what Circus Train did


def test_a_tables_own_assume_role_is_a_warning_naming_the_replica_sides_role():
    config = load(table=f"    copier-options: {{assume-role: {ROLE}}}")
    [warning] = config.warnings
    assert warning.key == "table-replications[0].copier-options.assume-role"
    assert "replica-catalog.assume-role" in warning.message
    assert config.replica_catalog.assume_role is None


@pytest.mark.parametrize(
    ("replica", "copier", "message"),
    [
        (
            "  assume-role: {role-arn: arn:aws:iam::2109:role/x}",
            "",
            r"replica-catalog\.assume-role\.role-arn: 'arn:aws:iam::2109:role/x' is not an IAM "
            r"role ARN",
        ),
        (
            "  assume-role: {role-arn: arn:aws:iam::210987654321:user/x}",
            "",
            r"replica-catalog\.assume-role\.role-arn: .* is not an IAM role ARN",
        ),
        (
            f"  assume-role: {{role-arn: {ROLE}, session-duration: PT13H}}",
            "",
            r"replica-catalog\.assume-role\.session-duration: 'PT13H' is outside STS's session "
            r"limits: give PT15M \(900 seconds\) to PT12H \(43200 seconds\)",
        ),
        (
            f"  assume-role: {{role-arn: {ROLE}, session-duration: 600}}",
            "",
            r"replica-catalog\.assume-role\.session-duration: 600 is outside STS's session limits",
        ),
        (
            f"  assume-role: {{role-arn: {ROLE}, external-id: 'a b'}}",
            "",
            r"replica-catalog\.assume-role\.external-id: 'a b' is not an external id",
        ),
        (
            "",
            "copier-options: {assume-role: 'ct-role'}",
            r"copier-options\.assume-role: 'ct-role' is not an IAM role ARN",
        ),
        (
            "",
            f"copier-options: {{assume-role: {ROLE}, assume-role-session-duration-seconds: 60}}",
            r"copier-options\.assume-role-session-duration-seconds: 60 is outside STS's",
        ),
        (
            "",
            "copier-options: {assume-role-session-duration-seconds: 3600}",
            r"copier-options\.assume-role-session-duration-seconds: give copier-options\."
            r"assume-role too",
        ),
        (
            f"  assume-role: {{role-arn: {ROLE}}}",
            f"copier-options: {{assume-role: {ROLE}}}",
            r"give replica-catalog\.assume-role or Circus Train's copier-options\.assume-role, "
            r"not both",
        ),
    ],
)
def test_a_bad_role_is_one_line_naming_the_key(replica, copier, message):
    with pytest.raises(ConfigError, match=message) as raised:
        load(replica, copier)
    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith("replication.yml: ")
