"""A throwaway PostgreSQL 15 cluster in a temp dir on a unix socket (tests and bench).

initdb refuses to run as root, so as root the cluster belongs to the ``postgres`` system
user (``runuser -u postgres --``); the temp dir is made readable by it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

BIN = Path(os.environ.get("SOOTHE_PG_BIN", "/usr/lib/postgresql/15/bin"))


def missing() -> str:
    """Why no cluster can be made here ('' when it can)."""
    if not (BIN / "initdb").exists() or not (BIN / "pg_ctl").exists():
        return f"no PostgreSQL binaries in {BIN} (set SOOTHE_PG_BIN)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: initdb refuses root"
    return ""


def _as_owner(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@dataclass
class Cluster:
    root: Path
    port: int

    @property
    def socket_dir(self) -> Path:
        return self.root

    def dsn(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@/{db}?host={self.root}&port={self.port}"

    def create_database(self, name: str | None = None) -> str:
        """A fresh database; returns its DSN."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        subprocess.run(
            [
                str(BIN / "createdb"),
                "-h",
                str(self.root),
                "-p",
                str(self.port),
                "-U",
                "postgres",
                name,
            ],
            check=True,
            capture_output=True,
        )
        return self.dsn(name)

    def stop(self) -> None:
        subprocess.run(
            _as_owner(
                [str(BIN / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop"]
            ),
            capture_output=True,
        )
        shutil.rmtree(self.root, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> Cluster:
    root = Path(tempfile.mkdtemp(prefix="soothe-pg-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    port = _free_port()
    subprocess.run(
        _as_owner(
            [
                str(BIN / "initdb"),
                "-D",
                str(root / "data"),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ]
        ),
        check=True,
        capture_output=True,
    )
    opts = f"-k {root} -p {port} -h '' -c fsync=off -c max_connections=200"
    subprocess.run(
        _as_owner(
            [
                str(BIN / "pg_ctl"),
                "-D",
                str(root / "data"),
                "-l",
                str(root / "log"),
                "-w",
                "-o",
                opts,
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    return Cluster(root, port)
