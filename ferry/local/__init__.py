"""The embedded default: real Hive metastores and an emulated AWS on one machine."""
