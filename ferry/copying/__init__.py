"""Copying: the manifest of files one replication copies and the copiers that move them —
inline (``copier``), S3 server-side (``s3_copy``), Spark (``spark_job``) — their tasks and
concurrency, the credentials that reach each side (``side_credentials``) and the
environment's copy budget (``budget``).
"""
