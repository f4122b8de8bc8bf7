"""The supervisor run_shell puts between soothe and a command when no PID namespace holds
it (Landlock, or no sandbox): ``python -I -S reaper.py PARENT_PID PROGRAM ARGS...``.

It makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so everything the
command starts stays its descendant however it forks or ``setsid``s (an orphan is
re-parented to it, not to init), and asks for SIGTERM when soothe dies
(``PR_SET_PDEATHSIG``, so a kill -9 of soothe reaches it). It runs the program and waits;
when the program exits, or SIGTERM / SIGHUP / SIGINT arrive (soothe cancelled the step,
timed it out, or died), it SIGKILLs every descendant it has, reaps them all and exits
as the program did (the same exit code, or killed by the same signal).

It is run as a script by path with ``-I -S``: only the standard library (few modules: each
import is paid by every command), so it starts in a few tens of milliseconds and never
imports soothe. A SIGKILL of this process itself cannot be answered; soothe stops it with
SIGTERM.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
USAGE = "usage: reaper.py PARENT_PID PROGRAM [ARGS...]"


def prctl(option: int, value: int, name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl({name}) failed: {os.strerror(errno)}")


def descendants(root: int) -> list[int]:
    """Every live process below ``root``, read from /proc (parents before children)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited while we looked
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def kill_all() -> None:
    """SIGKILL every descendant and reap until none is left.

    As a subreaper this process inherits every orphan below it, so when ``waitpid``
    reports no children at all, nothing the command started is left. A process forked
    between a scan and the kills is found by the next scan."""
    me = os.getpid()
    while True:
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue  # gone already, or not ours to kill (a set-uid program)
        try:
            while True:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
        except ChildProcessError:
            return
        time.sleep(0.005)


def exit_like(status: int) -> None:
    """Leave with ``status`` (as from waitpid): the same code, or the same signal."""
    if os.WIFSIGNALED(status):
        import resource  # only here: each import costs every command startup time

        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not end a process by default
    os._exit(os.waitstatus_to_exitcode(status))


def run(program: list[str], parent: int) -> int:
    """Start ``program`` and wait for it, or for a stop signal; its wait status, or the
    stop signal's number (a wait status saying "killed by that signal")."""
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1, "PR_SET_CHILD_SUBREAPER")
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, "PR_SET_PDEATHSIG")
    except OSError as exc:
        # Not run unsupervised: the command could leave processes behind for ever.
        print(f"soothe: cannot supervise the command: {exc.strerror}", file=sys.stderr)
        return 126 << 8
    if os.getppid() != parent:
        return signal.SIGTERM  # soothe died before it could tell us
    try:
        child = os.posix_spawnp(
            program[0],
            program,
            os.environ,
            setsigmask=(),
            # Python ignores these; the command gets the defaults a shell expects.
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except OSError as exc:
        print(f"{program[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return (127 if isinstance(exc, FileNotFoundError) else 126) << 8
    while (status := reap_ended(child)) is None:
        info = signal.sigwaitinfo({signal.SIGCHLD, *STOP_SIGNALS})
        if info.si_signo != signal.SIGCHLD:
            return info.si_signo
    return status


def reap_ended(child: int) -> int | None:
    """Reap every child that has ended (orphans re-parented to us included); ``child``'s
    wait status once it is among them."""
    try:
        while (ended := os.waitpid(-1, os.WNOHANG))[0] != 0:
            if ended[0] == child:
                return ended[1]
    except ChildProcessError:
        return None
    return None


def main(argv: list[str]) -> None:
    if len(argv) < 2 or not argv[0].isdigit():
        print(USAGE, file=sys.stderr)
        os._exit(2)
    # Blocked, these wait for sigwaitinfo in run(); the program starts with none blocked.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, *STOP_SIGNALS})
    status: int = signal.SIGTERM
    try:
        status = run(argv[1:], int(argv[0]))
    finally:
        kill_all()
    exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
