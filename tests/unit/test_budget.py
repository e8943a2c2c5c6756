"""The copy budget's rules, on both stores: DynamoDB (moto in-process) and the local SQLite
file. Critical tables first, slots kept for them, aging, first come first served within a
priority, a crashed holder's slot taken over, releases that can be repeated, and one winner
of a race for the last slot."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from ferry.config import Priority
from ferry.copying.budget import STALE_WAITER, CopyBudget
from ferry.copying.budget.dynamodb import DynamoDbSlots
from ferry.copying.budget.sqlite import SqliteSlots
from ferry.core.errors import ConfigError
from ferry.local import emulator_dynamodb
from ferry.replicas.ledger.dynamodb_table import create_state_table

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)
CRITICAL, NORMAL, BULK = Priority.CRITICAL, Priority.NORMAL, Priority.BULK
#: Two slots, one kept for critical tables: what the end-to-end test deploys too.
BUDGET = CopyBudget(slots=2, critical_reserved=1, aging=timedelta(minutes=15))


@pytest.fixture(params=["sqlite", "dynamodb"])
def slots(request, tmp_path, monkeypatch):
    if request.param == "sqlite":
        yield SqliteSlots(tmp_path / "state.sqlite3")
        return
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    # The emulator's DynamoDB applies each conditional write atomically, as DynamoDB does
    # (moto alone checks and stores in two steps: two racing claims could both win).
    emulator_dynamodb.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_state_table(client, "ferry-state")
        yield DynamoDbSlots(client, "ferry-state")


def held(slots) -> dict[int, str]:
    return {holder.slot: holder.event_id for holder in slots.holders()}


def test_a_free_slot_is_granted_at_once_and_again_to_its_holder(slots):
    answer = slots.claim(BUDGET, "bulk-1", BULK, NOW)
    assert (answer.granted, answer.slot, answer.waited_seconds) == (True, 1, 0)
    # A retried claim of the same event keeps its slot; it takes no second one.
    again = slots.claim(BUDGET, "bulk-1", BULK, NOW + SECOND)
    assert (again.granted, again.slot) == (True, 1)
    assert held(slots) == {1: "bulk-1"}


def test_bulk_never_takes_the_reserved_slot_and_critical_never_waits_for_bulk(slots):
    assert slots.claim(BUDGET, "bulk-1", BULK, NOW).granted
    waiting = slots.claim(BUDGET, "bulk-2", BULK, NOW + SECOND)
    assert not waiting.granted and waiting.wait_seconds == BUDGET.wait_seconds
    assert waiting.queued == {CRITICAL: 0, NORMAL: 0, BULK: 1}
    critical = slots.claim(BUDGET, "critical-1", CRITICAL, NOW + 2 * SECOND)
    assert (critical.granted, critical.slot) == (True, 0)
    assert critical.queued == {CRITICAL: 0, NORMAL: 0, BULK: 1}
    assert held(slots) == {0: "critical-1", 1: "bulk-1"}


def test_a_critical_table_takes_the_reserved_slot_first_leaving_the_others(slots):
    assert slots.claim(BUDGET, "critical-1", CRITICAL, NOW).slot == 0
    assert slots.claim(BUDGET, "bulk-1", BULK, NOW).slot == 1
    # Every slot taken: the next critical table waits, first in line.
    assert not slots.claim(BUDGET, "critical-2", CRITICAL, NOW).granted


def test_a_freed_slot_goes_to_the_highest_priority_waiting_not_the_first_to_ask(slots):
    budget = CopyBudget(slots=1)
    assert slots.claim(budget, "running", BULK, NOW).granted
    assert not slots.claim(budget, "bulk-early", BULK, NOW + SECOND).granted
    assert not slots.claim(budget, "normal-late", NORMAL, NOW + 2 * SECOND).granted
    assert slots.release("running")
    # The bulk claim asks first after the release, but the normal one is ahead of it.
    assert not slots.claim(budget, "bulk-early", BULK, NOW + 3 * SECOND).granted
    assert slots.claim(budget, "normal-late", NORMAL, NOW + 4 * SECOND).granted
    assert slots.release("normal-late")
    assert slots.claim(budget, "bulk-early", BULK, NOW + 5 * SECOND).granted


def test_within_a_priority_the_first_to_ask_is_served_first(slots):
    budget = CopyBudget(slots=1)
    assert slots.claim(budget, "running", NORMAL, NOW).granted
    for index in range(3):
        assert not slots.claim(budget, f"normal-{index}", NORMAL, NOW + index * SECOND).granted
    slots.release("running")
    later = NOW + 10 * SECOND
    assert not slots.claim(budget, "normal-2", NORMAL, later).granted
    assert not slots.claim(budget, "normal-1", NORMAL, later).granted
    assert slots.claim(budget, "normal-0", NORMAL, later).granted
    answer = slots.claim(budget, "normal-1", NORMAL, later)
    assert answer.queued == {CRITICAL: 0, NORMAL: 2, BULK: 0}


def test_a_bulk_claim_that_waited_two_aging_periods_goes_before_a_new_critical_one(slots):
    budget = CopyBudget(slots=1, aging=timedelta(minutes=15))
    assert slots.claim(budget, "running", NORMAL, NOW).granted

    def bulk_asks_until(minutes: int) -> None:
        for minute in range(minutes + 1):  # a waiting table asks again every minute or so
            answer = slots.claim(budget, "bulk-old", BULK, NOW + timedelta(minutes=minute))
            assert not answer.granted

    # After one period bulk counts as normal: a new critical claim is still ahead of it.
    bulk_asks_until(16)
    one_period = NOW + timedelta(minutes=16)
    assert not slots.claim(budget, "critical-new", CRITICAL, one_period).granted
    slots.release("running")
    assert not slots.claim(budget, "bulk-old", BULK, one_period).granted
    assert slots.claim(budget, "critical-new", CRITICAL, one_period).granted
    # After two periods it counts as critical, and it asked first: nothing waits forever.
    bulk_asks_until(31)
    two_periods = NOW + timedelta(minutes=31)
    assert not slots.claim(budget, "critical-newer", CRITICAL, two_periods).granted
    slots.release("critical-new")
    assert not slots.claim(budget, "critical-newer", CRITICAL, two_periods).granted
    answer = slots.claim(budget, "bulk-old", BULK, two_periods)
    assert answer.granted and answer.waited_seconds == 31 * 60
    assert answer.queued == {CRITICAL: 1, NORMAL: 0, BULK: 0}
    # An aged bulk claim still never takes a slot kept for critical tables.
    assert BUDGET.may_take(BULK) == range(1, 2)


def test_a_waiting_claim_that_stopped_asking_leaves_the_line(slots):
    budget = CopyBudget(slots=1)
    assert slots.claim(budget, "running", NORMAL, NOW).granted
    assert not slots.claim(budget, "stopped", CRITICAL, NOW).granted  # then never asks again
    assert not slots.claim(budget, "bulk", BULK, NOW + SECOND).granted
    slots.release("running")
    later = NOW + STALE_WAITER + 2 * SECOND
    answer = slots.claim(budget, "bulk", BULK, later)
    assert answer.granted and answer.queued == {CRITICAL: 0, NORMAL: 0, BULK: 0}


def test_a_slot_whose_holder_is_gone_or_expired_is_taken_over(slots):
    budget = CopyBudget(slots=1, lease=timedelta(hours=1))
    crashed = "arn:aws:states:us-east-1:123456789012:execution:ferry:crashed"
    assert slots.claim(budget, "crashed", NORMAL, NOW, owner=crashed).granted
    refused = slots.claim(budget, "next", NORMAL, NOW + SECOND, gone=lambda holder: False)
    assert not refused.granted
    taken = slots.claim(
        budget, "next", NORMAL, NOW + 2 * SECOND,
        gone=lambda holder: holder.owner == crashed,
    )  # fmt: skip
    assert taken.granted and held(slots) == {0: "next"}
    # Past its lease a slot is free whatever its holder.
    assert slots.claim(budget, "after", NORMAL, NOW + timedelta(hours=2)).granted
    assert held(slots) == {0: "after"}
    # The holder taken over releases nothing of the new holder's.
    assert not slots.release("next")
    assert held(slots) == {0: "after"}


def test_release_frees_the_slot_and_leaves_the_line_and_can_be_repeated(slots):
    budget = CopyBudget(slots=1)
    assert slots.claim(budget, "a", NORMAL, NOW).granted
    assert not slots.claim(budget, "b", NORMAL, NOW).granted
    assert slots.release("a") is True
    assert slots.release("a") is False
    assert slots.release("b") is False  # it waited: it leaves the line
    assert slots.holders() == [] and slots.waiting() == []
    assert slots.release("never-claimed") is False


def test_two_claims_racing_for_the_last_slot_one_wins(slots):
    budget = CopyBudget(slots=1)
    for _ in range(20):
        answers = {}
        start = threading.Barrier(2)

        def claim(event: str, start=start, answers=answers) -> None:
            start.wait()
            answers[event] = slots.claim(budget, event, NORMAL, NOW)

        threads = [threading.Thread(target=claim, args=(e,)) for e in ("left", "right")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [event for event, answer in answers.items() if answer.granted]
        assert len(winners) == 1
        assert [h.event_id for h in slots.holders()] == winners
        for event in answers:
            slots.release(event)


def test_the_wait_between_claims_grows_with_the_time_waited():
    from ferry.copying.budget import LONGEST_WAIT_SECONDS, wait_seconds

    assert wait_seconds(BUDGET, 0) == BUDGET.wait_seconds
    assert wait_seconds(BUDGET, 100) == BUDGET.wait_seconds + 10
    assert wait_seconds(BUDGET, 10_000) == LONGEST_WAIT_SECONDS


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"slots": 0}, "copy slots: 0 is fewer than one"),
        ({"slots": 2, "critical_reserved": 2}, "critical-reserved-slots: 2 must be at least 0"),
        ({"slots": 2, "aging": timedelta(0)}, "priority-aging: give a positive duration"),
    ],
)
def test_a_budget_that_cannot_work_is_refused_with_its_key(arguments, message):
    with pytest.raises(ConfigError, match=message):
        CopyBudget(**arguments)


def test_whether_a_holder_is_gone_is_asked_only_when_nothing_else_is_free():
    from ferry.copying.budget import Holder, Waiter, grant

    def holder(slot: int, event: str) -> Holder:
        return Holder(slot, event, BULK, NOW, NOW + timedelta(hours=24), f"arn:{event}")

    asked: list[str] = []

    def gone(held: Holder) -> bool:
        asked.append(held.event_id)
        return False

    bulk = Waiter("bulk-new", BULK, NOW, NOW)
    # A free slot the claimant may take: Step Functions is not asked about any holder.
    assert grant(BUDGET, bulk, NOW, [holder(0, "critical-a")], [], gone) == 1
    assert asked == []
    # Every slot held: only the holders of the slots a bulk claim may take are asked about.
    held = [holder(0, "critical-a"), holder(1, "bulk-a")]
    assert grant(BUDGET, bulk, NOW, held, [], gone) is None
    assert asked == ["bulk-a"]


def test_only_a_data_copy_claims_a_slot_and_every_copier_is_reached_through_it():
    import json

    from ferry import statemachine

    document = json.loads(statemachine.DEFINITION_PATH.read_text())
    table = document["States"]["Replicate tables"]["ItemProcessor"]["States"]
    route = {c["StringEquals"]: c["Next"] for c in table["Choose copier"]["Choices"]}
    assert route == {"none": "Nothing to do", "metadata": "Commit", "inline": "Claim copy slot",
                     "s3": "Claim copy slot", "spark": "Claim copy slot"}  # fmt: skip
    granted = table["Copy slot granted?"]["Choices"]
    assert granted[0] == {
        "Variable": "$.slot.granted", "BooleanEquals": False, "Next": "Wait for a copy slot",
    }  # fmt: skip
    assert {c["StringEquals"]: c["Next"] for c in granted[1:]} == {
        "inline": "Inline copy", "s3": "S3 server-side copy", "spark": "Spark copy",
    }  # fmt: skip
    wait = table["Wait for a copy slot"]
    assert (wait["SecondsPath"], wait["Next"]) == ("$.slot.waitSeconds", "Claim copy slot")
    # No other state leads to a copier: none copies without its slot.
    for name, state in table.items():
        targets = {state.get("Next"), state.get("Default")} | {
            c["Next"] for c in state.get("Choices", [])
        }
        if name != "Copy slot granted?":
            assert not targets & {"Inline copy", "S3 server-side copy", "Spark copy"}, name
