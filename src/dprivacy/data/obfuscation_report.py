"""The report of a location release (:class:`ObfuscationReport`: the figures of its sidecar) and the notes and
counts put in it: those that may be published with the release, and those computed from the true locations that
stay with the data's owner (``obfuscate --owner``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .copies import copy_sample
from .planar_noise import DEFAULT_PRECISION_DEG


@dataclass
class ObfuscationReport:
    """What ``obfuscate_file`` did: the figures of the sidecar."""

    input: str
    output: str
    mechanism: str
    epsilon: float
    unit: str
    epsilon_per_metre: float
    guarantee: str
    random_source: dict
    rows_read: int = 0
    rows_written: int = 0
    rows_rejected: int = 0
    rows_suppressed: int = 0
    first_rejected: str | None = None
    lat_column: str = ""
    lon_column: str = ""
    precision_degrees: float = DEFAULT_PRECISION_DEG
    seconds: float = 0.0
    version: str = ""
    notes: list = field(default_factory=list)
    grid: dict | None = None
    budget: dict | None = None
    coords: str = "degrees"
    guarantee_details: dict | None = None
    accuracy: str | None = None
    shuffled: bool = False  # the rows released in a random order (--shuffle): matched to the original by a key only
    sampling: dict | None = None  # what the sampler did (record_sampling): counts independent of the true locations
    #: counts that depend on the true locations (rows outside --region, the rejection sampler's proposals): for
    #: ``obfuscate --owner`` only, never in :meth:`to_dict` (the sidecar)
    owner_only: dict = field(default_factory=dict)
    #: notes computed from the true locations (the rows sorted by latitude): for ``obfuscate --owner`` only
    owner_notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        from ..results import jsonable

        return jsonable({k: v for k, v in vars(self).items() if k not in ("owner_only", "owner_notes")})


#: |Spearman ρ| between row number and latitude (or longitude) from which a file is called sorted by location
SORTED_RHO = 0.9


def sorted_note(report, lat, lon) -> None:
    """Say in the report when the first batch's rows are ordered by latitude or longitude (|Spearman ρ| between
    row number and coordinate ≥ :data:`SORTED_RHO` over up to 10,000 rows spread over the batch): the release
    keeps the row order, which then tells the true locations apart (each row's latitude can be estimated from
    its rank: to 1.2 km in a file whose released points are 9.4 km off). A time-ordered track heading one way is
    flagged too: its order is public only if its times are."""
    found = sorted_by(lat, lon)
    if found is not None:  # read from the true locations: the owner's, never in the sidecar
        report.owner_notes.append(sorted_note_text(*found))


def sorted_note_text(name: str, rho: float) -> str:
    return (f"the rows are ordered by {name} (Spearman ρ = {rho:.2f} between row number and {name} in the first rows): "
            "the release keeps the row order, which then tells the true locations apart; unless that order is public (a "
            "time order with its times released), release them with --shuffle")


def sorted_by(lat, lon):
    """("latitude" or "longitude", Spearman ρ) when the rows (up to 10,000 spread over them) are ordered by that
    coordinate, |ρ| ≥ :data:`SORTED_RHO`; else None."""
    take = copy_sample(lat.size)
    if take.size < 20:
        return None
    index = np.arange(take.size, dtype=np.float64)
    for name, v in (("latitude", lat[take]), ("longitude", lon[take])):
        if not np.isfinite(v).all() or np.ptp(v) == 0:
            continue
        # Spearman's ρ: the correlation of the row numbers with the values' ranks (numpy alone: scipy.stats would double
        # the start-up of a small obfuscate; ties ranked in order, which changes ρ by O(ties/n))
        rho = float(np.corrcoef(index, np.argsort(np.argsort(v, kind="stable")).astype(np.float64))[0, 1])
        if abs(rho) >= SORTED_RHO:
            return name, rho
    return None


def rejection_note(report) -> None:
    """Say in the report that rejected rows are missing from the release: which rows are present depends on
    whether their coordinates could be read, which the guarantee does not cover. (A point outside a grid's
    region is not rejected: it is released as the cell nearest it.)"""
    if report.rows_rejected:
        report.notes.append(f"{report.rows_rejected:,} rejected row(s) (--skip-invalid) are not in the release: a row's "
                            "presence tells that its true location was valid; the guarantee is about the locations of the "
                            "rows released")


def add_counts(total: dict, part: dict) -> dict:
    """Add the counts of ``part`` into ``total`` (nested dicts of numbers, as :meth:`.obfuscator.Obfuscator.apply` fills them)."""
    for k, v in part.items():
        if isinstance(v, dict):
            add_counts(total.setdefault(k, {}), v)
        else:
            total[k] = total.get(k, 0) + v
    return total


#: What the owner-only counts of ``obfuscate --owner`` are.
NOT_PRIVATE = ("exact counts that depend on the true locations, outside the ε guarantee: for the data owner, never to be "
               "published (they are not in the sidecar)")


def record_sampling(report, release, stats: dict) -> None:
    """Put the counts of a release, read after sampling, where they belong: those that do not depend on the true
    locations in ``report.sampling`` (the sidecar), the others in ``report.owner_only`` (``obfuscate --owner``
    prints them; never written). ``stats``: filled by :meth:`.obfuscator.Obfuscator.apply` over every batch (every part)."""
    if release is None:
        smp = stats.get("sampler") or {}
        report.sampling = {"draws": int(stats.get("draws", 0)), "lattice_proposals": int(smp.get("proposals", 0))}
        report.owner_only = {}
    else:
        report.sampling, report.owner_only = release.sampling_counts(stats)
    report.sampling["meaning"] = ("counted after sampling; independent of the true locations given the number of rows "
                                  "(the random source decides them)")
    if report.owner_only:
        report.owner_only["meaning"] = NOT_PRIVATE
