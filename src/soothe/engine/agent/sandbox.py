"""Confinement for run_shell: read the system, write only the workspace and a private temp.

Two mechanisms, the first available wins:

- ``bwrap`` (bubblewrap): the command runs in a mount namespace where ``/`` is bound
  read-only, the workspace read-write, ``/tmp`` is a private tmpfs, ``/dev`` and ``/proc``
  are fresh; with ``--unshare-net`` (the default) it has no network at all, only its own
  loopback. It has its own PID namespace (``--unshare-pid``): it sees and can signal
  only its own processes, and when its shell exits the kernel kills everything left in
  the namespace, ``setsid`` or double fork or not; ``--die-with-parent`` does the same
  when soothe dies (kill -9 included).
- Linux Landlock (kernel 5.13+, through ctypes): the process restricts itself before
  ``exec``: writes (create, remove, write, rename, truncate, make devices) are refused
  outside the workspace, a private temp dir and ``/dev``; with ABI 4+ TCP connect and
  bind are refused too (UDP and unix sockets are NOT covered by Landlock).
  With no PID namespace, the shell runs under a supervisor (``reaper.py``: a child
  subreaper with a parent-death signal) that kills every process the command started
  when the shell exits, when it is told to stop, and when soothe dies. The same
  supervisor runs commands when there is no sandbox at all.

When neither is available ``detect()`` says ``none`` and the approval gate asks for
every command even with ``--yes`` (``approval.py``).

Reads are not confined: a command can read anything the user can (and print it).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Kind = Literal["bwrap", "landlock", "none"]

# Landlock ABI (linux/landlock.h)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2
_PR_SET_NO_NEW_PRIVS = 38
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_REMOVE_DIR = 1 << 4
_FS_REMOVE_FILE = 1 << 5
_FS_MAKE_CHAR = 1 << 6
_FS_MAKE_DIR = 1 << 7
_FS_MAKE_REG = 1 << 8
_FS_MAKE_SOCK = 1 << 9
_FS_MAKE_FIFO = 1 << 10
_FS_MAKE_BLOCK = 1 << 11
_FS_MAKE_SYM = 1 << 12
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_FS_IOCTL_DEV = 1 << 15  # ABI 5
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Confinement:
    kind: Kind
    detail: str

    @property
    def active(self) -> bool:
        return self.kind != "none"

    def describe(self) -> str:
        return f"{self.kind} ({self.detail})"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    try:
        abi = int(_libc().syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(abi, 0)


def _bwrap_works(path: str) -> str | None:
    """None when bwrap can build the namespaces we use here; else why not."""
    try:
        proc = subprocess.run(
            [
                path,
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--unshare-net",
                "--unshare-pid",
                "--",
                "true",
            ],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {proc.returncode}"
    return None


@functools.cache
def detect() -> Confinement:
    """Which confinement run_shell gets on this machine (checked once per process).

    ``SOOTHE_SANDBOX=landlock|none`` forces a weaker one (tests, and users whose bwrap
    is broken); it can never pick a stronger one than the machine has."""
    forced = os.environ.get("SOOTHE_SANDBOX", "").strip().lower()
    bwrap = shutil.which("bwrap")
    bwrap_problem = "not installed (Debian package bubblewrap)"
    if bwrap and forced not in ("landlock", "none"):
        problem = _bwrap_works(bwrap)
        if problem is None:
            return Confinement("bwrap", f"{bwrap}: read-only /, writable workspace, private /tmp")
        bwrap_problem = f"bwrap fails here: {problem}"
    abi = landlock_abi() if forced != "none" else 0
    if abi >= 1:
        net = "TCP blocked" if abi >= 4 else "network NOT blocked (ABI < 4)"
        return Confinement("landlock", f"Landlock ABI {abi}: writes only in the workspace, {net}")
    if forced == "none":
        return Confinement("none", "disabled by SOOTHE_SANDBOX=none")
    return Confinement("none", f"bwrap {bwrap_problem}; no Landlock in this kernel")


REAPER = str(Path(__file__).with_name("reaper.py"))


def supervised(command: str) -> list[str]:
    """``sh -c command`` under the supervisor (``reaper.py``), which ends everything the
    command started with it and dies with this process."""
    python = sys.executable or shutil.which("python3") or "python3"
    return [python, "-I", "-S", REAPER, str(os.getpid()), "/bin/sh", "-c", command]


@dataclass
class Prepared:
    """How to start one confined command: argv, env, a pre-exec hook, what to clean.

    ``supervised``: the argv starts with the supervisor, which is stopped with SIGTERM
    (it then kills the command's processes itself); otherwise a PID namespace holds them
    and killing the process group is enough."""

    argv: list[str]
    env: dict[str, str]
    preexec: Callable[[], None] | None = None
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    pass_fds: tuple[int, ...] = ()
    supervised: bool = False

    def close(self) -> None:
        for fn in self.cleanup:
            with contextlib.suppress(OSError):
                fn()
        self.cleanup.clear()


def prepare(
    command: str,
    workspace: Path,
    env: dict[str, str],
    *,
    network: bool,
    confinement: Confinement | None = None,
) -> Prepared:
    """The argv (``sh -c command``, wrapped) and hooks to run ``command`` confined."""
    conf = confinement or detect()
    ws = str(workspace)
    if conf.kind == "bwrap":
        argv = [
            shutil.which("bwrap") or "bwrap",
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/tmp",
            "--bind", ws, ws,
            "--unshare-pid",
            "--die-with-parent",
            "--chdir", ws,
        ]  # fmt: skip
        if not network:
            argv.append("--unshare-net")
        argv += ["--", "/bin/sh", "-c", command]
        return Prepared(argv, {**env, "TMPDIR": "/tmp"})
    if conf.kind == "landlock":
        tmp = tempfile.mkdtemp(prefix="soothe-sh-")
        fd = _landlock_ruleset([ws, tmp, "/dev"], network=network)
        prepared = Prepared(
            supervised(command),
            {**env, "TMPDIR": tmp},
            preexec=functools.partial(_restrict_self, fd),
            pass_fds=(fd,),
            supervised=True,
        )
        prepared.cleanup.append(lambda: os.close(fd))
        prepared.cleanup.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
        return prepared
    return Prepared(supervised(command), dict(env), supervised=True)


def _fs_write_rights(abi: int) -> int:
    rights = (
        _FS_WRITE_FILE
        | _FS_REMOVE_DIR
        | _FS_REMOVE_FILE
        | _FS_MAKE_CHAR
        | _FS_MAKE_DIR
        | _FS_MAKE_REG
        | _FS_MAKE_SOCK
        | _FS_MAKE_FIFO
        | _FS_MAKE_BLOCK
        | _FS_MAKE_SYM
    )
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    return rights


def _landlock_ruleset(writable: list[str], *, network: bool) -> int:
    """A Landlock ruleset fd that handles every write right and allows them beneath
    ``writable``; reads and execution are not handled (so stay allowed everywhere)."""
    libc = _libc()
    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available")
    rights = _fs_write_rights(abi)
    attr = _RulesetAttr(rights, 0, 0)
    size = ctypes.sizeof(_RulesetAttr)
    if abi < 4:
        size = 8  # only handled_access_fs is known to these kernels
    elif not network:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP  # no rule: all refused
    if abi < 6:
        size = min(size, 16)
    fd = int(libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in writable:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                # Device files (/dev/null) only take write rights that apply to files.
                allowed = rights if os.path.isdir(path) else (_FS_WRITE_FILE | _FS_TRUNCATE)
                if path == "/dev":
                    allowed = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
                rule = _PathBeneathAttr(allowed & rights, pfd)
                res = libc.syscall(_SYS_ADD_RULE, fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
                if res != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
            finally:
                os.close(pfd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _restrict_self(fd: int) -> None:
    """Runs in the child between fork and exec: no new privileges, then the ruleset."""
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
    if libc.syscall(_SYS_RESTRICT_SELF, fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
