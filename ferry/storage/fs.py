"""One file-system layer for every scheme Ferry copies between (``pyarrow.fs``).

``file://`` and ``s3://`` (also ``s3a://``, ``s3n://``) are built here; other schemes
(``hdfs://``, ``gs://``) go through ``pyarrow.fs.FileSystem.from_uri``.

S3 is regional, so a process may need several S3 file systems: a ``FileSystems`` object
looks each bucket's region up once (``HeadBucket``, whose answer names the region even on a
redirect or a refusal), caches it, and keeps one ``pyarrow.fs.S3FileSystem`` per region. An
inline copy from a bucket in us-east-1 to one in us-west-2 then reads and writes each
bucket through its own region.

Nothing here reads the environment. Where S3 is (AWS, or an emulator's endpoint) is decided
at the program's edge -- the CLI's ``main``, the Lambda runtime's settings, the Spark job's
``main`` -- which hands ``S3Settings`` to ``configure`` once. pyarrow cannot take that over:
in pyarrow 26 ``S3FileSystem()`` ignores ``AWS_ENDPOINT_URL`` (only ``FileSystem.from_uri``
honours it, and that takes none of the options below), and ``resolve_s3_region`` takes no
endpoint, so it cannot reach an emulator; the region lookup goes through a boto3 client.

Every boto3 client here comes from ``ferry.storage.aws.AwsClients`` and every pyarrow S3 file system
is given ``ferry.storage.retry_policy``'s attempts and timeouts (``pyarrow_s3_policy``): one retry
policy whichever library sends the request.

The module's functions (``resolve``, ``read_bytes``, ``list_files``, ...) use the process
default that ``configure`` sets, so the domain calls them with a URI and nothing else. Until
an edge configures it, the default is AWS's own endpoints.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pyarrow import ArrowException
from pyarrow import fs as pafs

from ferry.core.errors import FileSystemUnavailableError
from ferry.storage import retry_policy

# Also the file systems' own answer to which schemes are S3 (``fs.S3_SCHEMES``).
from ferry.storage.s3 import S3_SCHEMES, Refusal, error_code, refusal

if TYPE_CHECKING:
    from ferry.storage.aws import AwsClients

#: Connections of the S3 clients that list locations (a plan lists on up to this many threads).
LISTING_CONNECTIONS = 64
#: A streamed listing (``iter_files``) hands its reader batches of at least this many files
#: (a folder's files are never split), listed at most this many batches ahead.
WALK_BATCH = 1000
WALK_AHEAD = 4
#: How long Google Cloud Storage requests are retried before the error is reported.
GCS_RETRY_SECONDS = 30


@dataclass(frozen=True)
class S3Settings:
    """Where S3 is: ``endpoint`` None means AWS's own endpoints.

    ``region`` is where bucket regions are looked up from, and the region of a bucket whose
    region cannot be found (a missing bucket then fails on first use, as it would anyway).
    """

    endpoint: str | None = None
    region: str | None = None
    #: Credentials given explicitly (access key id, secret key, session token); None: the
    #: SDK's own chain (the environment, the profile, the instance's role), as boto3's.
    credentials: tuple[str, str, str | None] | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> S3Settings:
        """The standard AWS SDK variables, as boto3 reads them; for the edges to call."""
        return cls(
            endpoint=environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or None,
            region=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None,
        )

    @classmethod
    def of_clients(cls, aws: AwsClients) -> S3Settings:
        """Where ``aws``'s own clients go, for an edge that built them for an endpoint of its
        choosing (the local runtime that ``--home`` selects): their endpoint, region and
        credentials, so that pyarrow reaches the S3 that boto3 reaches."""
        return cls(endpoint=aws.endpoint, region=aws.region, credentials=aws.credentials())


@dataclass(frozen=True)
class FileEntry:
    """A file found under a location: its full URI, size, modification time, change marker.

    ``marker`` is the store's own sign that the content changed: the ETag on S3, the
    modification time elsewhere (what a listing gives without reading a byte).
    """

    uri: str
    size: int
    mtime_ns: int | None
    marker: str | None = None


def local_uri(path: str | os.PathLike[str]) -> str:
    """``file://`` plus the absolute path, as Hive writes locations: never percent-encoded.

    Hive escapes partition values into folder names with ``%XX`` (``k=a%2Fb``), so a
    location's path is taken literally; ``Path.as_uri()`` would encode ``=`` and ``%``.
    """
    return "file://" + os.path.abspath(path)


def nearest_existing(path: os.PathLike[str] | str) -> tuple[Path, str | None]:
    """The nearest existing file or folder at or above ``path`` (absolute), and None; or the
    folder above it that cannot be searched, and why (nothing below it can be reached, and
    ``Path.exists`` would raise ``PermissionError`` there)."""
    folder = Path(path).absolute()
    blocked = False
    while True:
        try:
            folder.stat()
        except PermissionError:
            blocked = True
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as error:  # a name too long, a loop of links
            return folder, f"{folder}: {error.strerror}"
        else:
            return folder, f"{folder} cannot be searched (permission denied)" if blocked else None
        if folder == folder.parent:
            return folder, None
        folder = folder.parent


def why_not_creatable(path: os.PathLike[str] | str) -> str | None:
    """Why a local file or folder could not be created at ``path``, or None when it could:
    the nearest existing folder above it must be a folder, and writable."""
    folder, problem = nearest_existing(path)
    if problem:
        return problem
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    return None


def scheme_of(uri: str) -> str:
    return urlparse(uri).scheme.lower() or "file"


def object_location(uri: str) -> tuple[str, str]:
    """``(bucket, key)`` of an ``s3://`` URI, as Step Functions' ``ItemReader`` and
    ``ResultWriter`` name an object; ``("", path)`` of a local one (the in-process driver's
    work folder), which ``object_uri`` turns back."""
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key


def object_uri(bucket: str, key: str) -> str:
    """The URI of ``object_location``'s ``(bucket, key)``."""
    return f"s3://{bucket}/{key}" if bucket else f"file:///{key.lstrip('/')}"


