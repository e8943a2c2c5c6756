"""The code AWS runs: wheels its runtimes load, within their limits, taken by the CDK without Docker.

The first run builds the Lambda bundle and the Spark job's environment (about a minute on a
cold pip cache); later runs reuse them from ``.bundles/``.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ferry.statemachine import ALL_FUNCTIONS
from infra.bundling import (
    EMR_ARCHITECTURE,
    EMR_ENVIRONMENT,
    EMR_PYTHON,
    EMR_RELEASE_LABEL,
    EMR_SPARK_VERSION,
    LAMBDA_ARCHITECTURE,
    LAMBDA_RUNTIME,
    ROOT,
    SPARK_JOB_ENTRY_POINT,
    Target,
    build_emr_archive,
    build_lambda_bundle,
    tree_size,
)

pytestmark = pytest.mark.infra

#: What AWS runs the code on, as AWS documents it (stated here, apart from infra/bundling.py):
#: Lambda's python3.12 and the release emr-spark-8.0.0 both run on Amazon Linux 2023.
LAMBDA = Target("Lambda python3.12", python=(3, 12), glibc=(2, 34), machine="x86_64")
EMR = Target("EMR emr-spark-8.0.0, Python 3.12", python=(3, 12), glibc=(2, 34), machine="x86_64")

MIB = 1024 * 1024
#: Lambda's "250 MB" for a function and its layers, unzipped, as its error message states it.
LAMBDA_UNZIPPED_LIMIT = 262_144_000
#: Every driver and executor downloads and unpacks the environment before it starts, so its
#: size is start-up time. pyarrow, its one dependency, is ~55 MB packed and ~170 MB unpacked:
#: these bounds leave room for one more ordinary dependency, and fail when something big slips
#: in (PySpark itself is ~430 MB; numpy with pandas ~100 MB unpacked).
EMR_ARCHIVE_LIMIT = 100 * MIB
EMR_UNPACKED_LIMIT = 250 * MIB
#: glibc of the manylinux tags that predate PEP 600.
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


@pytest.fixture(scope="module")
def lambda_bundle():
    return build_lambda_bundle()


@pytest.fixture(scope="module")
def emr_archive():
    return build_emr_archive()


@pytest.fixture(scope="module")
def environment(emr_archive, tmp_path_factory):
    """The packed environment as EMR unpacks it (Hadoop's unTar runs ``tar``)."""
    folder = tmp_path_factory.mktemp(EMR_ENVIRONMENT)
    subprocess.run(["tar", "-xzf", str(emr_archive), "-C", str(folder)], check=True)
    return folder


def loadable(tag, target: Target) -> bool:
    """Whether a wheel tag (``cp312-cp312-manylinux_2_28_x86_64``) loads on ``target``."""
    interpreter, abi, platform = tag.split("-")
    major, minor = target.python
    if abi == "abi3":
        stable = re.fullmatch(rf"cp{major}(\d+)", interpreter)
        python_fits = bool(stable) and int(stable.group(1)) <= minor
    else:
        python_fits = interpreter in {f"py{major}", f"py{major}{minor}", f"cp{major}{minor}"} and (
            abi in {"none", f"cp{major}{minor}"}
        )
    return python_fits and platform_fits(platform, target)


def platform_fits(platform: str, target: Target) -> bool:
    if platform == "any":
        return True
    modern = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", platform)
    if modern:
        glibc, machine = (int(modern.group(1)), int(modern.group(2))), modern.group(3)
    else:
        legacy, _, machine = platform.partition("_")
        if legacy not in LEGACY_MANYLINUX:
            return False
        glibc = LEGACY_MANYLINUX[legacy]
    return machine == target.machine and glibc <= target.glibc


def wheel_tags(root: Path) -> dict[str, list[str]]:
    """The tags of every installed distribution below ``root``, from its ``WHEEL`` file."""
    return {
        wheel.parent.name: [
            line.removeprefix("Tag:").strip()
            for line in wheel.read_text().splitlines()
            if line.startswith("Tag:")
        ]
        for wheel in sorted(root.rglob("*.dist-info/WHEEL"))
    }


def unloadable(root: Path, target: Target) -> dict[str, list[str]]:
    return {
        name: tags
        for name, tags in wheel_tags(root).items()
        if not any(loadable(tag, target) for tag in tags)
    }


def foreign_extensions(root: Path, target: Target) -> list[str]:
    """Extension modules built for another Python than the target's."""
    own = "cpython-{}{}-".format(*target.python)
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*.cpython-*.so") if own not in path.name
    )


