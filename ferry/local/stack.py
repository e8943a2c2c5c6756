"""Deploy a synthesized CloudFormation template into the AWS emulator.

The local runtime runs what ``cdk deploy`` creates, not a twin of it written by hand: the
template ``make synth`` would produce for the local runtime's environment
(``ferry/local/environment.yml``) is read resource by resource, its intrinsic functions
resolved (``ferry.local.template``), and each resource created through the emulator's own
API: the roles with their policies, the functions with their environment, role and
permissions, the state machines with their definition substitutions, the topics with their
policies, the buckets, the key, the table, the secret, the schedules and rules, the
dead-letter queues with their policies and the functions' on-failure destinations, the
alarms (``ferry.local.emulator_cloudwatch`` evaluates them). A resource
type the emulator cannot hold is named in one error.

Each kind of resource is created by a module of its own: access (``stack_access``: roles,
policies, the key, the secret), storage (``stack_storage``), messaging (``stack_messaging``:
topics, queues), compute (``stack_compute``: functions, the EMR Serverless application, the
state machines), triggers and operations (``stack_operations``: rules, schedules, alarms,
dashboards); ``stack_assets`` reads the CDK's file assets.

Physical names are CloudFormation's where the template gives one; where it does not, a
stable name is made from the stack and the logical id (CloudFormation adds a random
suffix; the emulator needs no such protection).
"""

from __future__ import annotations

import json
from typing import Any

from ferry.core.resource_names import template_name_problems
from ferry.local import (
    stack_access,
    stack_compute,
    stack_messaging,
    stack_operations,
    stack_storage,
)
from ferry.local.definitions import InvalidDefinitionError, check_definition
from ferry.local.stack_context import Client, Creator, StackContext
from ferry.local.template import TemplateError, creation_order

#: Resources of no consequence to what the pipeline does in the emulator (it has no
#: rollback, and no e-mail); everything else is created.
NOT_EMULATED: frozenset[str] = frozenset(
    {
        "AWS::CDK::Metadata",
        "AWS::SNS::Subscription",  # e-mail subscriptions of the operations topic
    }
)

#: The creator of each resource type the emulator holds, by CloudFormation type.
CREATORS: dict[str, Creator] = {
    **stack_access.CREATORS,
    **stack_storage.CREATORS,
    **stack_messaging.CREATORS,
    **stack_compute.CREATORS,
    **stack_operations.CREATORS,
}


class Deployment(StackContext):
    """One stack's template, created in the emulator through ``client(service, region)``."""

    def __init__(
        self, template: dict[str, Any], stack_name: str, account: str, region: str, client: Client
    ):
        super().__init__(stack_name, account, region, client)
        self.template = template
        self.resources: dict[str, dict[str, Any]] = template.get("Resources", {})

    def deploy(self) -> dict[str, Any]:
        """Create every resource in dependency order; the stack's outputs."""
        unknown = sorted(
            {
                f"{r['Type']} ({logical})"
                for logical, r in self.resources.items()
                if r["Type"] not in NOT_EMULATED and r["Type"] not in CREATORS
            }
        )
        if unknown:
            raise TemplateError(f"the local runtime cannot deploy {', '.join(unknown)}")
        self.check()
        for logical in creation_order(self.resources):
            resource = self.resources[logical]
            if resource["Type"] in NOT_EMULATED:
                self.resolved.refs[logical] = logical
                continue
            properties = self.resolved.value(resource.get("Properties", {}))
            CREATORS[resource["Type"]](self, logical, properties)
        return {
            name: self.resolved.value(output["Value"])
            for name, output in self.template.get("Outputs", {}).items()
        }

    def check(self) -> None:
        """Refuse, before creating anything, what CloudFormation's services would refuse at
        create time: a literal name outside its service's limits (``ferry.core.resource_names``),
        a state machine definition Step Functions would not accept (``ferry.local.definitions``).
        """
        names = template_name_problems(self.template, f"stack {self.resolved.stack_name}: ")
        if names:
            raise TemplateError(names[0])
        for logical, resource in self.resources.items():
            if resource["Type"] != "AWS::StepFunctions::StateMachine":
                continue
            properties = resource.get("Properties", {})
            name = properties.get("StateMachineName")
            definition = properties.get("DefinitionString")
            if not isinstance(definition, str):
                definition = json.dumps(properties.get("Definition"))
            # The substitutions' values are made by the deploy (ARNs of functions not yet
            # created): a stand-in of the same shape for each, so nothing is created first.
            for placeholder in properties.get("DefinitionSubstitutions") or {}:
                stand_in = f"arn:aws:lambda:{self.region}:{self.account}:function:{placeholder}"
                definition = definition.replace("${" + placeholder + "}", stand_in)
            try:
                check_definition(name if isinstance(name, str) else logical, definition)
            except InvalidDefinitionError as error:
                raise TemplateError(str(error)) from None
