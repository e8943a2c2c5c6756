"""The state store's DynamoDB table itself: created (the local runtime, tests) and checked
(``ferry replicate --state-table``, ``ferry status``, ``ferry doctor``).

Its items are ``ferry.replicas.ledger.dynamodb``'s; the key design is ``ferry.replicas.ledger``'s
table. On AWS the CDK stack creates it (``infra/state.py``), with the same key.
"""

from __future__ import annotations

from typing import Any

from ferry.core.errors import StateStoreError

#: The state table's key: two strings (the CDK stack's table, ``create_state_table``'s).
STATE_TABLE_KEY = {"pk": "HASH", "sk": "RANGE"}


def check_state_table(client: Any, table_name: str, named: str) -> None:
    """The table exists and has Ferry's key (``DescribeTable``), else ``StateStoreError``
    (``named`` begins its line)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        table = client.describe_table(TableName=table_name)["Table"]
    except client.exceptions.ResourceNotFoundException:
        raise StateStoreError(
            f"{named}: no such DynamoDB table in {client.meta.region_name}; give the state "
            "table of the stack (its StateTableName output)"
        ) from None
    except ClientError as error:
        details = error.response.get("Error", {})
        message = (str(details.get("Message") or "").splitlines() or [""])[0]
        raise StateStoreError(
            f"{named}: DynamoDB refused DescribeTable: {details.get('Code')}"
            + (f": {message}" if message else "")
        ) from None
    except BotoCoreError as error:  # no answer, no credentials, no region
        raise StateStoreError(f"{named}: DynamoDB did not answer: {error}") from None
    keys = {key["AttributeName"]: key["KeyType"] for key in table.get("KeySchema", [])}
    types = {
        attribute["AttributeName"]: attribute["AttributeType"]
        for attribute in table.get("AttributeDefinitions", [])
    }
    if keys != STATE_TABLE_KEY or any(types.get(name) != "S" for name in STATE_TABLE_KEY):
        found = ", ".join(
            f"{name} ({types.get(name, '?')}, {kind.lower()} key)" for name, kind in keys.items()
        )
        raise StateStoreError(
            f"{named}: its key is {found}, not Ferry's: pk (S, hash key) and sk (S, range "
            "key); it is not a Ferry state table"
        )


def create_state_table(client: Any, table_name: str) -> None:
    """Create the table if it does not exist (the local runtime; the CDK stack on AWS)."""
    if table_name in _all_tables(client):
        return
    client.create_table(
        TableName=table_name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=table_name)


def _all_tables(client: Any) -> set[str]:
    names: set[str] = set()
    arguments: dict[str, Any] = {}
    while True:
        page = client.list_tables(**arguments)
        names.update(page.get("TableNames", []))
        if "LastEvaluatedTableName" not in page:
            return names
        arguments["ExclusiveStartTableName"] = page["LastEvaluatedTableName"]
