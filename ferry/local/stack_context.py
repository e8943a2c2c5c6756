"""What creating one resource of a stack's template in the emulator needs
(``ferry.local.stack``): the emulator's clients, the stack's resolved references and
attributes, and the physical names CloudFormation would give."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferry.local.template import Resolved, physical_name

Client = Callable[..., Any]


class StackContext:
    """One stack being created in the emulator through ``client(service, region)``."""

    def __init__(self, stack_name: str, account: str, region: str, client: Client):
        self.resolved = Resolved(account, region, stack_name)
        self.client = client
        #: The functions' definitions as deployed (their handlers run from the checkout).
        self.functions: dict[str, dict[str, Any]] = {}

    @property
    def account(self) -> str:
        return self.resolved.account

    @property
    def region(self) -> str:
        return self.resolved.region

    def name(self, logical: str, **options: Any) -> str:
        """The physical name of a resource the template does not name."""
        return physical_name(self.resolved.stack_name, logical, **options)

    def set(self, logical: str, ref: Any, **attributes: Any) -> None:
        """What ``Ref`` and ``Fn::GetAtt`` of the created resource give."""
        self.resolved.refs[logical] = ref
        for attribute, value in attributes.items():
            self.resolved.attributes[(logical, attribute)] = value


#: Creates (or, on a redeploy, updates) one resource from its resolved properties.
Creator = Callable[[StackContext, str, dict[str, Any]], None]
