"""Where a sweep's runs execute: local worker processes (the default) or a Ray cluster.

An engine takes a picklable top-level function and its tasks and yields results as runs finish; the
sweep does all bookkeeping (manifest, resume, every file write), so engines stay small and
interchangeable. Each task may come with a shared object (a materialised workload): an engine whose
workers may be on other machines (``ships_workloads``) sends each distinct one once.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")

RAY_HINT = "pip install 'fleetlab[ray]'"
PR_SET_PDEATHSIG = 1  # linux/prctl.h

log = logging.getLogger(__name__)


class EngineError(Exception):
    """An engine that cannot start (e.g. Ray not installed or not reachable)."""


class Engine(Protocol):
    """Runs ``fn`` over ``tasks`` and yields each result as soon as it is ready (any order)."""

    name: str
    #: Whether workers may not see this machine's files, so workloads are shipped to them.
    ships_workloads: bool

    def map_unordered(
        self, fn: Callable[[T, Any], R], tasks: Sequence[T], shared: Sequence[Any] | None = None
    ) -> Iterator[R]:
        """Results of ``fn(task, shared[i])`` (``fn(task, None)`` without ``shared``) in completion order."""
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


def _shared_at(shared: Sequence[Any] | None, i: int) -> Any:
    return None if shared is None else shared[i]


class LocalEngine:
    """Worker processes on this machine (``jobs`` of them; 1 runs in this process)."""

    name = "local"
    ships_workloads = False

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = max(1, jobs or os.cpu_count() or 1)

    def map_unordered(
        self, fn: Callable[[T, Any], R], tasks: Sequence[T], shared: Sequence[Any] | None = None
    ) -> Iterator[R]:
        """Results in completion order; pending runs are cancelled if the consumer stops or fails."""
        if self.jobs == 1 or len(tasks) <= 1:
            for i, task in enumerate(tasks):
                yield fn(task, _shared_at(shared, i))
            return
        context = multiprocessing.get_context("spawn")  # no fork of a process with progress threads
        with ProcessPoolExecutor(
            max_workers=min(self.jobs, len(tasks)),
            mp_context=context,
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            pending: set[Future[R]] = {
                pool.submit(fn, task, _shared_at(shared, i)) for i, task in enumerate(tasks)
            }
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        yield future.result()
            finally:
                for future in pending:
                    future.cancel()


def ray_runtime_env(address: str | None) -> dict[str, Any] | None:
    """For a cluster reached by address: ship this fleetlab package to the workers (``py_modules``), so
    a cluster that has fleetlab's dependencies but not fleetlab itself (or another version) runs this
    one. A local Ray started here imports it from this environment and needs nothing."""
    if address is None and not os.environ.get("RAY_ADDRESS"):
        return None
    return {"py_modules": [str(Path(__file__).resolve().parent.parent)]}


#: The address ``RayEngine`` records when it starts a Ray of its own (no address, no ``RAY_ADDRESS``).
LOCAL_RAY = ""
#: The cluster this process's Ray connection was made to by a RayEngine (Ray allows one per process).
_connected: dict[str, str] = {}


def _ray_at(address: str) -> str:
    return f"the Ray cluster at {address}" if address else "a Ray started in this process"


class RayEngine:
    """Ray tasks: a Ray started here, or the cluster at ``address`` (``ray://host:10001`` through Ray
    Client, ``host:6379`` from a cluster node, or the ``RAY_ADDRESS`` environment variable).

    Workers receive shared workloads through the object store (one ``ray.put`` each) and return their
    run's tables as Arrow; the driver writes every file, so ``--out`` is a path on this machine only.
    At most ``jobs`` runs are in flight (default: as many as the cluster schedules).
    """

    name = "ray"
    ships_workloads = True

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise EngineError(f"--engine ray needs Ray, which is not installed: {RAY_HINT}") from None
        self._ray: Any = ray
        self.jobs = jobs
        wanted = address or os.environ.get("RAY_ADDRESS") or LOCAL_RAY
        if ray.is_initialized():
            if _connected.get("address", wanted) != wanted:
                raise EngineError(
                    f"this process is already connected to {_ray_at(_connected['address'])}, not to "
                    f"{_ray_at(wanted)}: Ray allows one cluster per process (run the other sweep in a new "
                    "fleetlab process)"
                )
        else:
            try:
                ray.init(
                    address=address,
                    ignore_reinit_error=True,
                    log_to_driver=False,
                    runtime_env=ray_runtime_env(address),
                )
            except Exception as exc:  # ray raises ConnectionError, RuntimeError, ...
                where = f"at {address}" if address else "locally"
                raise EngineError(f"cannot start or reach Ray {where}: {exc}") from None
            _connected["address"] = wanted
        log.info("ray engine connected (address %s, at most %s runs in flight)", address, jobs or "any")

    def map_unordered(
        self, fn: Callable[[T, Any], R], tasks: Sequence[T], shared: Sequence[Any] | None = None
    ) -> Iterator[R]:
        """Results in completion order (``ray.wait``); unfinished tasks are cancelled on exit."""
        ray = self._ray
        remote = ray.remote(fn)
        refs_of: dict[int, Any] = {}  # id(shared object) -> its object ref, one put per distinct object
        for value in shared or ():
            if value is not None and id(value) not in refs_of:
                refs_of[id(value)] = ray.put(value)
        log.info("ray engine: %d task(s), %d shared workload(s) put", len(tasks), len(refs_of))
        limit = self.jobs or len(tasks)
        queue = list(range(len(tasks)))[::-1]
        running: list[Any] = []

        def submit() -> None:
            while queue and len(running) < limit:
                i = queue.pop()
                value = _shared_at(shared, i)
                running.append(remote.remote(tasks[i], None if value is None else refs_of[id(value)]))

        try:
            submit()
            while running:
                done, running[:] = ray.wait(running, num_returns=1)
                submit()
                try:
                    result = ray.get(done[0])
                except ray.exceptions.RayError as exc:
                    raise ray_failure(exc) from None
                yield result
        finally:
            for ref in running:
                ray.cancel(ref)


def ray_failure(exc: Exception) -> Exception:
    """What a failed Ray task raises here: the task's own exception, as the local engine raises it (Ray's
    wrapper's text is a remote traceback); an EngineError when the cluster could not run it at all."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, ImportError):
        return EngineError(
            f"a Ray worker cannot import {cause.name or cause}: the cluster's Python environment needs "
            "fleetlab's dependencies (numpy, pydantic, pyarrow, PyYAML, ...)"
        )
    if isinstance(cause, Exception):
        return cause
    first_line = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    return EngineError(f"a Ray task failed ({type(exc).__name__}): {first_line}")


def make_engine(name: str, jobs: int | None = None, address: str | None = None) -> Engine:
    """The engine called ``name`` (``local`` or ``ray``)."""
    if name == "local":
        if address is not None:
            raise EngineError("--address applies to --engine ray only")
        return LocalEngine(jobs)
    if name == "ray":
        return RayEngine(address, jobs)
    raise EngineError(f"unknown engine {name!r}; choose local or ray")
