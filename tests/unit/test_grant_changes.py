"""What a replica must be granted and revoked: mapped principals, unmapped ones reported,
revocations carried, grants to principals Ferry does not manage left alone."""

from ferry.catalog.grant_changes import grant_changes
from ferry.catalog.grants import Grant, GrantChanges, GrantTarget, ResourceTag
from ferry.config.permissions import TagMapping

SOURCE_ROLE = "arn:aws:iam::111111111111:role/analyst"
REPLICA_ROLE = "arn:aws:iam::222222222222:role/analyst"
MAPPINGS = {SOURCE_ROLE: REPLICA_ROLE, "IAM_ALLOWED_PRINCIPALS": "IAM_ALLOWED_PRINCIPALS"}

SOURCE_TABLE = GrantTarget("sales", "orders")
REPLICA_TABLE = GrantTarget("sales_dr", "orders")


def changes(source, replica=(), **options) -> GrantChanges:
    return grant_changes(source, replica, MAPPINGS, "sales_dr", "orders", **options)


def test_a_source_grant_reaches_the_replica_with_its_principal_mapped():
    columns = GrantTarget("sales", "orders", columns=("amount", "id"))
    result = changes(
        [
            Grant(SOURCE_ROLE, SOURCE_TABLE, "SELECT", grantable=True),
            Grant(SOURCE_ROLE, columns, "SELECT"),
            Grant(SOURCE_ROLE, GrantTarget("sales"), "DESCRIBE"),
        ]
    )
    assert result.grant == (
        Grant(REPLICA_ROLE, GrantTarget("sales_dr"), "DESCRIBE"),
        Grant(REPLICA_ROLE, REPLICA_TABLE, "SELECT", grantable=True),
        Grant(REPLICA_ROLE, GrantTarget("sales_dr", "orders", ("amount", "id")), "SELECT"),
    )
    assert result.revoke == () and result.unmapped_principals == ()


def test_a_principal_no_mapping_names_is_reported_never_guessed():
    stranger = "arn:aws:iam::111111111111:role/contractor"
    result = changes(
        [Grant(stranger, SOURCE_TABLE, "SELECT"), Grant(stranger, SOURCE_TABLE, "INSERT")]
    )
    assert result.grant == ()
    assert result.unmapped_principals == (stranger,)
    assert result.notices() == [
        f"source principal {stranger} is not in principal-mappings: its grants are not replicated"
    ]


def test_a_grant_the_replica_holds_already_is_not_given_again():
    source = [Grant(SOURCE_ROLE, SOURCE_TABLE, "SELECT")]
    replica = [Grant(REPLICA_ROLE, REPLICA_TABLE, "SELECT", grantor="admin")]
    assert changes(source, replica).empty


def test_a_grant_revoked_at_the_source_is_revoked_at_the_replica():
    replica = [
        Grant(REPLICA_ROLE, REPLICA_TABLE, "SELECT"),
        Grant(REPLICA_ROLE, REPLICA_TABLE, "INSERT"),
    ]
    result = changes([Grant(SOURCE_ROLE, SOURCE_TABLE, "SELECT")], replica)
    assert result.revoke == (Grant(REPLICA_ROLE, REPLICA_TABLE, "INSERT"),)
    assert result.grant == ()


def test_with_revoke_off_a_revocation_is_not_carried():
    replica = [Grant(REPLICA_ROLE, REPLICA_TABLE, "INSERT")]
    assert changes([], replica, revoke=False).empty


def test_grants_to_principals_ferry_does_not_manage_are_left_alone():
    admin = "arn:aws:iam::222222222222:role/lake-admin"
    other_table = GrantTarget("sales_dr", "customers")
    replica = [Grant(admin, REPLICA_TABLE, "ALL"), Grant(REPLICA_ROLE, other_table, "SELECT")]
    assert changes([], replica).empty


def test_a_changed_grant_option_is_revoked_and_given_again():
    source = [Grant(SOURCE_ROLE, SOURCE_TABLE, "SELECT", grantable=True)]
    replica = [Grant(REPLICA_ROLE, REPLICA_TABLE, "SELECT")]
    for revoke in (True, False):
        result = changes(source, replica, revoke=revoke)
        assert result.revoke == (Grant(REPLICA_ROLE, REPLICA_TABLE, "SELECT"),)
        assert result.grant == (Grant(REPLICA_ROLE, REPLICA_TABLE, "SELECT", grantable=True),)


def test_hive_principals_and_their_grantor_are_mapped():
    mappings = {"ROLE:analysts": "ROLE:analysts_dr", "USER:hive": "USER:ferry"}
    source = [Grant("ROLE:analysts", SOURCE_TABLE, "SELECT", grantor="USER:hive")]
    result = grant_changes(source, [], mappings, "sales_dr", "orders")
    assert [(g.principal, g.grantor) for g in result.grant] == [("ROLE:analysts_dr", "USER:ferry")]


def test_tags_are_mapped_by_key_and_value_and_the_rest_reported():
    tag_mappings = {
        "team": TagMapping(key="team"),
        "env": TagMapping(key="environment", values={"prod": "dr"}),
    }
    source = [
        ResourceTag(SOURCE_TABLE, "team", "finance"),
        ResourceTag(GrantTarget("sales"), "env", "prod"),
        ResourceTag(SOURCE_TABLE, "env", "test"),  # a value no mapping names
        ResourceTag(SOURCE_TABLE, "owner", "bob"),  # a key no mapping names
    ]
    replica = [
        ResourceTag(REPLICA_TABLE, "team", "sales"),  # another value: replaced
        ResourceTag(REPLICA_TABLE, "cost-centre", "42"),  # not managed: left alone
    ]
    result = changes([], source_tags=source, replica_tags=replica, tag_mappings=tag_mappings)
    assert result.tag == (
        ResourceTag(GrantTarget("sales_dr"), "environment", "dr"),
        ResourceTag(REPLICA_TABLE, "team", "finance"),
    )
    assert result.untag == (ResourceTag(REPLICA_TABLE, "team", "sales"),)
    assert result.unmapped_tags == ("env=test", "owner=bob")


def test_a_tag_removed_at_the_source_is_removed_at_the_replica_unless_revoke_is_off():
    tag_mappings = {"team": TagMapping(key="team")}
    replica = [ResourceTag(REPLICA_TABLE, "team", "finance")]
    removed = changes([], replica_tags=replica, tag_mappings=tag_mappings)
    assert removed.untag == (ResourceTag(REPLICA_TABLE, "team", "finance"),)
    kept = changes([], replica_tags=replica, tag_mappings=tag_mappings, revoke=False)
    assert kept.empty


def test_the_changes_travel_as_json_and_come_back_equal():
    """The plan document is pydantic JSON in S3: the changes must survive it, grantor too."""
    from pydantic import TypeAdapter

    found = changes(
        [Grant(SOURCE_ROLE, GrantTarget("sales", "orders", excluded_columns=("ssn",)), "SELECT",
               grantable=True, grantor=SOURCE_ROLE)],
        [Grant(REPLICA_ROLE, REPLICA_TABLE, "INSERT")],
        source_tags=[ResourceTag(SOURCE_TABLE, "team", "finance")],
        tag_mappings={"team": TagMapping(key="team")},
    )  # fmt: skip
    adapter = TypeAdapter(GrantChanges)
    back = adapter.validate_json(adapter.dump_json(found))
    assert back == found
    assert back.grant[0].grantor == REPLICA_ROLE
    assert str(back.grant[0]) == (
        f"SELECT on sales_dr.orders (all columns but ssn) to {REPLICA_ROLE} with grant option"
    )
