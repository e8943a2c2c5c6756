"""Planning: what one table replication copies where and what the replica becomes.

The diff rules (``diff``), the tables a config selects (``selection``), the source's
versions (``source_versions``), views' SQL (``views``), the plan of one table (``table_plan``:
both tables read, then the plan of the table's kind: a Hive table's, ``hive_plan``, with its
partitions read and listed once by ``partition_listing``; an Iceberg table's, ``iceberg_plan``,
over ``ferry.iceberg.snapshot_plan``; a source table that is gone, ``dropped_source``), the
plan itself, built in one place (``replication_plan``), the checks before anything is written
(``preflight``), what a run leaves under its work location (``runs``), the plan document Plan
writes there (``plan_document``) and the preview ``ferry plan`` prints (``preview``).
"""
