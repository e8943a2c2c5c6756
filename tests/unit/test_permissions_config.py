"""The ``permissions`` section: principal and tag mappings, and one line for each mistake."""

import pytest

from ferry.config import load_config
from ferry.core.errors import ConfigError

GLUE = """
source-catalog: {name: prod, glue: {region: eu-west-1}}
replica-catalog: {name: dr, glue: {region: us-east-1}}
table-replications:
  - source-table: {database-name: sales, table-name: orders}
    replica-table: {table-location: "s3://dr/warehouse/orders"}
"""
HIVE = """
source-catalog: {name: onprem, hive-metastore-uris: "thrift://a:9083"}
replica-catalog: {name: dr, hive-metastore-uris: "thrift://b:9083"}
table-replications:
  - source-table: {database-name: sales, table-name: orders}
    replica-table: {database-name: sales_dr, table-location: "s3://dr/warehouse/orders"}
"""


def load(tmp_path, text):
    path = tmp_path / "c.yml"
    path.write_text(text)
    return load_config(path)


LAKE_FORMATION = """
permissions:
  lake-formation:
    principal-mappings:
      "arn:aws:iam::111111111111:role/analyst": "arn:aws:iam::222222222222:role/analyst"
      IAM_ALLOWED_PRINCIPALS: IAM_ALLOWED_PRINCIPALS
      111111111111: 222222222222
    tag-mappings:
      team: team
      env: {key: environment, values: {prod: dr}}
"""


def test_lake_formation_mappings_load(tmp_path):
    config = load(tmp_path, GLUE + LAKE_FORMATION)
    lake_formation = config.permissions.lake_formation
    assert lake_formation.enabled and lake_formation.revoke
    assert lake_formation.principal_mappings == {
        "arn:aws:iam::111111111111:role/analyst": "arn:aws:iam::222222222222:role/analyst",
        "IAM_ALLOWED_PRINCIPALS": "IAM_ALLOWED_PRINCIPALS",
        "111111111111": "222222222222",
    }
    assert lake_formation.tag_mappings["team"].key == "team"
    assert lake_formation.tag_mappings["team"].values is None
    assert lake_formation.tag_mappings["env"].values == {"prod": "dr"}
    assert config.permissions.hive_privileges is None


HIVE_PRIVILEGES = """
permissions:
  hive-privileges:
    revoke: false
    principal-mappings: {"role:analysts": "ROLE:analysts", "USER:etl": "user:etl_dr"}
"""


def test_hive_principals_load_with_their_type_upper_case(tmp_path):
    config = load(tmp_path, HIVE + HIVE_PRIVILEGES)
    hive = config.permissions.hive_privileges
    assert hive.principal_mappings == {"ROLE:analysts": "ROLE:analysts", "USER:etl": "USER:etl_dr"}
    assert hive.revoke is False


def test_no_section_replicates_no_permissions(tmp_path):
    config = load(tmp_path, GLUE)
    assert config.permissions.lake_formation is None
    assert config.permissions.hive_privileges is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GLUE + "permissions: {lake-formation: {principal-mappings: {analyst: IAM_ALLOWED_PRINCIPALS}}}\n",
         "c.yml: permissions.lake-formation.principal-mappings: 'analyst' is not a Lake Formation principal"),
        (GLUE + "permissions: {lake-formation: {principal-mappings: {IAM_ALLOWED_PRINCIPALS: 'arn:aws:iam::12:role/x'}}}\n",
         "c.yml: permissions.lake-formation.principal-mappings: 'arn:aws:iam::12:role/x' is not a Lake Formation principal"),
        (GLUE + "permissions: {lake-formation: {tag-mappings: {team: {values: {a: b}}}}}\n",
         "c.yml: missing key 'key' in permissions.lake-formation.tag-mappings.team"),
        (GLUE + "permissions: {lake-formation: {principal-mapings: {}}}\n",
         "c.yml: unknown key 'principal-mapings' in permissions.lake-formation; did you mean 'principal-mappings'?"),
        (HIVE + "permissions: {hive-privileges: {principal-mappings: {analysts: 'ROLE:analysts'}}}\n",
         "c.yml: permissions.hive-privileges.principal-mappings: 'analysts' is not a Hive principal: give USER:name, ROLE:name or GROUP:name"),
        (HIVE + "permissions: {lake-formation: {principal-mappings: {}}}\n",
         "c.yml: permissions.lake-formation: Lake Formation grants are replicated from a Glue source-catalog to a Glue replica-catalog"),
        (GLUE + "permissions: {hive-privileges: {principal-mappings: {}}}\n",
         "c.yml: permissions.hive-privileges: Hive privileges are replicated from a Hive metastore source-catalog"),
    ],
    ids=["lf-source", "lf-replica", "tag-key", "unknown-key", "hive-principal",
         "lf-on-hive", "hive-on-glue"],
)  # fmt: skip
def test_a_bad_mapping_is_one_line_naming_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    line = str(raised.value)
    assert "\n" not in line
    assert message in line


def test_a_section_switched_off_fits_any_catalog(tmp_path):
    config = load(tmp_path, HIVE + "permissions: {lake-formation: {enabled: false}}\n")
    assert config.permissions.lake_formation.enabled is False
