"""State `Inline copy` (``ferry/states/inline_copy.py``): the manifest's files copied into the
new snapshot folder, byte for byte, and copied once however often the state runs."""

from __future__ import annotations

import pytest

from ferry.states import inline_copy
from ferry.storage import fs
from tests.state_runs import StateRun, run_of

pytestmark = pytest.mark.integration


def test_the_manifest_is_copied_into_the_snapshot_and_a_retry_copies_nothing_again(
    local_runtime, sample, tmp_path
):
    run = StateRun(local_runtime, sample, tmp_path)
    _, planned = run.planned()

    copied = inline_copy.run(run.context, run_of(planned))

    assert (copied.files, copied.bytes) == (3, planned.bytes)
    written = sorted(fs.list_files(planned.replica_location), key=lambda f: f.uri)
    assert len(written) == 3
    assert sum(f.size for f in written) == planned.bytes
    again = inline_copy.run(run.context, run_of(planned))
    assert (again.files, again.bytes) == (3, planned.bytes)
    # Every batch has its copy record: the retry rewrote no file.
    assert sorted(fs.list_files(planned.replica_location), key=lambda f: f.uri) == written
