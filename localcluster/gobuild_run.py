"""Runs ``localcluster/build``: the stale targets, longest first, two Go invocations at a time,
with a progress line a person can read and every build's log kept under ``.cache/localcluster/logs``.

Each job builds into a staging folder beside ``bin`` and only then moves its binaries in and
writes its stamp: Ctrl-C, a full disk or a failed download leave no stamp and no half-written
binary in ``bin``, and the next run builds that target again (Go's own caches keep what was done).
The modules' downloads start at once, in the background, while the first builds compile.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from localcluster.gobuild import (
    BuildError,
    Target,
    cold_seconds,
    fresh,
    full_disk,
    merged,
    minutes,
    order,
    resolve,
    stamp,
)

PROGRESS_EVERY = 60  # seconds between a running build's progress lines
JOBS = int(os.environ.get("LOCALCLUSTER_BUILD_JOBS", "2"))  # Go invocations at once (each runs -p = cores)
_print_lock = threading.Lock()


def say(line: str) -> None:
    with _print_lock:
        print(f"localcluster/build: {line}", file=sys.stderr, flush=True)


class Builder:
    """One ``localcluster/build`` run over a cache folder (``bin``, ``stamps``, ``logs``)."""

    def __init__(self, cache: Path) -> None:
        self.bin, self.stamps, self.logs = cache / "bin", cache / "stamps", cache / "logs"
        for folder in (self.bin, self.stamps, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        self.figures = cold_seconds()
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = False
        self._starting = threading.Lock()  # stop() sees every build that started, or none starts after it

    def last_here(self, name: str) -> str:
        record = self.stamps / f"{name}.seconds"
        return f"; last here {minutes(int(record.read_text()))}" if record.is_file() else ""

    def cold(self, job: list[Target]) -> int | None:
        """The job's cold figure: the longest of its targets' (they compile together)."""
        known = [self.figures[t.name] for t in job if t.name in self.figures]
        return max(known) if known else None

    def announce(self, name: str, cold: int | None) -> str:
        before = f"cold on 2 cores {minutes(cold)} (docs/benchmarks.md)" if cold else "no figure yet"
        return f"{name} started {time.strftime('%H:%M:%S')} ({before}{self.last_here(name)}); log {self.logs / name}.log"

    def folders(self) -> list[Path]:
        """Where a build writes: Go's caches, the temporary folder, the binaries."""
        env = subprocess.run(
            ["go", "env", "GOCACHE", "GOMODCACHE", "GOTMPDIR"], capture_output=True, text=True
        )
        named = [Path(p) for p in env.stdout.split() if p]
        return [*named, Path(os.environ.get("TMPDIR", "/tmp")), self.bin.resolve(), self.logs.resolve()]

    def build(self, job: list[Target]) -> None:
        """One Go invocation for ``job``'s targets; its binaries moved in whole, then its stamps."""
        name = "+".join(t.name for t in job)
        if self.stopping:  # interrupted before this job's turn
            return
        stage = self.bin / f".partial-{name}"
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir()
        for target in job:
            (self.stamps / target.name).unlink(missing_ok=True)
        command = job[0].command(stage)
        if len(job) > 1:  # package builds in one folder: all packages, one invocation
            command = [*command, *(p for t in job[1:] for p in t.packages)]
        start = time.monotonic()
        cold = self.cold(job)
        say(self.announce(name, cold))
        try:
            code = self._run(name, command, job[0], start, cold)
            if code != 0:
                raise self._failure(name, code, time.monotonic() - start)
            for target in job:
                self._install(target, stage)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        took = time.monotonic() - start
        for target in job:
            (self.stamps / f"{target.name}.seconds").write_text(str(int(took)))
        say(f"{name} done in {minutes(took)}")

    def _run(self, name: str, command: list[str], target: Target, start: float, cold: int | None) -> int:
        log_path = self.logs / f"{name}.log"
        with open(log_path, "wb") as log, self._starting:
            if self.stopping:  # interrupted before its turn came: never started
                return -signal.SIGTERM
            process = subprocess.Popen(
                command,
                cwd=target.folder,
                env=go_env(target),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: Ctrl-C here ends all of its compilers
            )
            self.running[name] = process
        try:
            while process.poll() is None:
                try:
                    process.wait(timeout=PROGRESS_EVERY)
                except subprocess.TimeoutExpired:
                    say(
                        f"{name} {minutes(time.monotonic() - start)} elapsed"
                        + (f" (cold: {minutes(cold)})" if cold else "")
                    )
        finally:
            self.running.pop(name, None)
        return process.returncode

    def _failure(self, name: str, code: int, took: float) -> BuildError:
        log_path = self.logs / f"{name}.log"
        text = log_path.read_text(errors="replace") if log_path.is_file() else ""
        tail = "\n".join("    " + line for line in text.splitlines()[-15:])
        disk = full_disk(text, self.folders())
        why = f"{disk}; " if disk else ""
        return BuildError(
            f"localcluster/build: {name} FAILED after {minutes(took)} (exit {code}): {why}its log is {log_path}\n{tail}\n"
            f"localcluster/build: the next run builds {name} again (nothing of it is taken as built)"
        )

    def _install(self, target: Target, stage: Path) -> None:
        for binary in target.outputs:
            built = stage / binary
            if not (built.is_file() and os.access(built, os.X_OK)):
                raise BuildError(f"localcluster/build: {target.name} built, but {binary} is missing")
            os.replace(built, self.bin / binary)  # same folder's file system: whole or not at all
        if target.script:  # anything else a script leaves (pulumi's run-time scripts) goes beside them
            for extra in stage.iterdir():
                os.replace(extra, self.bin / extra.name)
        (self.stamps / target.name).write_text(stamp(target))

    def stop(self, threads: list[threading.Thread]) -> None:
        """End every running build's process group, wait for the build ``threads`` to finish (a build
        that had already succeeded installs whole), then remove the staging folders."""
        with self._starting:
            self.stopping = True
            running = list(self.running.values())
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in running:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for thread in threads:
            thread.join(timeout=30)
        for stage in self.bin.glob(".partial-*"):
            shutil.rmtree(stage, ignore_errors=True)


