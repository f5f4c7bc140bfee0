"""The progress display of a run of many requests."""

from __future__ import annotations

__all__ = ["Progress"]


class Progress:
    """A rich progress bar for a run of many requests (failed and cached counts shown); off when not enabled."""

    def __init__(self, total: int, enabled: bool, description: str):
        self._progress = None
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]} · cached {task.fields[cached]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._task = self._progress.add_task(description, total=total, failed=0, cached=0)
        self._progress.start()
        self.failed = 0
        self.cached = 0

    def advance(self, failed: bool, cached: bool) -> None:
        if self._progress is None:
            return
        self.failed += int(failed)
        self.cached += int(cached)
        self._progress.update(self._task, advance=1, failed=self.failed, cached=self.cached)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
