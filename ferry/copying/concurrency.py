"""Threads and part sizes chosen from the manifest: many small files, or a few large ones.

Copying a small object is one request whose time is the store's latency, not its
bandwidth: throughput grows with the requests in flight, so many small files get many
threads. A large object is bandwidth: a few files at once, each streamed in one request
up to the size Hadoop's S3A sends in one, larger ones too where the files are enough to give
every thread one, and the rest split into parts with the bytes held in memory bounded
(``uploads``). A number given in the copier options (``threads``) is always taken as it is.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ferry.storage.s3 import MAX_PARTS, MIN_PART_SIZE, MiB

#: Requests in flight for small objects. S3 serves thousands of requests a second per
#: prefix at tens of milliseconds each, so a copier is bound by its own concurrency long
#: before S3's limits.
SMALL_FILE_THREADS = 32
#: Objects copied at once by all the S3 server-side copiers of one process together. The S3
#: copy's Map runs up to 16 batches at once: on AWS each is a Lambda of its own, but
#: ``ferry replicate`` runs them in one process, where they share one client whose connection
#: pool holds ``2 * SMALL_FILE_THREADS`` (``ferry.storage.aws.AwsClients.client``). Past that,
#: connections are opened to be thrown away, and more threads only contend for the GIL.
PROCESS_OBJECTS = 2 * SMALL_FILE_THREADS
#: The turns of ``PROCESS_OBJECTS`` (a copier thread holds one while it copies an object).
process_objects = threading.BoundedSemaphore(PROCESS_OBJECTS)
#: Files at once when most are large: bandwidth is shared, parts give the parallelism.
LARGE_FILE_THREADS = 8
#: At most this many bytes of parts are held in memory by one copier.
IN_FLIGHT_BYTES = 256 * MiB
#: A local file streams from disk in one PutObject up to this size (S3 takes 5 GiB in one):
#: no memory held, one request where a multipart upload makes three or more, and a failed
#: request sends at most this much again.
STREAMED_PUT_LIMIT = 256 * MiB
#: A local file up to this size streams in one PutObject however few the files: a single
#: request is what Hadoop's S3A makes of a file smaller than its 64 MiB block (the way Hive
#: and Spark write tables to S3). Splitting it would add two requests (and, for the store,
#: parts to assemble) to save a fraction of a second at one connection's bandwidth.
ALWAYS_STREAMED = 64 * MiB


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
    """The largest file read whole and sent to S3 in one ``PutObject`` by ``threads`` threads.

    A file sent whole is held whole in memory, so each thread may hold its share of
    ``IN_FLIGHT_BYTES`` (and at least the chunk size): with many threads (small files) that
    is the chunk size, with the few threads of large files tens of MiB. One request
    instead of a multipart upload's three or more is cheaper for S3 and the copier alike.
    """
    return max(chunk_size, IN_FLIGHT_BYTES // max(1, threads))


@dataclass(frozen=True)
class Uploads:
    """How a copier's files go to S3: whole, streamed, or in parts (``uploads`` chooses).

    A file up to ``whole`` bytes is read into memory and sent in one ``PutObject``; a local
    file up to ``streamed`` bytes (at least ``ALWAYS_STREAMED``) is read once for its MD5
    and streamed from disk in one ``PutObject``; any other is a multipart upload in about
    ``parts`` parts.
    """

    whole: int
    streamed: int = ALWAYS_STREAMED
    threads: int = 1
    parts: int = 1

    def part_size(self, size: int, minimum: int) -> int:
        """The part size of a multipart upload of ``size`` bytes.

        About ``size / parts``; at least ``minimum`` (the copier's chunk size) and S3's
        5 MiB; at most a thread's share of ``IN_FLIGHT_BYTES`` (every thread may hold a
        part); and never more than 10,000 parts.
        """
        budget = max(minimum, MIN_PART_SIZE, IN_FLIGHT_BYTES // max(1, self.threads))
        part = min(max(math.ceil(size / max(1, self.parts)), minimum, MIN_PART_SIZE), budget)
        return max(part, math.ceil(size / MAX_PARTS))


def uploads(sizes: Sequence[int], threads: int, chunk_size: int) -> Uploads:
    """How files of ``sizes`` go to S3 from a copier of ``threads`` threads.

    Files too large to hold whole (``single_request_limit``) are the large ones. A local
    one up to ``ALWAYS_STREAMED`` streams in a single request. When they are enough to give
    every thread one, files already keep the threads busy: each local one up to
    ``STREAMED_PUT_LIMIT`` streams too (parts would only add requests and, for the store,
    parts to assemble). Any other goes in parts, as many as the threads it has to itself,
    so that even one file keeps every thread busy.
    """
    whole = single_request_limit(threads, chunk_size)
    large = [size for size in sizes if size > whole]
    streamable = sum(1 for size in large if size <= STREAMED_PUT_LIMIT)
    return Uploads(
        whole=whole,
        streamed=STREAMED_PUT_LIMIT if streamable >= max(1, threads) else ALWAYS_STREAMED,
        threads=threads,
        parts=max(1, math.ceil(threads / max(1, len(large)))),
    )
