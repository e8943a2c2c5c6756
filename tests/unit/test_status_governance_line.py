"""``ferry status --governance``'s line for people: what a run would write, in words."""

from __future__ import annotations

from ferry.commands.status_governance import governance_line


def test_in_sync_without_a_permissions_section():
    assert governance_line({"statistics": None, "permissions": None}) == (
        "statistics and keys: in sync"
    )


def test_what_differs_is_counted_and_what_no_mapping_covers_is_said():
    compared = {
        "statistics": {"tableColumns": 2, "partitions": 1, "partitionColumns": 3,
                       "keysToAdd": 1, "keysToDrop": 0},
        "permissions": {"grant": ["a", "b"], "revoke": ["c"], "tag": [], "untag": [],
                        "unmappedPrincipals": ["USER:stranger"], "unmappedTags": []},
    }  # fmt: skip
    assert governance_line(compared) == (
        "statistics and keys differ: 2 table columns, 1 partition, 1 key to write; "
        "permissions: 2 grants, 1 revoke to apply (1 source principals or tags unmapped)"
    )


def test_permissions_in_sync_and_an_error_are_one_line_each():
    nothing = {"grant": [], "revoke": [], "tag": [], "untag": [],
               "unmappedPrincipals": [], "unmappedTags": []}  # fmt: skip
    assert governance_line({"statistics": None, "permissions": nothing}) == (
        "statistics and keys: in sync; permissions: in sync"
    )
    assert governance_line({"error": "GrantError: no role ROLE:x"}) == (
        "could not compare: GrantError: no role ROLE:x"
    )
