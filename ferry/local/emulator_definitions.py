"""The AWS emulator's CreateStateMachine and UpdateStateMachine refuse what AWS refuses.

moto parses a definition with its own grammar only; Step Functions also refuses a field given
twice once ``.$`` is stripped, a path or an intrinsic function that does not parse, a
``.sync`` resource no integration has (``ferry.local.definitions``). Here both calls answer
such a definition with ``InvalidDefinition`` and its reason, as AWS does, whoever makes them:
the local deploy, a test, or a person with the AWS CLI.
"""

from __future__ import annotations

from typing import Any

from ferry.local.definitions import definition_problems


def install() -> None:
    from moto.core.exceptions import AWSError
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    parsed = StepFunctionsParserBackend._validate_definition

    def validate_definition(definition: Any) -> None:
        parsed(definition=definition)
        if isinstance(definition, str):
            problems = definition_problems(definition)
            if problems:
                # AWS's error code (moto's own InvalidDefinition answers with an empty one).
                raise AWSError(
                    f"Invalid State Machine Definition: '{problems[0]}'", "InvalidDefinition"
                )

    StepFunctionsParserBackend._validate_definition = staticmethod(validate_definition)