def find_python(version: tuple[int, int]) -> str | None:
    """An interpreter of ``version`` on this machine: on the PATH, or one pyenv installed."""
    name = "python{}.{}".format(*version)
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [shutil.which(name)]
    candidates += sorted(pyenv_root.glob("versions/{}.{}.*/bin/{}".format(*version, name)))
    # A pyenv shim is on the PATH even when no installed version provides the command.
    return next((str(path) for path in candidates if path and is_python(path, version)), None)


def is_python(path, version: tuple[int, int]) -> bool:
    """Whether ``path`` runs and is Python ``version``."""
    probe = [str(path), "-c", "import sys; print(*sys.version_info[:2])"]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, check=False)
    except OSError:
        return False
    return result.returncode == 0 and result.stdout.split() == [str(part) for part in version]


def isolated_environment() -> dict[str, str]:
    """No PYTHONPATH, no AWS credentials: only what the bundle brings."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def test_the_deployment_targets_the_runtimes_these_tests_check():
    assert (LAMBDA_RUNTIME.name, LAMBDA_ARCHITECTURE.name) == ("python3.12", "x86_64")
    assert (EMR_RELEASE_LABEL, EMR_SPARK_VERSION) == ("emr-spark-8.0.0", "4.0.2")
    assert (EMR_ARCHITECTURE, EMR_PYTHON) == ("X86_64", "/usr/bin/python3.12")


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("cp312-cp312-manylinux_2_28_x86_64", True),
        ("cp312-cp312-manylinux_2_17_x86_64", True),
        ("cp38-abi3-manylinux2014_x86_64", True),
        ("py3-none-any", True),
        ("cp312-cp312-manylinux_2_35_x86_64", False),  # needs a newer glibc
        ("cp311-cp311-manylinux_2_28_x86_64", False),  # another Python
        ("cp312-cp312-manylinux_2_28_aarch64", False),  # another machine
        ("cp312-cp312-musllinux_1_2_x86_64", False),
        ("cp312-cp312-linux_x86_64", False),  # built here, not portable
    ],
)
def test_a_tag_is_loadable_only_where_python_glibc_and_machine_fit(tag, expected):
    assert loadable(tag, LAMBDA) is expected


# The Lambda bundle.


def test_the_lambda_bundle_holds_only_wheels_python_3_12_on_amazon_linux_2023_loads(
    lambda_bundle,
):
    tags = wheel_tags(lambda_bundle)

    assert unloadable(lambda_bundle, LAMBDA) == {}
    assert foreign_extensions(lambda_bundle, LAMBDA) == []
    # Not vacuous: the compiled dependencies are there, as manylinux wheels.
    assert "cp312-cp312-manylinux_2_28_x86_64" in tags["pyarrow-26.0.1.dist-info"]
    assert any(name.startswith("pydantic_core-") for name in tags)
    assert any(name.startswith("thrift-") for name in tags)


def test_the_lambda_bundle_fits_lambdas_unzipped_limit(lambda_bundle):
    size = tree_size(lambda_bundle)
    print(f"Lambda bundle: {size / MIB:.1f} MiB unzipped, limit {LAMBDA_UNZIPPED_LIMIT / MIB} MiB")

    assert size < LAMBDA_UNZIPPED_LIMIT
    # With room to spare for a dependency's next release (pyiceberg's alone grew it 40 MiB).
    assert size < LAMBDA_UNZIPPED_LIMIT - 25 * MIB
    assert {path.name for path in lambda_bundle.iterdir()} >= {
        "ferry",
        "lambdas",
        "pyarrow",
        "pyiceberg",
        "zstandard",
        "pyroaring",
    }
    assert not (lambda_bundle / "pyarrow" / "include").exists()
    assert not (lambda_bundle / "infra").exists() and not (lambda_bundle / "tests").exists()
    # Byte code compiled at build time would be this machine's Python's (the wheels' own is 3.12).
    assert {path.name.split(".")[1] for path in lambda_bundle.rglob("*.pyc")} <= {"cpython-312"}


LOAD_HANDLERS = """
import importlib, json, pkgutil, sys
bundle, handlers = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, bundle)
import lambdas
modules = sorted(f"lambdas.{module.name}" for module in pkgutil.iter_modules(lambdas.__path__))
for name in modules:
    importlib.import_module(name)
for handler in handlers:
    module, function = handler.rsplit(".", 1)
    assert callable(getattr(importlib.import_module(module), function)), handler
