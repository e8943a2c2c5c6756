"""The change rules of failback: what changed in DR, at the source, and on both sides."""

from __future__ import annotations

from ferry.core.model import Column
from ferry.failover import Prefer
from ferry.failover.baseline import Baseline, PartitionBaseline
from ferry.failover.reverse import partition_filter
from ferry.failover.side_changes import Side, compare


def baseline(*entries: tuple[str, str, str]) -> Baseline:
    return Baseline(
        "ferry-x", "sales.orders", "sales_dr.orders", True,
        partitions=tuple(
            PartitionBaseline(f"dt={day}", (day,), f"file:///r/dt={day}", replica, source)
            for day, replica, source in entries
        ),
    )  # fmt: skip


def side(**printed: str) -> Side:
    return Side(
        {f"dt={day.replace('_', '-')}": ((day.replace("_", "-"),), p) for day, p in printed.items()}
    )


def test_each_side_s_changes_and_the_conflicts_are_told_apart():
    kept = baseline(
        ("a", "r-a", "s-a"), ("b", "r-b", "s-b"), ("c", "r-c", "s-c"), ("d", "r-d", "s-d")
    )
    replica = side(a="r-a", b="r-b2", c="r-c2", e="r-e")  # d dropped in DR, e new
    source = side(a="s-a2", b="s-b", c="s-c2", d="s-d")  # a and c changed at the source
    changes = compare(kept, replica, source)
    assert changes.changed_in_dr == ("dt=b", "dt=c", "dt=e")
    assert changes.dropped_in_dr == ("dt=d",)
    assert changes.changed_at_source == ("dt=a", "dt=c")
    assert changes.on_both == ("dt=c",)
    assert changes.to_bring_home(None) == ("dt=b", "dt=e")
    assert changes.to_bring_home(Prefer.SOURCE) == ("dt=b", "dt=e")
    assert changes.to_bring_home(Prefer.REPLICA) == ("dt=b", "dt=c", "dt=e")
    assert "on both dt=c" in changes.described()


def test_a_partition_dropped_at_the_source_is_a_change_there():
    changes = compare(baseline(("a", "r-a", "s-a")), side(a="r-a2"), side())
    assert changes.changed_at_source == ("dt=a",) and changes.on_both == ("dt=a",)


def test_the_reverse_filter_selects_exactly_the_partitions_going_home():
    keys = (Column("dt", "string"), Column("hour", "int"))
    assert (
        partition_filter(keys, [("2026-11-20", "1"), ("2026-11-21", "23")])
        == "(dt='2026-11-20' and hour=1) or (dt='2026-11-21' and hour=23)"
    )
