"""What the Lambda functions and the Spark job run with on AWS, built without Docker.

Both are filled from platform wheels only (``pip install --only-binary=:all: --platform ...``)
for the runtime they go to, never from what this machine happens to have:

- **The Lambda bundle** (``build_lambda_bundle``): a folder with Ferry's runtime dependencies
  (``pyproject.toml``'s ``dependencies``, pinned by ``constraints.txt``) and the source
  packages ``ferry/`` and ``lambdas/``; one code asset for every function.
- **The Spark job's environment** (``build_emr_archive``): a virtual environment of the
  Spark job's dependencies and ``ferry/``, packed with venv-pack into a ``.tgz`` that EMR
  Serverless unpacks beside the driver and every executor (``spark.archives=...#environment``).
  PySpark is not in it: the release provides its own.

Both builds take a while (pip installs some 200 MB of wheels), so each is cached under
``.bundles/``, keyed by a hash of everything that goes in (constraints, dependencies, target
platform, the source files, and this module); the same key is the CDK asset's hash, so a synth
is reproducible and an unchanged bundle is never uploaded twice. ``infra/assets.py`` hands
them to the CDK through local bundling, which always succeeds, so Docker is never started.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from aws_cdk import (
    aws_lambda,
)

ROOT = Path(__file__).resolve().parent.parent
#: Built bundles, one per kind, named by their key (the folder is in .gitignore).
CACHE_DIR = ROOT / ".bundles"

#: The glibc of Amazon Linux 2023, which Lambda's python3.12 and EMR's emr-spark-8.0.0 run on.
AMAZON_LINUX_2023_GLIBC = (2, 34)

#: Python 3.12 runs on Amazon Linux 2023. Not python3.11: it runs on Amazon Linux 2, whose glibc
#: 2.26 is older than the manylinux_2_28 that pyarrow (>= 21) needs.
LAMBDA_RUNTIME = aws_lambda.Runtime.PYTHON_3_12
#: The wheels are x86_64 ones; an arm64 function would need a bundle of its own.
LAMBDA_ARCHITECTURE = aws_lambda.Architecture.X86_64
#: The AWS runtime for Apache Spark 4.0 (Amazon Linux 2023, Java 17): the release closest to the
#: PySpark Ferry develops with whose Pythons (3.11, 3.12, 3.13) include Ferry's 3.11. The emr-7.x
#: releases run Spark 3.5 with Python 3.9 by default.
EMR_RELEASE_LABEL = "emr-spark-8.0.0"
#: The Spark that release runs (4.0.2-amzn-0); the copy job's tests also run on this PySpark.
#: (The Makefile reads this line.)
EMR_SPARK_VERSION = "4.0.2"
#: The EMR Serverless application's architecture the environment's wheels are built for.
EMR_ARCHITECTURE = "X86_64"
#: The release's Python the job runs on; the packed environment's ``bin/python`` points at it.
EMR_PYTHON_VERSION = (3, 12)
EMR_PYTHON = "/usr/bin/python{}.{}".format(*EMR_PYTHON_VERSION)
#: Where ``spark.archives`` unpacks the environment, relative to the driver and executors.
EMR_ENVIRONMENT = "environment"

#: The source packages in the Lambda bundle besides the dependencies (not infra/, tests/, ...).
LAMBDA_PACKAGES = ("ferry", "lambdas")
#: What the Lambda bundle leaves out of its dependencies (globs below the bundle): parts no
#: function loads, so that Ferry with pyiceberg stays under Lambda's 250 MB unzipped.
#: pyarrow's Arrow Flight (RPC; ~34 MB: ``pyarrow.flight`` no longer imports), its C++ headers
#: and Cython sources (for building extensions against it), its own tests, and the
#: unversioned and fully versioned copies of its Python glue libraries: the extension modules
#: load the ``.so.<major>`` ones only (the wheel has no symbolic links, so each is a full copy).
#: Substrait, Acero and Dataset stay: ``pyarrow.lib`` itself links them. Nothing of Ferry or of
#: the parts of pyiceberg Ferry uses imports what is left out; tests/infra/test_bundles.py
#: imports every handler and the Iceberg path from the built bundle to prove it.
LAMBDA_LEFT_OUT = (
    "pyarrow/libarrow_flight.so.*",
    "pyarrow/libarrow_python_flight.so*",
    "pyarrow/_flight.*.so",
    "pyarrow/include",
    "pyarrow/src",
    "pyarrow/tests",
    "pyarrow/_pyarrow_cpp_tests.*",
    "pyarrow/*.pxd",
    "pyarrow/*.pyx",
    "pyarrow/includes",
    "pyarrow/libarrow_python.so",
    "pyarrow/libarrow_python.so.*.*.*",
    "pyarrow/libarrow_python_parquet_encryption.so",
    "pyarrow/libarrow_python_parquet_encryption.so.*.*.*",
)
#: The packages the Spark job imports besides ``ferry``: pyarrow for its file systems, boto3
#: (and its botocore) for its S3 requests, pyiceberg (and its pydantic) for the manifest
#: rewrites of an Iceberg table. EMR Serverless runs the job with the archive's own
#: interpreter, so whatever the job imports must be in the archive; the e2e suite runs the
#: job from the archive to prove it.
SPARK_JOB_DEPENDENCIES = ("pyarrow", "boto3", "pyiceberg")
SPARK_JOB_ENTRY_POINT = ROOT / "emr_jobs" / "copy_files.py"


def _python_version(runtime_name: str) -> tuple[int, int]:
    major, minor = runtime_name.removeprefix("python").split(".")
    return int(major), int(minor)


class BundleError(RuntimeError):
    """A bundle could not be built (pip found no fitting wheel, the network was down, ...)."""


@dataclass(frozen=True)
class Target:
    """A runtime that Python code is bundled for: its interpreter, glibc and machine."""

    name: str
    python: tuple[int, int]
    glibc: tuple[int, int]
    #: As manylinux tags name it (``x86_64``, ``aarch64``).
    machine: str

    def platforms(self) -> list[str]:
        """Every manylinux platform tag this runtime loads, newest first.

        pip does not count older ``manylinux_2_x`` tags as compatible with a ``--platform``
        it is given, so each one is named (``manylinux2014`` brings ``2010`` and ``1``).
        """
        major, newest = self.glibc
        tags = [f"manylinux_{major}_{minor}_{self.machine}" for minor in range(newest, 16, -1)]
        return [*tags, f"manylinux2014_{self.machine}"]

    def pip_options(self) -> list[str]:
        platforms = [option for tag in self.platforms() for option in ("--platform", tag)]
        return [
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            "{}.{}".format(*self.python),
            *platforms,
        ]

    def __str__(self) -> str:
        return "{} (Python {}.{}, glibc {}.{}, {})".format(
            self.name, *self.python, *self.glibc, self.machine
        )


LAMBDA_TARGET = Target(
    f"Lambda {LAMBDA_RUNTIME.name}",
    python=_python_version(LAMBDA_RUNTIME.name),
    glibc=AMAZON_LINUX_2023_GLIBC,
    machine=LAMBDA_ARCHITECTURE.name,
)
EMR_TARGET = Target(
    f"EMR Serverless {EMR_RELEASE_LABEL}",
    python=EMR_PYTHON_VERSION,
    glibc=AMAZON_LINUX_2023_GLIBC,
    machine=EMR_ARCHITECTURE.lower(),
)


def runtime_requirements() -> list[str]:
    """Ferry's runtime dependencies as ``pyproject.toml`` pins them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def spark_job_requirements() -> list[str]:
    """The pinned requirements of the packages the Spark job needs (``SPARK_JOB_DEPENDENCIES``)."""
    wanted = set(SPARK_JOB_DEPENDENCIES)
    return [
        requirement
        for requirement in runtime_requirements()
        if _requirement_name(requirement) in wanted
    ]