import pyarrow.fs, pydantic_core
from thrift.protocol import fastbinary
# The Iceberg path as the steps run it: pyiceberg's Avro, manifests and pyarrow FileIO, and
# its compiled dependencies (zstandard for zstd Avro and Parquet, pyroaring, mmh3).
import ferry.iceberg.table_replication, pyiceberg.io.pyarrow, zstandard, pyroaring, mmh3
import ferry.states.plan, ferry.states.commit, ferry.states.abort, ferry.states.summarize
import pyarrow.dataset, pyarrow.compute, pyarrow.parquet, pyarrow.substrait
# An Iceberg replica's registration uses pyiceberg's Hive and Glue catalogs' converters
# (ferry.iceberg.registration imports them when it registers one).
from pyiceberg.catalog.hive import SchemaToHiveConverter
from pyiceberg.catalog.glue import _to_columns
io = pyiceberg.io.pyarrow.PyArrowFileIO()
with io.new_output(sys.argv[3] + "/probe.bin").create() as out:
    out.write(zstandard.ZstdCompressor().compress(b"ferry"))
with io.new_input(sys.argv[3] + "/probe.bin").open() as probe:
    assert zstandard.ZstdDecompressor().decompress(probe.read()) == b"ferry"
try:
    import pyarrow.flight
    flight = True
except ImportError:
    flight = False
outside = [
    name for name, module in sys.modules.items()
    if name.split(".")[0] in {
        "pyarrow", "pydantic_core", "thrift", "aws_xray_sdk", "ferry", "pyiceberg", "zstandard",
        "pyroaring",
    }
    and not (getattr(module, "__file__", None) or bundle).startswith(bundle)
]
print(json.dumps({"modules": modules, "outside": outside, "flight": flight}))
"""


def test_every_handler_and_the_iceberg_path_import_from_the_bundle_on_python_3_12(
    lambda_bundle, tmp_path
):
    python = find_python(LAMBDA.python)
    if python is None:
        pytest.skip("no Python 3.12 on this machine (PATH, pyenv) to import the handlers with")
    handlers = json.dumps(sorted(ALL_FUNCTIONS.values()))

    # -I -S: no PYTHONPATH, no user or site packages of this machine's 3.12; -B: the cached
    # bundle stays as built.
    result = subprocess.run(
        [
            python,
            "-I",
            "-S",
            "-B",
            "-c",
            LOAD_HANDLERS,
            str(lambda_bundle),
            handlers,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=isolated_environment(),
        check=False,
    )

    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    expected = sorted(f"lambdas.{path.stem}" for path in (ROOT / "lambdas").glob("[!_]*.py"))
    assert loaded["modules"] == expected
    assert loaded["outside"] == []
    # Left out of the bundle (infra/bundling.py, LAMBDA_LEFT_OUT), and nothing needed it.
    assert loaded["flight"] is False


# The Spark job's environment.


def test_the_spark_environment_holds_only_wheels_the_releases_python_3_12_loads(environment):
    site_packages = environment / "lib" / "python3.12" / "site-packages"

    assert unloadable(environment, EMR) == {}
    assert foreign_extensions(environment, EMR) == []
    assert (
        "cp312-cp312-manylinux_2_28_x86_64" in wheel_tags(environment)["pyarrow-26.0.1.dist-info"]
    )
    assert (site_packages / "ferry" / "copying" / "copier.py").is_file()
    # What the job imports on S3 paths: the archive's interpreter has nothing else.
    for package in ("boto3", "botocore", "s3transfer"):
        assert (site_packages / package / "__init__.py").is_file(), package
    # The release brings its own PySpark; a second one would shadow it.
    assert not (site_packages / "pyspark").exists()


def test_the_spark_environment_runs_the_images_interpreter(environment):
    link, hops = environment / "bin" / "python", 0
    while link.is_relative_to(environment) and link.is_symlink() and hops < 5:
        link, hops = link.parent / os.readlink(link), hops + 1

    assert str(link) == EMR_PYTHON
    config = dict(
        line.split(" = ", 1) for line in (environment / "pyvenv.cfg").read_text().splitlines()
    )
    assert config["home"] == os.path.dirname(EMR_PYTHON)


def test_the_spark_environment_stays_small(emr_archive, environment):
    packed, unpacked = emr_archive.stat().st_size, tree_size(environment)
    print(f"Spark environment: {packed / MIB:.1f} MiB packed, {unpacked / MIB:.1f} MiB unpacked")

    assert packed < EMR_ARCHIVE_LIMIT
    assert unpacked < EMR_UNPACKED_LIMIT


def test_the_copy_job_starts_in_the_spark_environment(environment, tmp_path):
    if not is_python(EMR_PYTHON, EMR.python):
        # As the local runtime runs the job: the environment's interpreter link pointed at
        # this machine's Python of the release's version (the e2e suite runs the whole job).
        from ferry.local.emulator_emr_job_runner import _interpreter_here

        copied = tmp_path / "environment"
        shutil.copytree(environment, copied, symlinks=True)
        _interpreter_here(copied)
        environment = copied
    python = str(environment / "bin" / "python")
    # As spark-submit starts it: the entry point on its own, everything else from the archive.
    entry_point = shutil.copy(SPARK_JOB_ENTRY_POINT, tmp_path)

    started = subprocess.run(
        [python, entry_point, "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=isolated_environment(),
        check=False,
    )
    where = subprocess.run(
        [
            python,
            "-c",
            # The manifest rewrites of an Iceberg table: pyiceberg's Avro and writers.
            "import sys, pyarrow, ferry, boto3, botocore, pyiceberg, ferry.iceberg.pipeline; "
            "print(sys.prefix, pyarrow.__file__, ferry.__file__, boto3.__file__, "
            "pyiceberg.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=isolated_environment(),
        check=True,
    )

    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("usage: ferry-copy-files")
    prefix, *modules = where.stdout.split()
    assert Path(prefix) == environment
    assert all(Path(module).is_relative_to(environment) for module in modules)


# The CDK takes both without Docker, AWS credentials or a network.

SYNTH = """
import sys
import aws_cdk as cdk
from aws_cdk import aws_iam as iam, aws_lambda
from infra.assets import SparkJobAssets, lambda_code
from infra.bundling import LAMBDA_ARCHITECTURE, LAMBDA_RUNTIME

