"""A run opens each metastore once: ``ferry replicate`` holds each catalog open across its
states (``ferry.catalog.held_catalogs``) and closes them when it ends, and every guard still
reads the replica. Counted on real metastores, at the Thrift client (hmsclient's and thrift's
own classes wrapped, Ferry's code untouched): the sockets opened per metastore, the probes
that open each connection (``getMetaConf``), the guards' calls, and the sockets still open
when the command has returned."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hmsclient import hmsclient
from thrift.transport import TSocket

from ferry.commands.cli import main
from tests.helpers import config_document, one_replication

pytestmark = pytest.mark.integration


class Counted:
    """What the Thrift clients did: sockets opened (by port), and calls (by name and port)."""

    def __init__(self):
        self.connections: Counter[int] = Counter()
        self.calls: Counter[tuple[str, int]] = Counter()
        self.sockets: list[TSocket.TSocket] = []


def _port(client: hmsclient.HMSClient) -> int:
    return client._oprot.trans._TBufferedTransport__trans.port


@pytest.fixture
def counted(monkeypatch):
    seen = Counted()
    socket_open = TSocket.TSocket.open

    def opening(socket):
        socket_open(socket)
        seen.connections[socket.port] += 1
        seen.sockets.append(socket)

    monkeypatch.setattr(TSocket.TSocket, "open", opening)
    for name in ("getMetaConf", "get_table", "get_table_objects_by_name"):
        call = getattr(hmsclient.HMSClient, name)

        def counting(client, *arguments, _call=call, _name=name):
            seen.calls[(_name, _port(client))] += 1
            return _call(client, *arguments)

        monkeypatch.setattr(hmsclient.HMSClient, name, counting)
    return seen


def test_a_run_with_nothing_to_do_connects_to_each_metastore_once(
    local_runtime, sample, replica_catalog, write_config, tmp_path, counted, capsys
):
    replica_database = f"{sample.database}_dr"
    replica_location = (tmp_path / "dr" / "orders").as_uri()
    config = write_config(
        config_document(local_runtime, one_replication(sample.database, "orders", replica_location))
    )
    arguments = ["replicate", str(config), "--home", str(tmp_path / "home"), "--json"]
    assert main(arguments) == 0
    assert [t["status"] for t in json.loads(capsys.readouterr().out)["tables"]] == ["SUCCEEDED"]
    replicated = replica_catalog.get_table(replica_database, "orders")
    source, replica = (
        int(uri.rsplit(":", 1)[1]) for uri in (local_runtime.source_uri, local_runtime.replica_uri)
    )
    counted.connections.clear()
    counted.calls.clear()
    counted.sockets.clear()

    assert main(arguments) == 0

    assert [t["status"] for t in json.loads(capsys.readouterr().out)["tables"]] == ["UNCHANGED"]
    assert replica_catalog.get_table(replica_database, "orders") == replicated
    # One connection to each metastore, each opened by one probe (the promoted-replica
    # check, the resume check and Plan read the replica over the same connection).
    assert counted.connections == {source: 1, replica: 1}
    assert counted.calls[("getMetaConf", source)] == counted.calls[("getMetaConf", replica)] == 1
    # Every guard still reads the replica: the replicas promoted by a failover, and the
    # replica table read by the resume check and again by Plan after the lock.
    assert counted.calls[("get_table_objects_by_name", replica)] >= 1
    assert counted.calls[("get_table", replica)] >= 2
    # The command closed what it opened.
    assert not [socket for socket in counted.sockets if socket.isOpen()]
