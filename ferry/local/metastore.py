"""Run a real Apache Hive Metastore 2.3 Thrift server from the jars that pyspark ships.

The server keeps its state in a Derby database under its own folder; two servers need two
folders. Readiness is a real Thrift call, not an open port: the port opens seconds before
the metastore can answer.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ferry.local import processes

METASTORE_MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"
REQUIRED_JAVA = 17


def pyspark_jars() -> Path:
    """The folder of jars inside the installed pyspark wheel (Hive 2.3 metastore among them)."""
    import pyspark  # imported here: only the local runtime needs it

    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("hive-metastore-*.jar")):
        raise RuntimeError(f"no hive-metastore jar in {jars}; is pyspark installed fully?")
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
        raise RuntimeError(problem)


def metastore_command(home: Path, port: int) -> list[str]:
    """The java command line of one metastore whose state lives in ``home``."""
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
    return [
        "java",
        "-Xmx512m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # the metastore is I/O bound; quick JIT starts it faster
        *(f"-D{key}={value}" for key, value in properties.items()),
        "-cp",
        f"{pyspark_jars()}/*",
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
    state_dir: Path, name: str, port: int, timeout: float = 90.0
) -> processes.ManagedProcess:
    """Start a metastore named ``name`` on ``port`` with its state in ``state_dir/name``."""
    require_java()
    if processes.port_in_use(port):
        raise RuntimeError(f"port {port} is already in use; pick another with --{name}-port")
    home = state_dir / name
    (home / "warehouse").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    process = processes.start_process(
        state_dir,
        name,
        metastore_command(home, port),
        port,
        home / "metastore.log",
        cwd=home,  # Derby and Hive drop files in the working directory
    )
    processes.wait_until_ready(process, lambda: is_ready(port), timeout, f"{name} metastore")
    return process
