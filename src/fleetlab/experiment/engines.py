"""Where a sweep's runs execute: local worker processes (the default) or a Ray cluster.

An engine takes a picklable top-level function and its tasks and yields results as runs finish; the
sweep does all bookkeeping (manifest, resume), so engines stay small and interchangeable.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")

RAY_HINT = "pip install 'fleetlab[ray]'"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class EngineError(Exception):
    """An engine that cannot start (e.g. Ray not installed or not reachable)."""


class Engine(Protocol):
    """Runs ``fn`` over ``tasks`` and yields each result as soon as it is ready (any order)."""

    name: str

    def map_unordered(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        """Results of ``fn(task)`` in completion order."""
        ...


def _die_with_parent(parent: int) -> None:
    """Worker initializer: exit when the driver dies, so a killed sweep leaves no workers behind.

    On Linux the kernel sends SIGTERM when the parent exits (PR_SET_PDEATHSIG); everywhere a daemon thread
    also checks once a second that the parent is still there.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="fleetlab-parent-watch", daemon=True).start()


class LocalEngine:
    """Worker processes on this machine (``jobs`` of them; 1 runs in this process)."""

    name = "local"

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = max(1, jobs or os.cpu_count() or 1)

    def map_unordered(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        """Results in completion order; pending runs are cancelled if the consumer stops or fails."""
        if self.jobs == 1 or len(tasks) <= 1:
            for task in tasks:
                yield fn(task)
            return
        context = multiprocessing.get_context("spawn")  # no fork of a process with progress threads
        with ProcessPoolExecutor(
            max_workers=min(self.jobs, len(tasks)),
            mp_context=context,
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            pending: set[Future[R]] = {pool.submit(fn, task) for task in tasks}
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        yield future.result()
            finally:
                for future in pending:
                    future.cancel()


class RayEngine:
    """Ray tasks: ``ray.init()`` for a local Ray, or ``address`` for a running cluster.

    Workers write run folders themselves, so on a multi-machine cluster ``--out`` must be a shared path.
    """

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise EngineError(f"--engine ray needs Ray, which is not installed: {RAY_HINT}") from None
        self._ray: Any = ray
        if not ray.is_initialized():
            try:
                ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
            except Exception as exc:  # ray raises ConnectionError, RuntimeError, ...
                where = f"at {address}" if address else "locally"
                raise EngineError(f"cannot start or reach Ray {where}: {exc}") from None

    def map_unordered(self, fn: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
        """Results in completion order (``ray.wait``); unfinished tasks are cancelled on exit."""
        ray = self._ray
        remote = ray.remote(fn)
        refs = [remote.remote(task) for task in tasks]
        try:
            while refs:
                done, refs = ray.wait(refs, num_returns=1)
                yield ray.get(done[0])
        finally:
            for ref in refs:
                ray.cancel(ref)


def make_engine(name: str, jobs: int | None = None, address: str | None = None) -> Engine:
    """The engine called ``name`` (``local`` or ``ray``)."""
    if name == "local":
        if address is not None:
            raise EngineError("--address applies to --engine ray only")
        return LocalEngine(jobs)
    if name == "ray":
        return RayEngine(address)
    raise EngineError(f"unknown engine {name!r}; choose local or ray")
