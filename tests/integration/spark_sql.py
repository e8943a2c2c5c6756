"""Run Spark SQL against one Hive metastore, in a process of its own, and print the rows.

A SparkSession keeps the metastore it started with for the life of its JVM, so a test that
asks two metastores starts one process for each: ``python -m tests.integration.spark_sql
THRIFT_URI WAREHOUSE STATEMENT...`` prints the last statement's rows as a JSON list.
"""

from __future__ import annotations

import json
import sys


def main(uri: str, warehouse: str, *statements: str) -> None:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("ferry-spark-sql")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .enableHiveSupport()
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    rows: list = []
    for statement in statements:
        rows = [list(row) for row in session.sql(statement).collect()]
    session.stop()
    print(json.dumps(rows))


if __name__ == "__main__":
    main(*sys.argv[1:])
