"""A pooled metastore connection is reused only when its reply was read whole.

A command holds its catalogs open across its states (``ferry.catalog.held_catalogs``): a
connection interrupted mid-call must not serve the next state, which would read the rest of
the old reply as its own.
"""

from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from ferry.catalog.hive_connections import MetastoreConnections

pytestmark = pytest.mark.integration


@pytest.fixture
def connections(local_runtime):
    pool = MetastoreConnections("onprem", [local_runtime.source_uri])
    yield pool
    pool.close()


def test_a_call_interrupted_mid_reply_closes_its_connection(connections):
    clients = []

    def interrupted(client):
        clients.append(client)
        client.get_all_databases()
        raise KeyboardInterrupt  # as Ctrl-C lands between a request and its whole reply

    with pytest.raises(KeyboardInterrupt):
        connections.call(interrupted)

    seen = connections.call(lambda client: client)
    assert seen is not clients[0]
    assert "default" in connections.call(lambda client: client.get_all_databases())


def test_an_error_reply_keeps_its_connection(connections):
    clients = []

    def missing(client):
        clients.append(client)
        return client.get_database("no_such_database_anywhere")

    with pytest.raises(ttypes.NoSuchObjectException):
        connections.call(missing)

    assert connections.call(lambda client: client) is clients[0]


def test_a_reply_read_whole_keeps_its_connection(connections):
    first = connections.call(lambda client: client)
    assert connections.call(lambda client: client) is first
