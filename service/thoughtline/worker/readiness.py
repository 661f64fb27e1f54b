"""What the worker's parts report against readiness (`/readyz`), apart from the server that
answers it and the metrics that hold it, so neither imports the other."""

from __future__ import annotations


class ReadinessProblems:
    """Why the worker should not be sent traffic, as its parts see it: `/readyz` answers 503
    with the first problem set. A part sets its own problem under a name of its own and clears
    it the same way:

        metrics.readiness.set("commit", "the last 3 commits failed (...)")
        metrics.readiness.set("commit", None)

    The worker sets `commit` after consecutive failed commits and clears it at the next good
    one; the committer sets `writes` while Redis refuses writes. Each problem is one line,
    without payload text.
    """

    def __init__(self) -> None:
        self._problems: dict[str, str] = {}

    def set(self, source: str, problem: str | None) -> None:
        if problem is None:
            self._problems.pop(source, None)
        else:
            self._problems[source] = " ".join(problem.split())

    def first(self) -> str | None:
        return next(iter(self._problems.values()), None)
