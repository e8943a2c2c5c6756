"""A manifest's batches fit what carries them: a Lambda's 15 minutes, a Map item's 256 KiB;
and a retried batch copies only what is not at the target yet."""

from __future__ import annotations

import json

from ferry.copying.copier import CopyTask
from ferry.copying.manifest import (
    BATCH_TEXT_LIMIT,
    REWRITE_BATCH_BYTES,
    CopyRoot,
    ManifestWriter,
    Rewrite,
    batch_rewrites,
    batch_tasks,
    read_batches,
)
from ferry.lifecycle.copy_work import already_copied
from ferry.storage import fs, listing

GIB = 1024**3


def write(tmp_path, files, **bounds):
    uri = fs.local_uri(tmp_path / "manifest.json")
    writer = ManifestWriter(uri, "ferry-e1", **{"batch_files": 1000, **bounds})
    root = CopyRoot("s3://src/t/dt=1", "s3://dr/t/ferry-e1/dt=1")
    writer.add(
        root, [listing.FileEntry(f"{root.source}/{name}", size, None, "etag") for name, size in files]
    )
    summary = writer.close()
    return summary, read_batches(uri)


def test_batches_close_at_their_files_their_bytes_and_their_text(tmp_path):
    # Bytes: 100 objects of 4 GiB in batches of at most 25 GiB (six a batch).
    summary, batches = write(tmp_path, [(f"part-{n:03d}", 4 * GIB) for n in range(100)],
                             batch_bytes=25 * GIB)  # fmt: skip
    assert summary.files == 100 and summary.batches == 17
    assert max(sum(t.size for t in batch_tasks(b)) for b in batches) <= 25 * GIB
    # An object larger than the bound is a batch of its own.
    _, batches = write(tmp_path, [("small", 1), ("huge", 40 * GIB), ("other", 1)],
                       batch_bytes=25 * GIB)  # fmt: skip
    assert [[t.size for t in batch_tasks(b)] for b in batches] == [[1], [40 * GIB], [1]]
    # Text: long names close a batch before 1,000 files would pass a Map item's limit.
    long = "x" * 400
    summary, batches = write(tmp_path, [(f"{long}-{n:04d}", 1) for n in range(1000)])
    assert summary.batches > 1
    for batch in batches:
        assert len(json.dumps(batch)) <= BATCH_TEXT_LIMIT + 1024
    assert sum(len(batch_tasks(b)) for b in batches) == 1000


def test_a_retried_batch_skips_what_is_at_the_target_whole(tmp_path):
    target = tmp_path / "dr"
    (target / "dt=1").mkdir(parents=True)
    (target / "dt=1" / "a").write_bytes(b"12345")  # copied whole by the first attempt
    (target / "dt=1" / "b").write_bytes(b"12")  # cut short: copied again
    tasks = [
        CopyTask("s3://src/t/dt=1/a", fs.local_uri(target / "dt=1" / "a"), 5, "e1"),
        CopyTask("s3://src/t/dt=1/b", fs.local_uri(target / "dt=1" / "b"), 5, "e2"),
        CopyTask("s3://src/t/dt=1/c", fs.local_uri(target / "dt=1" / "c"), 5, "e3"),
    ]
    done, pending = already_copied(tasks)
    assert [t.source for t in done] == ["s3://src/t/dt=1/a"]
    assert [t.source for t in pending] == ["s3://src/t/dt=1/b", "s3://src/t/dt=1/c"]


