"""Committing and the lifecycle of a replica's snapshots: the copy states' work
(``copy_work``), the commit (``committing``), the abort of a failed table (``aborting``), the
replica's lock and what a commit supersedes (``replica_state``), resume after a failed
attempt (``attempts``), what consumers are told (``notify``) and the deletion of retired snapshots
(``retired_snapshots``).
"""
