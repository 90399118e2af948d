"""A progress bar that appears only when a run takes longer than a second, and only on a terminal."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

DELAY_S = 1.0


class DelayedProgress:
    """Callback target for simulator progress: (label, done, total)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.enabled = console.is_terminal
        self.started_at = time.monotonic()
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            if time.monotonic() - self.started_at < DELAY_S:
                return
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.percentage:>5.1f}%"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
        task = self._tasks.get(label)
        if task is None:
            task = self._progress.add_task(label, total=total)
            self._tasks[label] = task
        self._progress.update(task, completed=done, total=total)

    def __enter__(self) -> DelayedProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