def go_env(target: Target) -> dict[str, str]:
    """The build's environment: the pins read only (never rewritten), no VCS stamping, the target's own."""
    flags = f"-mod=readonly -buildvcs=false {os.environ.get('GOFLAGS', '')}".strip()
    return {**os.environ, "GOFLAGS": flags, **target.env}


def prefetch(targets: list[Target], log: Path) -> threading.Thread:
    """``go mod download`` for every target's module, in the background, longest build first."""

    def download() -> None:
        with open(log, "ab") as out:
            for folder, env in {t.folder: t.env for t in targets}.items():
                subprocess.run(
                    ["go", "mod", "download"], cwd=folder, env={**os.environ, **env}, stdout=out, stderr=out
                )

    thread = threading.Thread(target=download, daemon=True)
    thread.start()
    return thread


def locked(bin_dir: Path) -> Callable[[], None]:
    """Wait for any other build into this binary folder (two checkouts may share it)."""
    lock = open(bin_dir / ".build.lock", "w")  # noqa: SIM115 - held until the process ends
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say(f"waiting for another build into {bin_dir} to finish")
        fcntl.flock(lock, fcntl.LOCK_EX)
    return lock.close


def run(names: list[str], cache: Path) -> int:
    """Build what is stale among ``names``; 0 when all is built, 1 on a failure (said on stderr)."""
    targets = resolve(names)
    builder = Builder(cache)
    release = locked(builder.bin)
    try:
        stale = order([t for t in targets if not fresh(t, builder.bin, builder.stamps)], builder.figures)
        if not stale:
            return 0
        say(
            f"to build: {', '.join(t.name for t in stale)} ({min(JOBS, len(stale))} at a time, longest first)"
        )
        if any(t.packages or t.script for t in stale):
            prefetch(stale, builder.logs / "downloads.log")
        return _run_jobs(builder, merged(stale))
    finally:
        release()


def _run_jobs(builder: Builder, jobs: list[list[Target]]) -> int:
    """Up to JOBS builds at once, in daemon threads; the main thread only waits on a C queue.

    Not a ThreadPoolExecutor: polling its futures takes their Python-level lock, and Ctrl-C landing
    just after that lock is taken leaves it held. The build's thread then blocks on it, and the
    interpreter's exit waits for that thread forever (seen: a test's SIGINT hung the run).
    """
    todo: queue.SimpleQueue[list[Target]] = queue.SimpleQueue()
    ended: queue.SimpleQueue[BuildError | None] = queue.SimpleQueue()
    for job in jobs:
        todo.put(job)

    def work() -> None:
        with contextlib.suppress(queue.Empty):
            while job := todo.get_nowait():
                try:
                    builder.build(job)
                    ended.put(None)
                except BuildError as error:
                    ended.put(error)
                except BaseException as error:  # a bug of ours: said with the job's name
                    names = "+".join(t.name for t in job)
                    ended.put(BuildError(f"localcluster/build: {names} FAILED: {error!r}"))

    threads = [threading.Thread(target=work, daemon=True) for _ in range(min(max(1, JOBS), len(jobs)))]
    failures: list[str] = []
    try:
        for thread in threads:
            thread.start()
        for _ in jobs:
            error = _next(ended)
            if error is not None:
                failures.append(str(error))
                say(str(error).removeprefix("localcluster/build: "))
    except KeyboardInterrupt:
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        names = ", ".join(builder.running) or "nothing"
        builder.stop([t for t in threads if t.ident is not None])  # every thread that started
        say(
            f"interrupted while building {names}: no stamp written, no partial binary left in {builder.bin}; the next run builds it again"
        )
        return 130
    return 1 if failures else 0


def _next(ended: queue.SimpleQueue[BuildError | None]) -> BuildError | None:
    """The next finished build's error (None when it succeeded), waited for where Ctrl-C reaches."""
    while True:
        with contextlib.suppress(queue.Empty):
            return ended.get(timeout=0.2)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends a build the way Ctrl-C does


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    default = Path(__file__).resolve().parent.parent / ".cache" / "localcluster"
    try:
        return run(argv, Path(os.environ.get("LOCALCLUSTER_CACHE", default)))
    except BuildError as error:
        print(error, file=sys.stderr)
        return 2
