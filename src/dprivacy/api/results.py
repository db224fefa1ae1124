"""What the data API returns beside the data: the guarantee, the random source, the counts and the sidecar."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..results import Result


@dataclass(eq=False)
class DataResult(Result):
    """The report of one call of the data API.

    Attributes
    ----------
    task : str
        ``"obfuscate"``, ``"series"``, ``"query"`` or ``"evaluate"``.
    guarantee : str
        The privacy guarantee of the release, in one or two sentences (as in the sidecar).
    random_source : dict
        The random source: cryptographic (``release: True``) or a seeded research mode (``release: False`` and
        a ``warning`` that says it is NOT for release).
    counts : dict
        Rows read, written, rejected, suppressed (obfuscate); readings and skipped (series); answers (query).
    sidecar : dict
        The JSON object the command line writes beside a release (``OUTPUT.dprivacy.json``), or prints with
        ``--json``: :meth:`to_dict` returns it and :meth:`write` writes it.
    report : object
        The data layer's own report (:class:`~dprivacy.data.locations.ObfuscationReport`,
        :class:`~dprivacy.data.tables.QueryResult`, :class:`~dprivacy.data.series.SeriesReport`, or the
        evaluation's dict), with the owner-only figures the sidecar leaves out (a query's exact counts of clamped and
        left-out values only with ``owner=True``).
    """

    task: str
    guarantee: str
    random_source: dict
    counts: dict
    sidecar: dict = field(repr=False)
    report: Any = field(repr=False, default=None)

    @property
    def ok(self) -> bool:
        return True

    @property
    def reason(self) -> str:
        mode = "" if self.release_grade else " (seeded research mode: NOT for release)"
        figures = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in self.counts.items() if isinstance(v, int))
        return f"{self.task}: {figures}{mode}"

    @property
    def release_grade(self) -> bool:
        """True when the noise came from the cryptographic source (False: a seed, research mode)."""
        return bool(self.random_source.get("release", True))

    def to_dict(self) -> dict:
        """The sidecar: strict JSON (no NaN or infinity), as the command line writes or prints it."""
        from ..results import jsonable

        return jsonable(self.sidecar)

    def write(self, path, *, force: bool = False) -> None:
        """Write :meth:`to_dict` as JSON to ``path`` (atomically; an existing file only with ``force``)."""
        import json

        from ..data.io import write_bytes_atomic

        write_bytes_atomic(path, (json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n").encode("utf-8"),
                           force=force)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.reason}>"


@dataclass(eq=False, repr=False)
class QueryAnswer(DataResult):
    """The released answers of :func:`dprivacy.query` (a :class:`DataResult` whose ``report`` is the
    :class:`~dprivacy.data.tables.QueryResult`).

    Attributes
    ----------
    budget : dict or None
        With a :class:`~dprivacy.Budget`: ``budget``, ``budget_spent`` and ``budget_remaining`` on the table after
        this query.
    """

    budget: dict | None = None

    @property
    def answers(self) -> list:
        """The :class:`~dprivacy.data.tables.GroupAnswer` objects, one per group (one without ``group_by``)."""
        return self.report.answers

    @property
    def value(self):
        """The noisy answer of a query without ``group_by`` (a list for ``kcount``); a dict group → answer with it."""
        if self.report.group_by is None:
            return self.report.answers[0].noisy
        return {a.group: a.noisy for a in self.report.answers}

    def __repr__(self) -> str:
        r = self.report
        mode = "" if self.release_grade else ", seeded: NOT for release"
        if r.group_by is None and len(r.answers) == 1:
            a = r.answers[0]
            e = a.expected_abs_error
            err = f", expected |error| {e:.4g}" if isinstance(e, (int, float)) and math.isfinite(e) else ""
            return f"<QueryAnswer {r.query} = {a.noisy!r} (ε = {r.epsilon:g}, {r.mechanism}{err}{mode})>"
        return f"<QueryAnswer {r.query}: {len(r.answers)} answers (ε = {r.epsilon:g}, {r.mechanism}{mode})>"

    def to_frame(self):
        """The answers as a pandas DataFrame: group, noisy answer, expected |error| and the ± of the confidence; a
        percentile on ranks, whose accuracy is stated in ranks, has ``within_ranks`` instead of the last two."""
        import pandas as pd

        answers = self.report.answers
        if any(a.within_ranks is not None for a in answers):
            rows = [{"group": a.group, "noisy": a.noisy, "within_ranks": a.within_ranks, "confidence": a.confidence}
                    for a in answers]
        else:
            rows = [{"group": a.group, "noisy": a.noisy, "expected_abs_error": a.expected_abs_error,
                     "within": a.within, "confidence": a.confidence} for a in answers]
        return pd.DataFrame(rows)
