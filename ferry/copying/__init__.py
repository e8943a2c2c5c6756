"""Copying: the manifest of files one replication copies (``manifest``) and its copy records
(``copy_records``), the copiers that move them — inline (``copier``, reading through
``copy_sources``), S3 server-side (``s3_copy``), Spark (``spark_job``; its tasks and report:
``spark_tasks``, ``spark_report``) — their tasks and concurrency, the credentials that reach
each side (``side_credentials``) and the environment's copy budget (``budget``).
"""
