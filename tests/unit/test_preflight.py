"""The dry run's check of the replica location: writable or one clear error, and no trace."""

import os

import pytest

from ferry.core.errors import TargetNotWritableError
from ferry.planning.preflight import check_writable
from ferry.storage import fs


def tree(root) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(folder, name), root)
        for folder, folders, files in os.walk(root)
        for name in folders + files
    )


def test_a_new_location_is_writable_and_left_as_it_was(tmp_path):
    (tmp_path / "warehouse").mkdir()
    check_writable(fs.local_uri(tmp_path / "warehouse" / "sales_dr" / "orders"))
    assert tree(tmp_path) == ["warehouse"]  # no probe, no folder created for it


def test_an_existing_location_keeps_its_snapshots(tmp_path):
    snapshot = tmp_path / "orders" / "ferry-1"
    snapshot.mkdir(parents=True)
    (snapshot / "part-0.parquet").write_bytes(b"data")
    check_writable(fs.local_uri(tmp_path / "orders"))
    assert tree(tmp_path) == ["orders", "orders/ferry-1", "orders/ferry-1/part-0.parquet"]


def test_a_location_below_a_file_is_not_writable(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    location = fs.local_uri(blocker / "orders")
    with pytest.raises(TargetNotWritableError) as raised:
        check_writable(location)
    [line] = str(raised.value).splitlines()
    assert line.startswith(f"cannot write replica table location {location}: ")
    assert tree(tmp_path) == ["blocker"] and blocker.read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_not_writable(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(TargetNotWritableError, match="Permission denied"):
            check_writable(fs.local_uri(folder / "orders"))
    finally:
        folder.chmod(0o755)
    assert tree(tmp_path) == ["read-only"]
