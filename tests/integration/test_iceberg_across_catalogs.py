"""An Iceberg table replicated across catalog kinds by ``ferry replicate``'s driver: Hive
metastore → Glue and Glue → Hive metastore (the scenario: ``tests/iceberg_catalogs.py``)."""

from __future__ import annotations

import pytest

from tests.helpers import Replicator
from tests.iceberg_catalogs import glue_to_hive, hive_to_glue, replicate_across

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "build", [hive_to_glue, glue_to_hive], ids=["hive-to-glue", "glue-to-hive"]
)
def test_an_iceberg_table_replicates_across_catalog_kinds_with_ferry_replicate(
    local_runtime, aws, s3_properties, tmp_path, unique, build
):
    case = build(local_runtime, aws, s3_properties, tmp_path, unique)
    replicator = Replicator(case.document)

    def replicate() -> tuple[str, int]:
        (outcome,) = replicator.run()
        assert outcome.status != "FAILED", outcome.error
        return outcome.status, outcome.files

    replicate_across(case, replicate)
