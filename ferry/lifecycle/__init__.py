"""Committing and the lifecycle of a replica's snapshots: the copy states' work
(``copy_work``), the commit (``committing``), the abort of a failed table (``aborting``), the
replica's lock and what a commit supersedes (``replica_state``), resume after a failed
attempt (``attempts``), what consumers are told (``notify``) and the deletion of retired snapshots
(``retired_snapshots``).

Beside them: what a run creates and what its commit supersedes (``snapshot_records``), an
Iceberg run's write-ahead intent (``iceberg_intent``), and housekeeping's parts: the request and
its report (``housekeeping_report``), an Iceberg run's uncommitted files
(``retired_iceberg_files``) and the vacuum (``snapshot_vacuum``).
"""
