"""``ferry replicate`` runs the S3 copy's batches at once, and Ctrl-C among them aborts the table.

The deployed Map runs up to 16 batches at once (``MaxConcurrency``); the command does the same
in its process. Every batch here hangs after its copy (a fault), so the batches' files are at
the target together only if the batches run at once. Ctrl-C then lets the running batches end,
and the table's abort removes the snapshot nothing references.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from ferry.storage import fs
from tests.helpers import ferry, files_below

pytestmark = pytest.mark.e2e


def test_ctrl_c_among_batches_copying_at_once_stops_them_and_removes_the_snapshot(
    cross_region, write_config, tmp_path
):
    sample, west = cross_region.sample, cross_region.west
    for day in sample.days:
        for index in range(2):
            fs.write_bytes(f"{sample.orders.location}/dt={day}/more-{index}.bin", os.urandom(64))
    sources = len(fs.list_files(sample.orders.location))
    config = write_config(cross_region.document(**{"copier-options": {"s3-batch-files": 1}}))
    target = f"s3://{cross_region.replica_bucket}/orders"
    process = ferry(
        "replicate", str(config), "--home", str(tmp_path / "home"),
        faults=[{"point": "copy.batch", "action": "hang", "seconds": 10, "times": 10_000}],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not files_below(target) and time.monotonic() < deadline:
            time.sleep(0.1)
        # One batch per file, each held 10 s after its copy: every file is at the target well
        # before the first batch ends only if the batches run at once.
        first_copied = time.monotonic()
        while len(files_below(target)) < sources and time.monotonic() < first_copied + 8:
            time.sleep(0.1)
        assert len(files_below(target)) == sources > 6
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 130, process.stderr.read()
        assert "interrupted" in process.stderr.read()
        assert files_below(target) == {}
        assert west.get_table(f"{sample.database}_dr", "orders") is None
    finally:
        if process.poll() is None:  # a failed check leaves no command running
            process.kill()
            process.wait()
