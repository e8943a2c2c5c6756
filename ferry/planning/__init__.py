"""Planning: what one table replication copies where and what the replica becomes.

The diff rules (``diff``), the tables a config selects (``selection``), the source's
versions (``source_versions``), views' SQL (``views``), the plan of a Hive table
(``table_plan``; an Iceberg table's is ``ferry.iceberg.snapshot_plan``), the checks before
anything is written (``preflight``), what a run leaves under its work location (``runs``) and
the preview ``ferry plan`` prints (``preview``).
"""