app = cdk.App(outdir=sys.argv[1])
stack = cdk.Stack(app, "Bundles")
code = lambda_code()
for name in ("Plan", "Commit"):
    aws_lambda.Function(
        stack, name, code=code, runtime=LAMBDA_RUNTIME, architecture=LAMBDA_ARCHITECTURE,
        handler=f"lambdas.{name.lower()}.handler",
    )
job = SparkJobAssets(stack, "Job")
job.grant_read(iam.Role(stack, "JobRole", assumed_by=iam.ServicePrincipal("emr-serverless.amazonaws.com")))
cdk.CfnOutput(stack, "EntryPoint", value=job.entry_point_uri)
cdk.CfnOutput(stack, "SubmitParameters", value=job.submit_parameters())
app.synth()
"""


def synthesize(outdir: Path) -> dict:
    environment = {
        **isolated_environment(),
        "HOME": os.environ.get("HOME", "/root"),
        "PYTHONPATH": str(ROOT),
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        # Were the CDK to fall back to Docker, it would run this and fail.
        "CDK_DOCKER": shutil.which("false") or "/bin/false",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    result = subprocess.run(
        [sys.executable, "-c", SYNTH, str(outdir)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads((outdir / "Bundles.template.json").read_text())


def test_the_cdk_stages_both_bundles_reproducibly_without_docker(lambda_bundle, tmp_path):
    template = synthesize(tmp_path / "first")
    again = synthesize(tmp_path / "second")

    assert again == template
    functions = [
        resource["Properties"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    ]
    assert {function["Runtime"] for function in functions} == {"python3.12"}
    assert {tuple(function["Architectures"]) for function in functions} == {("x86_64",)}
    # One code asset for every function, staged from the cached bundle.
    (key,) = {function["Code"]["S3Key"] for function in functions}
    staged = tmp_path / "first" / f"asset.{key.removesuffix('.zip')}"
    assert (staged / "lambdas" / "plan.py").read_bytes() == (
        ROOT / "lambdas" / "plan.py"
    ).read_bytes()
    assert (staged / "pyarrow").is_dir()
    parameters = rendered(template["Outputs"]["SubmitParameters"]["Value"])
    # Spark unpacks an archive by its name: .tgz (a .tar.gz would reach S3 as <hash>.gz).
    assert re.search(r"--conf spark.archives=s3://\S+/[0-9a-f]{64}\.tgz#environment ", parameters)
    assert "spark.emr-serverless.executorEnv.PYSPARK_PYTHON=./environment/bin/python" in parameters


def rendered(value) -> str:
    """A template value as text, with each ``Fn::Sub`` left as its pattern."""
    if isinstance(value, str):
        return value
    if "Fn::Sub" in value:
        return value["Fn::Sub"]
    separator, parts = value["Fn::Join"]
    return separator.join(rendered(part) for part in parts)
