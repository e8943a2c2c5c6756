"""``python -m ferry.statemachine``: bring the definitions' Retry blocks in line with the policy."""

from ferry.statemachine import DEFINITIONS, write_retry_policy

for definition_path in DEFINITIONS:
    write_retry_policy(definition_path)
    print(f"wrote the retry policy into {definition_path}")