def lambda_bundle_key() -> str:
    """The hash of everything the Lambda bundle is built from (its cache key and asset hash)."""
    return _key("lambda", LAMBDA_TARGET, runtime_requirements(), LAMBDA_PACKAGES)


def emr_archive_key() -> str:
    """The hash of everything the Spark job's environment is built from."""
    extra = (EMR_PYTHON, metadata.version("venv-pack"))
    return _key("emr", EMR_TARGET, spark_job_requirements(), ("ferry",), extra)


def build_lambda_bundle(cache_dir: Path = CACHE_DIR) -> Path:
    """The folder of the Lambda functions' code: dependencies, ``ferry/`` and ``lambdas/``.

    Built once per key (``lambda_bundle_key``); later calls return the cached folder.
    """
    return _cached(cache_dir, f"lambda-{lambda_bundle_key()}", LAMBDA_TARGET, _build_lambda)


def build_emr_archive(cache_dir: Path = CACHE_DIR) -> Path:
    """The gzipped tar of the Spark job's virtual environment, for ``spark.archives``.

    Named ``.tgz``, not ``.tar.gz``: the CDK names the S3 object by the last suffix only
    (``<hash>.gz``), and Spark unpacks an archive by its name, so a ``.gz`` is not unpacked.
    Built once per key (``emr_archive_key``); later calls return the cached file.
    """
    name = f"emr-{emr_archive_key()}.tgz"
    return _cached(cache_dir, name, EMR_TARGET, _build_emr_archive)


def tree_size(path: Path) -> int:
    """Bytes of the regular files below ``path`` (what Lambda counts as unzipped size).

    Symbolic links count as nothing: the environment's ``bin/python`` is the image's.
    """
    return sum(
        file.stat().st_size for file in path.rglob("*") if file.is_file() and not file.is_symlink()
    )


def _build_lambda(folder: Path) -> None:
    _pip_install(LAMBDA_TARGET, runtime_requirements(), folder)
    _leave_out(folder, LAMBDA_LEFT_OUT)
    for package in LAMBDA_PACKAGES:
        _copy_sources(ROOT / package, folder / package)


