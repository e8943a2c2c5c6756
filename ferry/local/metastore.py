"""Run a real Apache Hive Metastore 2.3 Thrift server from the jars that pyspark ships.

The server keeps its state in a Derby database under its own folder; two servers need two
folders. Readiness is a real Thrift call, not an open port: the port opens seconds before
the metastore can answer.

Two pieces of a production metastore are not in pyspark's jars, so Ferry's own (``java/``)
are compiled once against those jars and kept, keyed by their sources, next to the interpreter:

- the server's entry point (``Metastore.java``) first creates the tables of Hive's transaction
  handler, which a production metastore gets from Hive's schema scripts and DataNucleus does
  not create: without them every ``lock`` call fails, and Iceberg's HiveCatalog locks the
  table for each commit;
- the source metastore writes a notification log, as a production metastore with Hive's
  ``DbNotificationListener`` does. That listener is in Hive's hcatalog jar, so a stand-in
  (``NotificationLogListener.java``, writing Hive's own messages) takes its place.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ferry.core.errors import LocalRuntimeError
from ferry.local import processes

METASTORE_MAIN = "ferry.local.Metastore"
REQUIRED_JAVA = 17
JAVA_SOURCES = tuple(sorted((Path(__file__).parent / "java").glob("*.java")))
LISTENER_CLASS = "ferry.local.NotificationLogListener"
# Outside the repository and the runtime's state: one build serves every state folder.
JAR_CACHE = Path(sys.prefix) / "ferry-cache"


def pyspark_jars() -> Path:
    """The folder of jars inside the installed pyspark wheel (Hive 2.3 metastore among them)."""
    import pyspark  # imported here: only the local runtime needs it

    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("hive-metastore-*.jar")):
        raise LocalRuntimeError(f"no hive-metastore jar in {jars}; is pyspark installed fully?")
    return jars


def java_major_version(java: str = "java") -> int | None:
    """The major version of ``java`` on PATH, or None when there is none."""
    if shutil.which(java) is None:
        return None
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    # e.g. 'openjdk version "17.0.15" 2025-04-15'
    for token in out.split('"')[1:2]:
        head = token.split(".")[0]
        return int(head) if head.isdigit() else None
    return None


def java_problem() -> str | None:
    """What is wrong with the machine's Java for the metastores and Spark, or None."""
    major = java_major_version()
    if major is not None and major >= REQUIRED_JAVA:
        return None
    found = "no java on PATH" if major is None else f"java {major} found"
    return (
        f"{found}; Ferry's local Hive metastores and Spark need Java {REQUIRED_JAVA}+ "
        f"(e.g. apt-get install openjdk-{REQUIRED_JAVA}-jre-headless)"
    )


def require_java() -> None:
    problem = java_problem()
    if problem:
        raise LocalRuntimeError(problem)


def local_jar() -> Path:
    """Ferry's compiled metastore classes, built on first use for these sources and Hive."""
    hive = next(pyspark_jars().glob("hive-metastore-*.jar"))
    digest = hashlib.sha256(hive.name.encode())
    for source in JAVA_SOURCES:
        digest.update(source.name.encode() + source.read_bytes())
    jar = JAR_CACHE / f"ferry-metastore-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            raise LocalRuntimeError(
                f"no {tool} on PATH; Ferry's metastore classes (its entry point, the "
                f"notification log listener) are compiled at first start "
                f"(apt-get install openjdk-{REQUIRED_JAVA}-jdk-headless)"
            )
    JAR_CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=JAR_CACHE) as build:
        classes, built = Path(build) / "classes", Path(build) / jar.name
        for command in (
            [
                "javac",
                "-nowarn",
                "-d",
                str(classes),
                "-cp",
                f"{pyspark_jars()}/*",
                *map(str, JAVA_SOURCES),
            ],
            ["jar", "cf", str(built), "-C", str(classes), "."],
        ):
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode:
                raise LocalRuntimeError(f"{command[0]} failed: {result.stderr.strip()}")
        built.replace(jar)  # atomic: metastores started at once see a whole jar or none
    return jar


def metastore_command(
    home: Path,
    port: int,
    notification_log: bool = False,
    settings: Mapping[str, str] | None = None,
) -> list[str]:
    """The java command line of one metastore whose state lives in ``home``.

    ``settings`` are more Hive settings, e.g. a short time to live for the notification log.
    """
    warehouse = home / "warehouse"
    derby = f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
    properties = {
        "javax.jdo.option.ConnectionURL": derby,
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": warehouse.as_uri(),
        # Without these two the 2.3 server from pyspark's jars fails: the async logger needs
        # a jar pyspark does not ship, and BoneCP (the default pool) is not shipped either.
        "hive.async.log.enabled": "false",
        "datanucleus.connectionPoolingType": "HikariCP",
        # Derby without fsync: add_partitions of 1000 goes from ~20 s to ~5 s.
        "derby.system.durability": "test",
        "derby.stream.error.file": str(home / "derby.log"),
        "hive.log.dir": str(home / "logs"),
        "hive.metastore.event.db.notification.api.auth": "false",
    }
    classpath = [f"{pyspark_jars()}/*", str(local_jar())]
    if notification_log:
        # Transactional, as Hive means DbNotificationListener to be: an event is written in
        # the transaction of its change, so the log holds exactly the committed changes.
        properties["hive.metastore.transactional.event.listeners"] = LISTENER_CLASS
    properties.update(settings or {})
    return [
        "java",
        "-Xmx512m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # the metastore is I/O bound; quick JIT starts it faster
        *(f"-D{key}={value}" for key, value in properties.items()),
        "-cp",
        ":".join(classpath),
        METASTORE_MAIN,
        "-p",
        str(port),
        "--hiveconf",
        "hive.warehouse.subdir.inherit.perms=false",
    ]


def is_ready(port: int) -> bool:
    """True when the metastore on ``port`` answers ``get_all_databases``."""
    import logging

    from hmsclient import hmsclient

    # thrift logs every refused connection at ERROR; while polling, refusals are expected.
    logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)
    try:
        with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
            client.get_all_databases()
        return True
    except Exception:  # any transport or protocol error means "not yet"
        return False


def start_metastore(
    state_dir: Path,
    name: str,
    port: int,
    timeout: float = 90.0,
    notification_log: bool | None = None,
    settings: Mapping[str, str] | None = None,
) -> processes.ManagedProcess:
    """Start a metastore named ``name`` on ``port`` with its state in ``state_dir/name``.

    ``notification_log`` defaults to whether it is the source: Ferry reads changes from the
    source's log, and a replica's log would only cost each of its writes an insert.
    """
    require_java()
    if notification_log is None:
        notification_log = name == "source"
    if processes.port_in_use(port):
        raise LocalRuntimeError(f"port {port} is already in use; pick another with --{name}-port")
    home = state_dir / name
    (home / "warehouse").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    process = processes.start_process(
        state_dir,
        name,
        metastore_command(home, port, notification_log, settings),
        port,
        home / "metastore.log",
        cwd=home,  # Derby and Hive drop files in the working directory
    )
    processes.wait_until_ready(process, lambda: is_ready(port), timeout, f"{name} metastore")
    return process
