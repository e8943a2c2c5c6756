"""The AWS emulator's Glue keeps ``UpdateTable``'s optimistic concurrency, as AWS does.

moto 5.2 accepts any ``VersionId`` on ``UpdateTable``. AWS Glue refuses an update whose
``VersionId`` is not the table's current version with ``ConcurrentModificationException``:
of two writers that read the same version, one wins. Ferry's commit claims a replica with
it (``ferry.catalog.glue.GlueCatalog.alter_table_if``), so the emulator must refuse too.
"""

from __future__ import annotations

from typing import Any


def install() -> None:
    from moto.glue.exceptions import GlueClientError
    from moto.glue.responses import GlueResponse

    update = GlueResponse.update_table

    def update_table(self: Any) -> Any:
        version = self.parameters.get("VersionId")
        if version is not None:
            table_input = self.parameters.get("TableInput") or {}
            table = self.glue_backend.get_table(
                self.parameters.get("DatabaseName"), table_input.get("Name")
            )
            if str(version) != str(table._current_version):
                raise GlueClientError(
                    "ConcurrentModificationException",
                    "Update table failed due to concurrent modifications.",
                )
        return update(self)

    GlueResponse.update_table = update_table
