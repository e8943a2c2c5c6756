"""Listings stream, and one listing gives a plan both its fingerprints and its manifest."""

from __future__ import annotations

import threading

import boto3
import pytest
from moto import mock_aws

from ferry.core.errors import CopyError
from ferry.storage import file_systems, fingerprint, fs, listing
from tests.helpers import in_process_aws, record_listings

# Names whose order as strings differs from their order as folders: "dt=1-a" < "dt=1/x".
LAYOUT = {
    "dt=1": 3,
    "dt=1-a": 2,
    "dt=10": 2,
    "dt=2/hr=1": 2,
    "dt=2/hr=10": 1,
}


def write_tree(root, layout=LAYOUT):
    for folder, count in layout.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for number in range(count):
            (root / folder / f"part-{number:05d}").write_bytes(b"x" * (number + 1))
    (root / "_SUCCESS").write_bytes(b"")


def runs_of(uris, folders):
    """For each folder, how many separate runs of its files the sequence has."""
    runs = {}
    for folder in folders:
        inside = [folder + "/" in uri for uri in uris]
        runs[folder] = sum(1 for i, x in enumerate(inside) if x and (i == 0 or not inside[i - 1]))
    return runs


def test_a_local_walk_streams_each_folders_files_together_and_lists_what_a_listing_lists(
    tmp_path,
):
    write_tree(tmp_path / "t")
    root = fs.local_uri(tmp_path / "t")
    walk = fs.iter_files(root)
    assert not isinstance(walk, list)
    walked = list(walk)
    assert sorted(walked, key=lambda e: e.uri) == fs.list_files(root)
    assert len(walked) == 11
    assert set(runs_of([e.uri for e in walked], [*LAYOUT, "dt=2"]).values()) == {1}
    entry = next(e for e in walked if e.uri.endswith("dt=10/part-00001"))
    assert (entry.size, entry.marker) == (2, str(entry.mtime_ns))


def test_a_missing_location_or_a_file_lists_nothing(tmp_path):
    (tmp_path / "a-file").write_bytes(b"1")
    assert list(fs.iter_files(fs.local_uri(tmp_path / "missing"))) == []
    assert list(fs.iter_files(fs.local_uri(tmp_path / "a-file"))) == []


@pytest.fixture
def s3_file_systems(monkeypatch):
    """Ferry's file systems on moto in-process, with one bucket."""
    in_process_aws(monkeypatch)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="warehouse")
        yield file_systems.FileSystems(file_systems.S3Settings(region="us-east-1"))


def test_an_s3_walk_asks_for_each_page_when_it_is_needed(s3_file_systems):
    client = s3_file_systems.s3_client("warehouse")
    for number in range(1100):
        client.put_object(Bucket="warehouse", Key=f"t/dt={number % 3}/f{number:05d}", Body=b"x")
    client.put_object(Bucket="warehouse", Key="t/dt=0/", Body=b"")  # a folder marker
    calls = []
    client.meta.events.register("before-call.s3.ListObjectsV2", lambda **_: calls.append(1))

    walk = s3_file_systems.iter_files("s3://warehouse/t")
    first = next(walk)
    assert len(calls) == 1 and first.uri == "s3://warehouse/t/dt=0/f00000"
    rest = list(walk)
    assert len(calls) == 2 and len(rest) == 1099
    assert first.marker == client.head_object(Bucket="warehouse", Key="t/dt=0/f00000")[
        "ETag"
    ].strip('"')
    assert set(runs_of([first.uri] + [e.uri for e in rest], ["dt=0", "dt=1", "dt=2"]).values()) == {
        1
    }


@pytest.fixture
def table(tmp_path):
    """A table folder of five partitions (one with no file), and one partition elsewhere."""
    write_tree(tmp_path / "t")
    (tmp_path / "t" / "dt=3").mkdir()
    write_tree(tmp_path / "elsewhere", {"dt=9": 2})
    root = fs.local_uri(tmp_path / "t")
    # Hive spells local locations file:/path; the walk spells them as the root does.
    locations = [f"file:{tmp_path}/t/{folder}" for folder in [*LAYOUT, "dt=3"]]
    return root, [*locations, fs.local_uri(tmp_path / "elsewhere" / "dt=9")]


def test_one_walk_fingerprints_as_listings_do_and_gives_each_location_its_own_files(
    table, monkeypatch
):
    root, locations = table
    listed = record_listings(monkeypatch)
    told = []
    printed = fingerprint.of_locations(
        locations, 4, root=root, listed=lambda *args: told.append(args)
    )
    # The table's folder once, the partition outside it on its own: no file listed twice.
    assert listed == [root, locations[-1]]
    assert printed == fingerprint.of_locations(locations, 4)  # each listed on its own
    assert sorted(location for location, _, _ in told) == sorted(locations)
    for location, value, entries in told:
        assert value == printed[location]
        assert sorted(entries, key=lambda e: e.uri) == fs.list_files(location)
    assert printed[locations[-2]] == fingerprint.Fingerprint(0, 0, f"{0:064x}")
    assert printed[locations[0]].files == 3 and printed[locations[0]].bytes == 6


def test_a_listing_that_fails_names_the_location(tmp_path, monkeypatch):
    locations = [fs.local_uri(tmp_path / "dt=1"), fs.local_uri(tmp_path / "dt=2")]

    def refusing(self, location):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(file_systems.FileSystems, "iter_files", refusing)
    monkeypatch.setattr(file_systems.FileSystems, "list_files", refusing)
    with pytest.raises(CopyError, match=r"cannot list source files at file://.*dt=1: "):
        fingerprint.of_locations(locations[:1], 2)
    with pytest.raises(CopyError, match=rf"cannot list source files at {fs.local_uri(tmp_path)}"):
        fingerprint.of_locations(locations, 2, root=fs.local_uri(tmp_path))


def walk_threads():
    return [t for t in threading.enumerate() if t.name == "ferry-walk"]


def test_a_walk_that_fails_part_way_names_the_folder_walked_and_stops_listing(table, monkeypatch):
    root, locations = table
    original = listing.files_below

    def failing(filesystem, path, base):  # the disk fails under one folder
        if path.endswith("/dt=10"):
            raise OSError(5, "Input/output error")
        return original(filesystem, path, base)

    monkeypatch.setattr(listing, "files_below", failing)
    told = []
    with pytest.raises(CopyError, match=rf"^cannot list source files at {root}: .*Input/output"):
        fingerprint.of_locations(locations, 2, root=root, listed=lambda *a: told.append(a[0]))
    assert told == [] and walk_threads() == []  # listing.WALK_BATCH files are handed at a time


def test_a_reader_that_stops_early_stops_the_walk(tmp_path):
    write_tree(tmp_path / "t", {f"dt={n:04d}": 1 for n in range(5 * listing.WALK_BATCH)})
    walk = fs.iter_files(fs.local_uri(tmp_path / "t"))
    assert next(walk).uri.endswith("/t/_SUCCESS")
    walk.close()
    assert walk_threads() == []
