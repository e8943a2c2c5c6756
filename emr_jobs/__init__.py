"""PySpark entry points that run as EMR Serverless job runs (``main()`` parses and does I/O)."""