def _leave_out(folder: Path, patterns: tuple[str, ...]) -> None:
    """Remove what ``patterns`` (globs below ``folder``) match; a pattern matching nothing is
    an error, so that a new wheel's layout is noticed rather than silently kept whole."""
    for pattern in patterns:
        matches = list(folder.glob(pattern))
        if not matches:
            raise BundleError(f"nothing in the bundle matches {pattern!r} to leave out")
        for path in matches:
            _remove(path)


def _build_emr_archive(archive: Path) -> None:
    import venv_pack

    environment = archive.parent / f"{archive.name}.environment"
    try:
        site_packages = _virtual_environment(environment, EMR_PYTHON_VERSION, EMR_PYTHON)
        _pip_install(EMR_TARGET, spark_job_requirements(), site_packages)
        _copy_sources(ROOT / "ferry", site_packages / "ferry")
        venv_pack.pack(prefix=str(environment), output=str(archive), format="tar.gz")
        archive.chmod(0o644)  # venv-pack writes it readable by its owner only
    finally:
        shutil.rmtree(environment, ignore_errors=True)


def _virtual_environment(folder: Path, python: tuple[int, int], interpreter: str) -> Path:
    """An empty virtual environment for ``interpreter`` on another machine; its site-packages.

    Laid out by hand, as ``python -m venv`` would on the image, so that it points at the image's
    interpreter from the start: venv-pack's ``--python-prefix`` would rewrite a link to
    ``.../bin/python3.11`` into ``/usr/bin/python3.113.11`` (venv-pack issue #14).
    """
    version = "python{}.{}".format(*python)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text(
        f"home = {os.path.dirname(interpreter)}\n"
        "include-system-site-packages = false\n"
        "version = {}.{}\n".format(*python)
    )
    (bin_dir / version).symlink_to(interpreter)
    for alias in ("python", f"python{python[0]}"):
        (bin_dir / alias).symlink_to(version)
    site_packages = folder / "lib" / version / "site-packages"
    site_packages.mkdir(parents=True)
    return site_packages


def _pip_install(target: Target, requirements: list[str], folder: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        # Byte code compiled here would be for this interpreter, not the runtime's.
        "--no-compile",
        *target.pip_options(),
        "--target",
        str(folder),
        "--constraint",
        str(ROOT / "constraints.txt"),
        *requirements,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if "is ignored" not in line]
        details = "\n".join(lines[-15:])
        raise BundleError(f"pip could not install the dependencies for {target}:\n{details}")
    # Console scripts carry this machine's interpreter in their first line; nothing runs them.
    shutil.rmtree(folder / "bin", ignore_errors=True)


def _copy_sources(source: Path, destination: Path) -> None:
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*_NOT_SOURCES, "*.pyc"))


#: Folders below the source packages that are not part of them: byte code, and the local
#: runtime's Node.js packages (its IAM simulator; a development tool, not deployed code).
_NOT_SOURCES = ("__pycache__", "node_modules")


def _source_files(package: str) -> Iterator[Path]:
    for path in sorted((ROOT / package).rglob("*")):
        if path.is_file() and not set(_NOT_SOURCES) & set(path.parts) and path.suffix != ".pyc":
            yield path


def _key(
    kind: str,
    target: Target,
    requirements: list[str],
    packages: tuple[str, ...],
    extra: tuple[str, ...] = (),
) -> str:
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)

    add("kind", kind.encode())
    add("target", repr(target).encode())
    add("options", " ".join(target.pip_options()).encode())
    add("requirements", "\n".join(sorted(requirements)).encode())
    add("constraints", (ROOT / "constraints.txt").read_bytes())
    add("pip", metadata.version("pip").encode())
    add("builder", Path(__file__).read_bytes())
    for value in extra:
        add("extra", value.encode())
    for package in packages:
        for path in _source_files(package):
            add(path.relative_to(ROOT).as_posix(), path.read_bytes())
    return digest.hexdigest()[:32]


def _cached(cache_dir: Path, name: str, target: Target, build: Callable[[Path], None]) -> Path:
    """``cache_dir/name``, built by ``build`` unless it is there already.

    The build goes to a temporary name and is renamed when complete, so an interrupted build
    leaves no half bundle behind. Older bundles of the same kind are removed.
    """
    final = cache_dir / name
    if final.exists():
        return final
    kind = name.split("-", 1)[0]
    print(f"ferry: building the dependencies for {target} into {final} ...", file=sys.stderr)
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = cache_dir / f".{name}.{uuid.uuid4().hex[:8]}.building"
    try:
        build(building)
        if not final.exists():  # another process may have finished the same build first
            building.rename(final)
    finally:
        _remove(building)
    for stale in cache_dir.glob(f"{kind}-*"):
        if stale.name != name:
            _remove(stale)
    return final


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _requirement_name(requirement: str) -> str:
    name = requirement
    for separator in ("[", "=", "<", ">", "!", "~", ";", " "):
        name = name.split(separator, 1)[0]
    return name.strip().lower().replace("_", "-")
