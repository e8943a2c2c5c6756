"""Planning: what one table replication copies where and what the replica becomes.

The diff rules (``diff``), the tables a config selects (``selection``), the source's
versions (``source_versions``), views' SQL (``views``), the plan of a Hive table
(``table_plan``; an Iceberg table's is ``ferry.iceberg.snapshot_plan``), the checks before
anything is written (``preflight``), where a run leaves its documents under its work location
and the copier it chose (``runs``), the plan document Plan writes there (``plan_document``)
and the preview ``ferry plan`` prints (``preview``).
"""
