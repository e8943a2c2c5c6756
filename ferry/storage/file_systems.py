"""The file systems of one process (``FileSystems``): local, S3 by bucket region, GCS, and
whatever else ``pyarrow.fs`` reaches (``hdfs://``).

``file://`` and ``s3://`` (also ``s3a://``, ``s3n://``) are built here; other schemes
(``hdfs://``, ``gs://``) go through ``pyarrow.fs.FileSystem.from_uri``.

S3 is regional, so a process may need several S3 file systems: a ``FileSystems`` object
looks each bucket's region up once (``HeadBucket``, whose answer names the region even on a
redirect or a refusal), caches it, and keeps one ``pyarrow.fs.S3FileSystem`` per region. An
inline copy from a bucket in us-east-1 to one in us-west-2 then reads and writes each
bucket through its own region.

Where S3 is (``S3Settings``) is decided at the program's edge and handed in. pyarrow cannot
take that over: in pyarrow 26 ``S3FileSystem()`` ignores ``AWS_ENDPOINT_URL`` (only
``FileSystem.from_uri`` honours it, and that takes none of the options below), and
``resolve_s3_region`` takes no endpoint, so it cannot reach an emulator; the region lookup
goes through a boto3 client.

Every boto3 client here comes from ``ferry.storage.aws.AwsClients`` and every pyarrow S3 file
system is given ``ferry.storage.retry_policy``'s attempts and timeouts
(``pyarrow_s3_policy``): one retry policy whichever library sends the request. What a
listing or a delete does with them is ``ferry.storage.listing``'s.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pyarrow import ArrowException
from pyarrow import fs as pafs

from ferry.core.errors import FileSystemUnavailableError
from ferry.storage import listing, retry_policy
from ferry.storage.listing import FileEntry
from ferry.storage.s3 import S3_SCHEMES

if TYPE_CHECKING:
    from ferry.storage.aws import AwsClients

#: Connections of the S3 clients that list locations (a plan lists on up to this many threads).
LISTING_CONNECTIONS = 64
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


def _on_s3(uri: str) -> bool:
    return urlparse(uri).scheme.lower() in S3_SCHEMES


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
        if _on_s3(location):
            return sorted(self._iter_s3(location), key=lambda entry: entry.uri)
        filesystem, path = self.resolve(location)
        # One call: pyarrow stats the files without the GIL, so listings run in parallel.
        return listing.files_below(filesystem, path, location.rstrip("/"))

    def iter_files(self, location: str) -> Iterator[FileEntry]:
        """Every file below ``location``, streamed: the files below any one folder come together.

        S3 gives its pages in key order. Elsewhere the folders directly below ``location``
        are listed whole, in name order, by a thread that runs a few batches ahead of the
        reader. Either way memory holds a page or a few folders' files, never the whole
        listing.
        """
        if _on_s3(location):
            yield from self._iter_s3(location)
            return
        filesystem, path = self.resolve(location)
        yield from listing.walk(filesystem, path, location)

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
        return listing.folders_below(filesystem, path, location)

    def _iter_s3(self, location: str) -> Iterator[FileEntry]:
        """S3's own listing (``listing.s3_objects_below``), with the bucket's client."""
        return listing.s3_objects_below(self.s3_client(urlparse(location).netloc), location)

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
            listing.delete_s3_objects(
                self.s3_client(parsed.netloc), parsed.netloc, parsed.path.lstrip("/")
            )
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
