"""A command's catalogs, opened once and held open for every state it runs (``HeldCatalogs``).

A state opens the catalogs it reads (``with context.open(config) as catalog:``,
``ferry.states.context``); opened afresh, each is a new connection to the metastore and its
probe (``getMetaConf``, ``ferry.catalog.hive_connections``). ``ferry replicate`` runs a run's
states one after another in one process: the promoted-replica check (Resolve tables), the
resume check, Plan and Commit read the same two catalogs. Held, each catalog is opened the
first time a state asks for it, every later state gets the same one with its pooled
connections still open, and the command closes them all when it ends. Every call each state
makes is still made: only the connections and their probes are not made again.

A Lambda function opens its catalogs per invocation (``ferry.catalog.factory.open_catalog``):
a warm container's connection may have been dropped by the metastore between two
invocations, and no invocation should pay for another's broken connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ferry.catalog import Catalog

if TYPE_CHECKING:
    from ferry.config import CatalogConfig
    from ferry.storage.aws import AwsClients


class HeldCatalogs:
    """Opens each catalog once (by its config and its clients) and holds it open until
    ``close``: a ``with`` block of a state that ends leaves it open."""

    def __init__(self, opener: Callable[[CatalogConfig, AwsClients], Catalog] | None = None):
        if opener is None:
            from ferry.catalog.factory import open_catalog

            opener = open_catalog
        self._opener = opener
        self._opened: dict[tuple[int, str], Catalog] = {}
        self._lock = threading.Lock()

    def __call__(self, config: CatalogConfig, aws: AwsClients) -> Catalog:
        """The catalog ``config`` describes, reached with ``aws``: opened on the first call,
        the same one on every later call."""
        key = (id(aws), config.model_dump_json())
        with self._lock:
            catalog = self._opened.get(key)
            if catalog is None:
                catalog = self._opener(config, aws)
                catalog.held = True
                self._opened[key] = catalog
            return catalog

    @property
    def opened(self) -> int:
        """How many catalogs are held."""
        return len(self._opened)

    def close(self) -> None:
        """Close every held catalog (its connections); a later call opens it again."""
        with self._lock:
            catalogs, self._opened = list(self._opened.values()), {}
        for catalog in catalogs:
            catalog.held = False
            catalog.close()

    def __enter__(self) -> HeldCatalogs:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
