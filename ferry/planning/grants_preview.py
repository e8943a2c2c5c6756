"""The grants part of ``ferry plan``: what the replica would be granted, revoked, tagged and
untagged, and the source principals and tags no mapping covers (``ferry.planning.grants_plan``)."""

from __future__ import annotations

from typing import Any

from ferry.catalog.grants import GrantChanges


def grants_preview(changes: GrantChanges | None) -> dict[str, Any] | None:
    """Each change as one line (``SELECT on db.orders to arn:…``); None without a
    ``permissions`` section."""
    if changes is None:
        return None
    return {
        "grant": [str(grant) for grant in changes.grant],
        "revoke": [str(grant) for grant in changes.revoke],
        "tag": [str(tag) for tag in changes.tag],
        "untag": [str(tag) for tag in changes.untag],
        "unmappedPrincipals": list(changes.unmapped_principals),
        "unmappedTags": list(changes.unmapped_tags),
    }


def preview_lines(preview: dict[str, Any] | None, unmapped: bool = True) -> list[str]:
    """``grants_preview`` for people: one line per change and per unmapped principal or tag
    (not those with ``unmapped`` False: ``ferry plan`` prints them with the plan's notices)."""
    if preview is None:
        return []
    lines = [f"would {verb} {item}" for verb in ("revoke", "untag", "grant", "tag")
             for item in preview[verb]]  # fmt: skip
    if not unmapped:
        return lines
    lines += [
        f"source principal {p} is not in principal-mappings: not granted"
        for p in preview["unmappedPrincipals"]
    ] + [f"source tag {t} is not in tag-mappings: not tagged" for t in preview["unmappedTags"]]
    return lines
