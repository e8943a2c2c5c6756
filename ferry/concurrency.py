"""Threads and part sizes chosen from the manifest: many small files, or a few large ones.

Copying a small object is one request whose time is the store's latency, not its
bandwidth: throughput grows with the requests in flight, so many small files get many
threads. A large object is bandwidth: a few files at once, each split into parts that keep
every thread busy, with the bytes held in memory bounded. A number given in the copier
options (``threads``) is always taken as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MiB = 1024 * 1024

#: Requests in flight for small objects. S3 serves thousands of requests a second per
#: prefix at tens of milliseconds each, so a copier is bound by its own concurrency long
#: before S3's limits.
SMALL_FILE_THREADS = 32
#: Files at once when most are large: bandwidth is shared, parts give the parallelism.
LARGE_FILE_THREADS = 8
#: At most this many bytes of parts are held in memory by one copier.
IN_FLIGHT_BYTES = 256 * MiB
#: S3's multipart limits: parts of 5 MiB or more (but the last), at most 10,000 of them.
MIN_PART_SIZE = 5 * MiB
MAX_PARTS = 10_000


def copy_threads(sizes: Sequence[int], small: int, configured: int | None = None) -> int:
    """Threads for copying files of ``sizes``; files up to ``small`` bytes are small.

    ``configured`` (the copier options' ``threads``) wins when given. The number sizes both
    a copier's pool of files and its pool of parts: a single large file still gets that many
    parts in flight. (Pools start threads only as work arrives, so fewer files than threads
    cost nothing.)
    """
    if configured is not None:
        return configured
    if not sizes:
        return 1
    ordered = sorted(sizes)
    median = ordered[len(ordered) // 2]
    return SMALL_FILE_THREADS if median <= small else LARGE_FILE_THREADS


def single_request_limit(threads: int, chunk_size: int) -> int:
    """The largest file sent to S3 in one ``PutObject`` by a copier of ``threads`` threads.

    A file sent whole is held whole in memory, so each thread may hold its share of
    ``IN_FLIGHT_BYTES`` (and at least the chunk size): with many threads (small files) that
    is the chunk size, with the few threads of large files tens of MiB. One request
    instead of a multipart upload's three or more is cheaper for S3 and the copier alike;
    larger files go in parts, which a single file can keep every thread busy with.
    """
    return max(chunk_size, IN_FLIGHT_BYTES // max(1, threads))


def upload_part_size(size: int, threads: int, minimum: int) -> int:
    """The part size of a multipart upload of ``size`` bytes on ``threads`` threads.

    About one part per thread, so that even a single large file keeps every thread busy;
    at least ``minimum`` (the copier's chunk size) and S3's 5 MiB; at most what keeps
    ``threads`` parts within ``IN_FLIGHT_BYTES``; and never more than 10,000 parts.
    """
    threads = max(1, threads)
    budget = max(minimum, MIN_PART_SIZE, IN_FLIGHT_BYTES // threads)
    part = min(max(math.ceil(size / threads), minimum, MIN_PART_SIZE), budget)
    return max(part, math.ceil(size / MAX_PARTS))