def test_rewrites_share_the_batches_of_the_copies_and_their_bounds(tmp_path):
    """An Iceberg run's manifest rewrites follow its copies, in the same batches, bounded as
    they are: one each towards the files, their bytes, their text (with their context)."""
    uri = fs.local_uri(tmp_path / "manifest.json")
    writer = ManifestWriter(uri, "ferry-e1", batch_files=50, batch_bytes=GIB)
    root = CopyRoot("s3://src/t", "s3://dr/t")
    writer.add(root, [listing.FileEntry(f"s3://src/t/data/part-{n}", 10, None, "e") for n in range(30)])
    context = {"mover": {"source": "s3://src/t", "replica": "s3://dr/t"}, "formatVersion": 2,
               "metadata": "s3://src/t/metadata/00003-x.metadata.json"}  # fmt: skip
    long = "m" * 300
    writer.add_rewrites(
        context,
        [
            Rewrite(
                [f"s3://src/t/metadata/{long}-{n}.avro", f"s3://dr/t/metadata/{long}-{n}.avro",
                 0, n, 0, 1000],
                f"s3://src/t/metadata/{long}-{n}.avro", f"s3://dr/t/metadata/{long}-{n}.avro",
                1000,
            )
            for n in range(2000)
        ],
    )  # fmt: skip
    summary = writer.close()
    batches = read_batches(uri)

    assert (summary.files, summary.rewrites) == (30, 2000) and summary.work
    assert summary.batches == len(batches) > 2000 // 50
    # The first batch holds the copies and the first rewrites, up to 50 items.
    first_context, first_items = batch_rewrites(batches[0])
    assert len(batch_tasks(batches[0])) == 30 and len(first_items) == 20
    items = []
    for batch in batches:
        units = len(batch_tasks(batch)) + len(batch_rewrites(batch)[1])
        assert units <= 50 and len(json.dumps(batch)) <= BATCH_TEXT_LIMIT
        batch_context, batch_items = batch_rewrites(batch)
        assert batch_context == context
        items.extend(item[3] for item in batch_items)
    assert items == list(range(2000))  # every rewrite once, in order
    # Text: 2,000 rewrites of long names close batches before 1,000 items would pass a Map
    # item's limit, the shared context counted in each.
    uri = fs.local_uri(tmp_path / "text.json")
    writer = ManifestWriter(uri, "ferry-e1", batch_files=1000)
    writer.add_rewrites(
        context,
        [Rewrite([f"s3://src/t/metadata/{long}-{n}.avro", "s3://dr/t/metadata/" + long, 0, n, 0, 1],
                 "s3://src/t/x", "s3://dr/t/x", 1) for n in range(2000)],
    )  # fmt: skip
    summary = writer.close()
    batches = read_batches(uri)
    assert summary.batches == len(batches) > 2
    assert all(len(json.dumps(batch)) <= BATCH_TEXT_LIMIT for batch in batches)
    assert sum(len(batch_rewrites(b)[1]) for b in batches) == 2000
    # CPU: rewrites of large manifests close a batch at REWRITE_BATCH_BYTES of them (a
    # manifest larger than that is a batch of its own), long before the bytes of copies would.
    uri = fs.local_uri(tmp_path / "cpu.json")
    writer = ManifestWriter(uri, "ferry-e1", batch_files=100, batch_bytes=25 * GIB)
    big = REWRITE_BATCH_BYTES // 3 + 1
    sizes = [big] * 7 + [REWRITE_BATCH_BYTES * 2, 1]
    writer.add_rewrites(
        context,
        [Rewrite([f"s3://src/t/metadata/m{n}.avro", "t", 0, n, 0, size], "s3://a/x", "s3://b/x", size)
         for n, size in enumerate(sizes)],
    )  # fmt: skip
    writer.close()
    assert [[item[-1] for item in batch_rewrites(b)[1]] for b in read_batches(uri)] == [
        [big, big],
        [big, big],
        [big, big],
        [big],
        [REWRITE_BATCH_BYTES * 2],
        [1],
    ]


def test_a_copy_record_counts_only_for_the_identical_batch(tmp_path):
    # A resumed run plans its event's manifest again: a batch recorded by the attempt counts
    # only if it holds the same files, sizes and change markers.
    from ferry.copying.copy_records import recorded_batches, write_copy_record

    def plan(marker_of_b):
        uri = fs.local_uri(tmp_path / "manifest.json")
        writer = ManifestWriter(uri, "ferry-e1", batch_files=1)
        root = CopyRoot("s3://src/t/dt=1", "s3://dr/t/ferry-e1/dt=1")
        writer.add(root, [listing.FileEntry(f"{root.source}/a", 10, None, "etag-a"),
                          listing.FileEntry(f"{root.source}/b", 10, None, marker_of_b)])  # fmt: skip
        return uri, writer.close(), read_batches(uri)

    uri, summary, batches = plan("etag-b")
    for batch in batches:
        write_copy_record(uri, batch, 1, 10)
    assert recorded_batches(uri, summary.digests) == {0, 1}
    # b replaced at the source with the same size: its batch is another one now.
    uri, summary, batches = plan("etag-b2")
    assert recorded_batches(uri, summary.digests) == {0}
    assert [b["digest"] for b in batches] == list(summary.digests)


def test_a_resumed_plan_reuses_only_files_planned_from_the_same_source_version(tmp_path):
    # The attempt copied a and b whole; since, b was replaced with the same size.
    uri = fs.local_uri(tmp_path / "manifest.json")
    root = CopyRoot("s3://src/t/dt=1", "s3://dr/t/ferry-e1/dt=1")
    attempt = {
        f"{root.target}/a": (f"{root.source}/a", 10, "etag-a"),
        f"{root.target}/b": (f"{root.source}/b", 10, "etag-b"),
    }
    writer = ManifestWriter(uri, "ferry-e1", batch_files=1000, reusable=attempt)
    writer.add(root, [listing.FileEntry(f"{root.source}/{name}", 10, None, marker)
                      for name, marker in (("a", "etag-a"), ("b", "etag-b2"), ("c", "etag-c"))])  # fmt: skip
    summary = writer.close()
    [batch] = read_batches(uri)
    assert batch["reuse"] == [0]
    assert (summary.reused_files, summary.reused_bytes) == (1, 10)
