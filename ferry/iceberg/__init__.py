"""Iceberg tables: data and metadata replicated together, snapshot by snapshot.

An Iceberg table is not a folder of files: its ``metadata_location`` names a
``*.metadata.json`` whose snapshots name manifest lists, whose manifests name the data and
delete files, all by absolute path. A replica is readable only once every one of those
paths names the replica's own files. The modules, by concept:

- ``recognise``: which catalog tables are Iceberg tables (pure, over ``ferry.core.model``);
- ``paths``: the one path mover, source prefix → replica prefix (pure);
- ``reading``: a table's metadata, manifest lists and manifests through pyiceberg;
- ``snapshot_plan``: what the replica lacks, snapshot by snapshot;
- ``next_metadata``: the replica's next metadata.json, every path moved, and its name;
- ``rewrite``: the replica's manifests, manifest lists, position delete files and
  metadata.json, written with pyiceberg's writers;
- ``table_replication``: one table, full or incremental, files first, metadata last;
- ``pipeline``: the steps' part (Plan, the copiers' manifest rewrites, Commit, Abort);
- ``fileio``: pyiceberg's ``FileIO`` on Ferry's file systems;
- ``failback_snapshots``: the snapshots written in DR brought home, their ids kept.

See ``docs/ICEBERG.md``.
"""
