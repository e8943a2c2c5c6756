"""Ferry: replicate Apache Hive tables, data and metadata, with snapshot isolation."""

__version__ = "0.1.0"
