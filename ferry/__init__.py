"""Ferry: replicate Apache Hive tables, data and metadata, with snapshot isolation.

One folder per concept, lowest first (each imports only those before it in this list):
``core`` (errors, model, clock), ``storage`` (file systems, S3, the AWS clients), ``config``,
``catalog`` (Hive metastore, Glue), ``copying`` (manifest, copiers, copy budget),
``replicas`` (replica parameters, ownership, ledger), ``iceberg``, ``planning``,
``statemachine`` (definitions, payloads), ``feeds`` (change feeds, triggers), ``lifecycle``
(commit, abort, housekeeping), ``failover``, ``freshness``, ``local`` (the local runtime),
``states`` (one module per state) and ``commands`` (the CLI). docs/ARCHITECTURE.md has the map.
"""

__version__ = "0.1.0"
