"""The inline copier on the local file system: streaming, verification, failure."""

import os

import pytest

from ferry.copier import CopyTask, InlineCopier, Manifest, verify_all
from ferry.errors import CopyError, TargetNotWritableError, VerificationError
from ferry.manifest import batch_tasks, read_batches, read_manifest, write_manifest


def make_files(root, sizes):
    tasks = []
    for index, size in enumerate(sizes):
        source = root / "src" / f"d{index % 3}" / f"f{index}.bin"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(os.urandom(size))
        tasks.append(
            CopyTask(
                source.as_uri(), (root / "dst" / f"d{index % 3}" / f"f{index}.bin").as_uri(), size
            )
        )
    return Manifest("e1", tuple(tasks))


def test_files_are_copied_byte_for_byte_in_small_chunks(tmp_path):
    manifest = make_files(tmp_path, [0, 1, 4096, 70_001, 3 * 1024 * 1024 + 5])
    advanced = []
    report = InlineCopier(threads=3, chunk_size=64 * 1024).copy(manifest, advanced.append)
    assert report.files == 5 and report.bytes == manifest.total_bytes
    assert sum(advanced) == manifest.total_bytes
    assert max(advanced) <= 64 * 1024  # streamed, never a whole file at once
    for task in manifest.tasks:
        assert (tmp_path / "dst" / task.target.split("/dst/")[1]).read_bytes() == (
            tmp_path / "src" / task.source.split("/src/")[1]
        ).read_bytes()
    verify_all(manifest.tasks)


def test_a_missing_source_file_is_a_copy_error(tmp_path):
    manifest = make_files(tmp_path, [10, 20])
    os.remove(manifest.tasks[1].source.removeprefix("file://"))
    with pytest.raises(CopyError, match="cannot read source file .*f1.bin"):
        InlineCopier(threads=2).copy(manifest)


def test_an_unwritable_target_is_named(tmp_path):
    manifest = make_files(tmp_path, [10])
    (tmp_path / "dst").write_text("a file where a folder should be")
    with pytest.raises(TargetNotWritableError, match="cannot write .*dst/d0/f0.bin"):
        InlineCopier().copy(manifest)


def test_a_size_mismatch_fails_verification(tmp_path):
    manifest = make_files(tmp_path, [10])
    task = manifest.tasks[0]
    InlineCopier().copy(manifest)
    with pytest.raises(VerificationError, match="expected 11 bytes, found 10 bytes"):
        verify_all([CopyTask(task.source, task.target, 11)])


def test_manifest_round_trips_through_json(tmp_path):
    manifest = make_files(tmp_path, [1, 2, 3, 4, 5])
    uri = (tmp_path / "run" / "manifest.json").as_uri()
    write_manifest(uri, manifest, batch_files=2)
    assert read_manifest(uri) == manifest
    assert [len(batch_tasks(b)) for b in read_batches(uri)] == [2, 2, 1]
