"""Storage: URIs and the process's files (``fs``), the file systems (``file_systems``) and their
listings (``listing``), objects on S3 (``s3_objects``, ``s3_multipart``), the one S3 and
AWS client configuration with its retry policy (``aws``, ``s3``, ``retry_policy``), the
roles that reach another account (``aws_roles``), and what reads files' bytes and schemas
(``fingerprint``, ``avro``).
"""
