"""An Iceberg table replicated across catalog kinds by the deployed state machine on the
local runtime (its roles enforced by the emulator): Hive metastore → Glue and Glue → Hive
metastore (the scenario: ``tests/iceberg_catalogs.py``)."""

from __future__ import annotations

import pytest

from tests.iceberg_catalogs import glue_to_hive, hive_to_glue, replicate_across

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    "build", [hive_to_glue, glue_to_hive], ids=["hive-to-glue", "glue-to-hive"]
)
def test_an_iceberg_table_replicates_across_catalog_kinds_through_the_state_machine(
    run, local_runtime, aws, s3_properties, tmp_path, unique, build
):
    case = build(local_runtime, aws, s3_properties, tmp_path, unique)

    def replicate() -> tuple[str, int]:
        outcome = run(case.document)
        assert outcome.status == "SUCCEEDED", outcome.failed_states
        (result,) = outcome.results
        assert result["plan"]["kind"] == "Iceberg table"
        return result["notified"]["status"], result["plan"]["files"]

    replicate_across(case, replicate)