def join(base: str, *parts: str) -> str:
    """Join URI path segments with exactly one slash between them."""
    result = base.rstrip("/")
    for part in parts:
        part = part.strip("/")
        if part:
            result = f"{result}/{part}"
    return result


def relative_path(location: str, base: str) -> str | None:
    """``location``'s path below ``base``, or None when it is not below it."""
    location, base = normalise(location), normalise(base)
    if location == base:
        return ""
    if location.startswith(base + "/"):
        return location[len(base) + 1 :]
    return None


@lru_cache(maxsize=1 << 16)
def _normalise(uri: str) -> str:
    # Cached: a plan of many partitions compares the same locations many times.
    parsed = urlparse(uri.rstrip("/"))
    scheme = parsed.scheme.lower()
    if scheme in S3_SCHEMES:
        scheme = "s3"
    if scheme in ("", "file"):
        return "file://" + os.path.normpath(parsed.path)
    return f"{scheme}://{parsed.netloc}{parsed.path}"


def normalise(uri: str) -> str:
    """One spelling per location: ``file:/p`` and ``file:///p`` agree, ``s3a://`` is ``s3://``.

    A URI already in its normal form is not parsed: a plan compares hundreds of thousands
    of distinct locations (every partition on both sides, every file of a walk), more than
    the parse's cache holds, and a parse each costs seconds.
    """
    if "?" not in uri and "#" not in uri and not uri.endswith("/"):
        if uri.startswith("s3://"):
            return uri
        if uri.startswith("file:///") and os.path.normpath(uri[7:]) == uri[7:]:
            return uri
        # Hive spells local locations file:/path.
        if uri.startswith("file:/") and uri[6:7] != "/" and os.path.normpath(uri[5:]) == uri[5:]:
            return "file://" + uri[5:]
    return _normalise(uri)


