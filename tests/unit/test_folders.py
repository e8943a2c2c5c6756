"""``ferry/`` is one folder per concept (docs/ARCHITECTURE.md, "Where the code lives"): a
short top level, no two domain modules with one name, and only the commands reach the local
runtime (`make lint`'s contract, which must name every package below them)."""

from __future__ import annotations

import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parents[2]
FERRY = ROOT / "ferry"
#: The layer allowed to import the local runtime, and the runtime itself.
ABOVE_THE_DOMAIN = {"commands", "local"}
#: Modules named for what they are one of, not for a concept: a state keeps its state's name
#: (``ferry/states/``), a command its command's (``ferry/commands/``), and a port's adapters
#: the technology they store in (the ledger's and the copy budget's).
NAMED_FOR_THEIR_KIND = {"states", "commands"}
ADAPTERS = {"dynamodb", "sqlite"}


def packages() -> set[str]:
    return {p.name for p in FERRY.iterdir() if (p / "__init__.py").is_file()}


def test_the_top_level_is_one_folder_per_concept():
    entries = {p.name for p in FERRY.iterdir() if p.name != "__pycache__"}
    assert entries - packages() == {"__init__.py"}
    assert len(entries) <= 17


def test_no_two_domain_modules_share_a_name():
    where = defaultdict(list)
    for path in FERRY.rglob("*.py"):
        relative = path.relative_to(FERRY)
        if path.name == "__init__.py" or relative.parts[0] in NAMED_FOR_THEIR_KIND:
            continue
        if path.stem in ADAPTERS:
            continue
        where[path.stem].append(str(relative))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_the_local_runtime_contract_names_every_package_below_the_commands():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [local] = [c for c in contracts["contracts"] if c.get("forbidden_modules") == ["ferry.local"]]
    below = {f"ferry.{name}" for name in packages() - ABOVE_THE_DOMAIN}
    assert set(local["source_modules"]) == below | {"lambdas", "emr_jobs", "infra"}
