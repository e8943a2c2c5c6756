"""A manifest's batches fit what carries them: a Lambda's 15 minutes, a Map item's 256 KiB;
and a retried batch copies only what is not at the target yet."""

from __future__ import annotations

import json

from ferry import fs
from ferry.copier import CopyTask
from ferry.copies import already_copied
from ferry.manifest import BATCH_TEXT_LIMIT, CopyRoot, ManifestWriter, batch_tasks, read_batches

GIB = 1024**3


def write(tmp_path, files, **bounds):
    uri = fs.local_uri(tmp_path / "manifest.json")
    writer = ManifestWriter(uri, "ferry-e1", **{"batch_files": 1000, **bounds})
    root = CopyRoot("s3://src/t/dt=1", "s3://dr/t/ferry-e1/dt=1")
    writer.add(root, [fs.FileEntry(f"{root.source}/{name}", size, None, "etag") for name, size in files])
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