def pyarrow_s3_policy() -> dict[str, Any]:
    """``ferry.storage.retry_policy`` in pyarrow's terms: the AWS SDK for C++'s standard retry
    strategy with the same attempts in all (pyarrow's default is 3), and the same timeouts."""
    return {
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=retry_policy.ATTEMPTS),
        "connect_timeout": retry_policy.CONNECT_TIMEOUT_SECONDS,
        "request_timeout": retry_policy.READ_TIMEOUT_SECONDS,
    }


def is_local(filesystem: pafs.FileSystem) -> bool:
    return filesystem.type_name == "local"


class FileSystems:
    """The file systems of one process: local, and one S3 file system per bucket region.

    Their boto3 clients (bucket regions, listings, the inline copier's objects) come from
    ``aws`` (``ferry.storage.aws.AwsClients``: the one configuration of every AWS client), by
    default clients for ``settings`` made on first need; ``s3_client`` replaces the client that
    looks bucket regions up. pyarrow's S3 file systems get the same retry policy and timeouts
    (``ferry.storage.retry_policy``). Safe to share between threads.
    """

    def __init__(
        self,
        settings: S3Settings | None = None,
        s3_client: Any | None = None,
        aws: AwsClients | None = None,
    ):
        self.settings = settings or S3Settings()
        self._s3_client = s3_client
        self._aws = aws
        # Reentrant: a region look-up (under the lock) may build the client it looks up with.
        self._lock = threading.RLock()
        self._bucket_regions: dict[str, str] = {}
        self._s3_by_region: dict[str | None, pafs.S3FileSystem] = {}
        self._local: pafs.LocalFileSystem | None = None
        self._gcs: pafs.GcsFileSystem | None = None
        #: Buckets reached with clients of their own (a role in another account), by name.
        self._bucket_clients: dict[str, AwsClients] = {}
        #: Their S3 file systems, by region and clients, with the access key each was made with.
        self._s3_by_role: dict[tuple[str | None, int], tuple[str, pafs.S3FileSystem]] = {}

    def reach_bucket_with(self, bucket: str, clients: AwsClients) -> None:
        """Reach ``bucket`` with ``clients`` (``AwsClients.assuming``): the bucket of a side in
        another account, with the role Ferry assumes there (``ferry.storage.aws_roles``).

        Its boto3 clients are ``clients``' own: signed with the role's credentials, renewed as
        they expire, with the same retries and timeouts as every other client. pyarrow's S3
        file system takes fixed credentials: it is made again with the renewed ones (botocore
        renews them at least ``RoleCredentials``' margin before they expire, so a stream
        opened on the old ones has that long to finish).
        """
        with self._lock:
            self._bucket_clients[bucket] = clients

    @property
    def aws(self) -> AwsClients:
        """The clients of every bucket not reached with a role of its own."""
        with self._lock:
            if self._aws is None:
                # Imported here: reading file:// locations (the CLI's config) needs no boto3.
                from ferry.storage.aws import AwsClients, new_session

                credentials = self.settings.credentials or (None, None, None)
                session = new_session(
                    aws_access_key_id=credentials[0],
                    aws_secret_access_key=credentials[1],
                    aws_session_token=credentials[2],
                    region_name=self.settings.region,
                )
                self._aws = AwsClients(self.settings.endpoint, session)
            return self._aws

    def resolve(self, uri: str) -> tuple[pafs.FileSystem, str]:
        """The file system and the path within it for ``uri``."""
        parsed = urlparse(uri)
        scheme = parsed.scheme.lower()
        if scheme in ("", "file"):
            return self.local(), parsed.path
        if scheme in S3_SCHEMES:
            return self.s3(parsed.netloc), f"{parsed.netloc}{parsed.path}".rstrip("/")
        if scheme in ("gs", "gcs"):
            return self.gcs(), f"{parsed.netloc}{parsed.path}".rstrip("/")
        try:
            filesystem, path = pafs.FileSystem.from_uri(uri)
        except (OSError, ValueError, ArrowException) as error:
            # pyarrow's message for a missing libhdfs lists every path it tried to load a
            # JVM from (dozens of lines): its first line says it.
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise FileSystemUnavailableError(
                f"cannot use {uri}: no {scheme}:// file system in this process ({first})"
            ) from None
        return filesystem, path

    def gcs(self) -> pafs.GcsFileSystem:
        """Google Cloud Storage; retries give up after ``GCS_RETRY_SECONDS``.

        Without a limit, a bucket without credentials retries (and hangs) for minutes.
        """
        with self._lock:
            if self._gcs is None:
                self._gcs = pafs.GcsFileSystem(
                    retry_time_limit=timedelta(seconds=GCS_RETRY_SECONDS)
                )
            return self._gcs

    def local(self) -> pafs.LocalFileSystem:
        if self._local is None:
            self._local = pafs.LocalFileSystem()
        return self._local

    def s3(self, bucket: str) -> pafs.S3FileSystem:
        """The S3 file system of ``bucket``'s region (and of its role, when it has one)."""
        region = self.region_of(bucket)
        clients = self._bucket_clients.get(bucket)
        if clients is not None:
            return self._s3_of_role(region, clients)
        with self._lock:
            if region not in self._s3_by_region:
                self._s3_by_region[region] = self._new_s3(region)
            return self._s3_by_region[region]

    def region_of(self, bucket: str) -> str | None:
        """``bucket``'s region, looked up once; the settings' region when it cannot be found.

        Only a region found is remembered: a bucket missing now may be created later.
        """
        with self._lock:
            # Under the lock: many copy threads starting on one bucket make one request.
            if bucket not in self._bucket_regions:
                found = self._look_up_region(bucket)
                if found is None:
                    return self.settings.region
                self._bucket_regions[bucket] = found
            return self._bucket_regions[bucket]

    def _look_up_region(self, bucket: str) -> str | None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            reply = self._client().head_bucket(Bucket=bucket)
        except ClientError as error:
            # A refusal (403) or a redirect still names the region; a missing bucket does not.
            reply = error.response
        except BotoCoreError:
            return None
        headers = reply.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        return reply.get("BucketRegion") or headers.get("x-amz-bucket-region") or None

    def _client(self) -> Any:
        if self._s3_client is None:
            return self.aws.client("s3", self.settings.region, LISTING_CONNECTIONS)
        return self._s3_client

    def _s3_of_role(self, region: str | None, clients: AwsClients) -> pafs.S3FileSystem:
        # Reading the frozen credentials renews them when they are about to expire.
        frozen = clients.session.get_credentials().get_frozen_credentials()
        key = (region, id(clients))
        with self._lock:
            made = self._s3_by_role.get(key)
            if made is None or made[0] != frozen.access_key:
                credentials = (frozen.access_key, frozen.secret_key, frozen.token)
                made = (frozen.access_key, self._new_s3(region, credentials))
                self._s3_by_role[key] = made
            return made[1]

    def _new_s3(
        self, region: str | None, credentials: tuple[str, str, str | None] | None = None
    ) -> pafs.S3FileSystem:
        options: dict[str, object] = {}
        if region:
            options["region"] = region
        if self.settings.endpoint:
            parsed = urlparse(self.settings.endpoint)
            options["endpoint_override"] = parsed.netloc or parsed.path
            options["scheme"] = parsed.scheme or "https"
            # Emulators serve every bucket from one host; virtual-host addressing would not
            # resolve.
            options["force_virtual_addressing"] = False
        credentials = credentials or self.settings.credentials
        if credentials:
            key, secret, token = credentials
            options.update(access_key=key, secret_key=secret, session_token=token)
        # Open objects lazily: a small file becomes one PutObject instead of a multipart
        # upload's three requests (errors such as a missing bucket then surface on write or
        # close).
        return pafs.S3FileSystem(allow_delayed_open=True, **options, **pyarrow_s3_policy())

    def open_output(self, uri: str) -> pafs.NativeFile:
        """A stream writing ``uri``; on a local file system its folder is created first.

        (Object stores have no folders, and an empty "folder" marker object would only
        clutter the bucket.)
        """
        filesystem, path = self.resolve(uri)
        if is_local(filesystem):
            filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        return filesystem.open_output_stream(path)

    def write_bytes(self, uri: str, data: bytes) -> None:
        with self.open_output(uri) as out:
            out.write(data)

    def read_bytes(self, uri: str, limit: int | None = None) -> bytes:
        """The file's bytes; at most ``limit`` of them when given (its start)."""
        filesystem, path = self.resolve(uri)
        with filesystem.open_input_file(path) as handle:
            return handle.read() if limit is None else handle.read(limit)

    def list_files(self, location: str) -> list[FileEntry]:
        """Every file below ``location`` (recursively), by URI; none when it does not exist."""
        if scheme_of(location) in S3_SCHEMES:
            return sorted(self._iter_s3(location), key=lambda entry: entry.uri)
        filesystem, path = self.resolve(location)
        # One call: pyarrow stats the files without the GIL, so listings run in parallel.
        return _files_below(filesystem, path, location.rstrip("/"))

    def iter_files(self, location: str) -> Iterator[FileEntry]:
        """Every file below ``location``, streamed: the files below any one folder come together.

        S3 gives its pages in key order. Elsewhere the folders directly below ``location``
        are listed whole, in name order, by a thread that runs a few batches ahead of the
        reader. Either way memory holds a page or a few folders' files, never the whole
        listing.
        """
        if scheme_of(location) in S3_SCHEMES:
            yield from self._iter_s3(location)
            return
        filesystem, path = self.resolve(location)
        base = location.rstrip("/")
        selector = pafs.FileSelector(path, recursive=False, allow_not_found=True)
        try:
            children = sorted(filesystem.get_file_info(selector), key=lambda info: info.path)
        except NotADirectoryError:
            return

        def batches() -> Iterator[list[FileEntry]]:
            batch: list[FileEntry] = []
            for info in children:
                uri = f"{base}/{info.path.rstrip('/').rsplit('/', 1)[-1]}"
                if info.type == pafs.FileType.Directory:
                    batch.extend(_files_below(filesystem, info.path, uri))
                elif info.type == pafs.FileType.File:
                    batch.append(_entry(uri, info))
                # Whole batches, not a folder each: a hand-over between threads costs more
                # than listing a folder of one file.
                if len(batch) >= WALK_BATCH:
                    yield batch
                    batch = []
            yield batch

        for batch in _ahead(batches(), WALK_AHEAD):
            yield from batch

    def exists(self, uri: str) -> bool:
        """True when a file or a folder (on S3: any object below the prefix) is at ``uri``."""
        filesystem, path = self.resolve(uri)
        if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
            return True
        return not is_local(filesystem) and bool(self.list_files(uri))

    def list_folders(self, location: str) -> list[FileEntry]:
        """The folders directly below ``location`` (on S3: common prefixes), by URI.

        Each entry's ``mtime_ns`` is the folder's own where the file system has one, else
        None; ``size`` is 0.
        """
        filesystem, path = self.resolve(location)
        selector = pafs.FileSelector(path, recursive=False, allow_not_found=True)
        base = location.rstrip("/")
        folders = [
            FileEntry(join(base, info.path.rstrip("/").rsplit("/", 1)[-1]), 0, info.mtime_ns)
            for info in filesystem.get_file_info(selector)
            if info.type == pafs.FileType.Directory
        ]
        return sorted(folders, key=lambda entry: entry.uri)

    def _iter_s3(self, location: str) -> Iterator[FileEntry]:
        """S3's own listing (ListObjectsV2, 1000 keys a page): it gives each object's ETag.

        Folder marker objects (keys ending in ``/``) are not files.
        """
        parsed = urlparse(location)
        bucket, prefix = parsed.netloc, parsed.path.lstrip("/").rstrip("/")
        base = location.rstrip("/")
        client = self.s3_client(bucket)
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=f"{prefix}/" if prefix else ""
        )
        try:
            for page in pages:
                for item in page.get("Contents", []):
                    key = item["Key"]
                    if key.endswith("/"):
                        continue
                    relative = key[len(prefix) + 1 :] if prefix else key
                    modified = item.get("LastModified")
                    yield FileEntry(
                        join(base, relative),
                        item["Size"],
                        int(modified.timestamp() * 1e9) if modified else None,
                        item.get("ETag", "").strip('"') or None,
                    )
        except Exception as error:  # botocore's errors, as the OSError pyarrow would raise
            if error_code(error) == "NoSuchBucket":
                raise FileNotFoundError(f"no bucket {bucket}") from None
            raise OSError(str(error).splitlines()[0]) from None

    def s3_client(self, bucket: str, connections: int | None = None) -> Any:
        """The S3 client of ``bucket``'s region (``AwsClients.client``: its role's when it has
        one), pooling ``connections`` connections.

        The inline copier reads and writes S3 objects through it (one request per small
        object, with the checks pyarrow's streams cannot make: ``IfMatch``, ``Content-MD5``).
        """
        clients = self._bucket_clients.get(bucket) or self.aws
        return clients.client(
            "s3", self.region_of(bucket), max(connections or 0, LISTING_CONNECTIONS)
        )

    def delete_tree(self, location: str) -> None:
        """Delete ``location`` and everything below it; nothing when it does not exist.

        On S3 the objects are listed and deleted with S3's own requests: pyarrow's deletes
        write an empty "folder" object in the parent after deleting (S3 has no folders, and
        pyarrow keeps the parent looking like one), which would be a write into the replica
        location by a step that only deletes, and refused on AWS to a role that may not
        write there.
        """
        parsed = urlparse(location)
        if parsed.scheme.lower() in S3_SCHEMES:
            self._delete_s3_tree(parsed.netloc, parsed.path.lstrip("/"))
            return
        filesystem, path = self.resolve(location)
        info = filesystem.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            filesystem.delete_dir(path)
        elif info.type == pafs.FileType.File:
            filesystem.delete_file(path)
        elif not is_local(filesystem):
            # S3 has no directories: objects below the prefix may exist without a marker.
            for entry in filesystem.get_file_info(
                pafs.FileSelector(path, recursive=True, allow_not_found=True)
            ):
                if entry.type == pafs.FileType.File:
                    filesystem.delete_file(entry.path)

    def _delete_s3_tree(self, bucket: str, key: str) -> None:
        client = self.s3_client(bucket)
        key = key.rstrip("/")
        keys = []
        if key:
            try:
                client.head_object(Bucket=bucket, Key=key)
                keys.append(key)
            except client.exceptions.ClientError as error:
                if refusal(error) is not Refusal.NOT_FOUND:
                    raise
        paginator = client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket, Prefix=f"{key}/" if key else ""):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        for start in range(0, len(keys), 1000):  # DeleteObjects takes 1000 keys at most
            batch = keys[start : start + 1000]
            reply = client.delete_objects(
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
            )
            errors = reply.get("Errors") or []
            if errors:
                first = errors[0]
                raise OSError(
                    f"could not delete s3://{bucket}/{first.get('Key')}: "
                    f"{first.get('Code')} {first.get('Message', '')}".rstrip()
                    + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
                )


# -- the process default ---------------------------------------------------------------------

_default: FileSystems | None = None
_default_lock = threading.Lock()


def _files_below(filesystem: pafs.FileSystem, path: str, base: str) -> list[FileEntry]:
    """The files below ``path`` (spelled ``base`` plus their path below it), by URI."""
    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    cut = len(path.rstrip("/")) + 1
    entries = [
        _entry(f"{base}/{info.path[cut:]}", info)
        for info in filesystem.get_file_info(selector)
        if info.type == pafs.FileType.File
    ]
    entries.sort(key=lambda entry: entry.uri)
    return entries


def _entry(uri: str, info: pafs.FileInfo) -> FileEntry:
    return FileEntry(uri, info.size, info.mtime_ns, str(info.mtime_ns))


def _ahead(items: Iterator[Any], limit: int) -> Iterator[Any]:
    """``items``, produced on a thread up to ``limit`` ahead of the reader.

    pyarrow lists without the GIL, so the next folders are listed while the reader works.
    The thread stops when the reader does; its error is raised to the reader.
    """
    ready: queue.Queue = queue.Queue(limit)
    stop = threading.Event()
    end = object()

    def hand(item: Any) -> None:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def produce() -> None:
        try:
            for item in items:
                hand([item])
                if stop.is_set():
                    return
            hand(end)
        except BaseException as error:  # handed to the reader, who raises it
            hand(error)

    thread = threading.Thread(target=produce, name="ferry-walk", daemon=True)
    thread.start()
    try:
        while (item := ready.get()) is not end:
            if isinstance(item, BaseException):
                raise item
            yield item[0]
    finally:
        stop.set()
        thread.join()


def bucket_region(uri: str) -> str | None:
    """The region of an ``s3://`` URI's bucket (looked up once per bucket, the default's)."""
    return default().region_of(urlparse(uri).netloc)


def default() -> FileSystems:
    """The process's file systems: what ``configure`` set, else AWS's own endpoints."""
    global _default
    with _default_lock:
        if _default is None:
            _default = FileSystems()
        return _default


def set_default(file_systems: FileSystems | None) -> FileSystems | None:
    """Make ``file_systems`` the process default (None: unconfigured); returns the one before."""
    global _default
    with _default_lock:
        previous, _default = _default, file_systems
        return previous


def configure(settings: S3Settings, aws: AwsClients | None = None) -> FileSystems:
    """Point the process default at ``settings``, with ``aws``' clients when given (an edge's
    own, so that the process holds one S3 client per region); a no-op (caches kept) when it
    already is."""
    global _default
    with _default_lock:
        if (
            _default is None
            or _default.settings != settings
            or (aws is not None and _default._aws is not aws)
        ):
            _default = FileSystems(settings, aws=aws)
        return _default


def reach_bucket_with(bucket: str, clients: AwsClients) -> None:
    """Reach ``bucket`` with ``clients`` (a role's) in the process default
    (``FileSystems.reach_bucket_with``)."""
    default().reach_bucket_with(bucket, clients)


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system and the path within it for ``uri`` (the process default's)."""
    return default().resolve(uri)


def open_output(uri: str) -> pafs.NativeFile:
    """A stream writing ``uri``; on a local file system its folder is created first."""
    return default().open_output(uri)


def write_bytes(uri: str, data: bytes) -> None:
    default().write_bytes(uri, data)


def read_bytes(uri: str, limit: int | None = None) -> bytes:
    """The file's bytes; at most ``limit`` of them when given (its start)."""
    return default().read_bytes(uri, limit)


def list_files(location: str) -> list[FileEntry]:
    """Every file below ``location`` (recursively); none when the location does not exist."""
    return default().list_files(location)


def iter_files(location: str) -> Iterator[FileEntry]:
    """Every file below ``location``, streamed; the files below one folder come together."""
    return default().iter_files(location)


def delete_tree(location: str) -> None:
    """Delete ``location`` and everything below it; nothing when it does not exist."""
    default().delete_tree(location)


def exists(uri: str) -> bool:
    """True when a file or folder is at ``uri``."""
    return default().exists(uri)


def list_folders(location: str) -> list[FileEntry]:
    """The folders directly below ``location``; none when it does not exist."""
    return default().list_folders(location)


#: How a file being written ends (``partial_name``).
PARTIAL = ".ferry-partial"


def partial_name(target: str) -> str:
    """Where the inline copier writes a local file before it renames it to ``target``:
    hidden (a leading dot, which Hive's and Spark's readers skip) in the same folder."""
    folder, _, name = target.rpartition("/")
    return f"{folder}/.{name}{PARTIAL}"
