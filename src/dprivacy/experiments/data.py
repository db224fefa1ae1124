"""Synthetic, seeded data for experiments whose published data are not available.

Chatzikokolakis et al. 2013 §6.1 (smart meters) and Example 2 use real consumption traces (a household meter; the power
signature of the first five minutes of a film on a TV, from Greveler et al.). Those traces are not
published with the paper, so the experiments run the paper's mechanisms on the documented synthetic
traces below. Every number computed on them is marked "not comparable" with the paper's data.

The generators are deterministic given ``rng`` (an ``np.random.Generator``, an int seed, or None).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import check_positive_int
from ..sampling import as_generator


@dataclass(frozen=True)
class Trace:
    """A consumption trace.

    Attributes
    ----------
    times : ndarray (n,)
        Start of each reading interval, in ``time_unit``.
    values : ndarray (n,)
        The readings, in ``unit``.
    unit, time_unit : str
        Units of ``values`` and ``times``.
    value_range : (float, float)
        The range every reading is guaranteed to lie in (the domain V of Chatzikokolakis et al. 2013 §6.1).
    description : str
        How the trace was made.
    fine_times, fine_values : ndarray or None
        The underlying higher-resolution signal, when there is one (Chatzikokolakis et al. 2013 Fig 4 (a): the grey line).
    """

    times: np.ndarray
    values: np.ndarray
    unit: str
    time_unit: str
    value_range: tuple[float, float]
    description: str
    fine_times: np.ndarray | None = None
    fine_values: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.values.size)


def _bump(t: np.ndarray, centre: float, width: float) -> np.ndarray:
    return np.exp(-0.5 * ((t - centre) / width) ** 2)


#: Largest power the household draws in the model (W); readings are capped at this times the interval.
HOUSEHOLD_MAX_W = 3000.0


def household_day(n_readings: int = 48, *, rng=None) -> Trace:
    """One day of a household's electricity use, as ``n_readings`` interval readings in Wh.

    Model (power in W, t in hours from midnight, sampled every minute and integrated per interval):

    * base load 150 W (fridge, standby), plus a fridge compressor of 90 W that is on for 20 minutes
      out of every hour with a random phase;
    * a morning peak centred at 07:30 (amplitude 1100 W, width σ = 0.6 h), a midday bump at 12:45
      (350 W, σ = 0.7 h) and an evening peak at 19:15 (1600 W, σ = 1.3 h), each scaled by a random
      factor uniform in [0.8, 1.2];
    * four kettle/oven events of 2000 W lasting 4–25 minutes at random times between 06:00 and 22:00;
    * multiplicative noise: every minute's power times a log-normal factor (σ = 0.10);
    * the power is capped at ``HOUSEHOLD_MAX_W`` = 3000 W.

    Each reading is the energy of its interval, Σ (power × 1 minute), in Wh; hence every reading lies
    in [0, 3000 W × 24 h / n] (0–1500 Wh for 48 half-hour readings), the ``value_range`` of the trace.
    Over seeds 0..199 the daily total ranges over 11.7–15.6 kWh (median 13.5 kWh); half-hour readings
    go from ~70 Wh at night to ~1000 Wh in the evening (the 1500 Wh cap is reached only when a
    2 kW event meets the evening peak).
    """
    n = check_positive_int(n_readings, name="n_readings")
    if 1440 % n:
        raise ValueError(f"n_readings must divide the 1440 minutes of a day, got {n}")
    g = as_generator(rng)
    minutes = np.arange(1440)
    t = minutes / 60.0
    p = np.full(1440, 150.0)
    phase = g.integers(0, 60)
    p += 90.0 * (((minutes + phase) % 60) < 20)
    for centre, amp, width in ((7.5, 1100.0, 0.6), (12.75, 350.0, 0.7), (19.25, 1600.0, 1.3)):
        p += amp * g.uniform(0.8, 1.2) * _bump(t, centre, width)
    for _ in range(4):
        start = g.integers(6 * 60, 22 * 60)
        p[start : start + g.integers(4, 26)] += 2000.0
    p *= g.lognormal(0.0, 0.10, size=1440)
    p = np.minimum(p, HOUSEHOLD_MAX_W)
    per = 1440 // n
    wh = p.reshape(n, per).sum(axis=1) / 60.0
    hours = 24.0 / n
    return Trace(
        times=np.arange(n) * hours, values=wh, unit="Wh", time_unit="h",
        value_range=(0.0, HOUSEHOLD_MAX_W * hours),
        description=(f"synthetic household day ({n} readings of {hours:g} h, Wh): base 150 W + cycling fridge, "
                     "morning/midday/evening peaks, 4 kettle/oven events, 10% log-normal noise, capped at 3 kW"),
        fine_times=t, fine_values=p,
    )


#: Power range of the TV model (W).
TV_RANGE_W = (60.0, 180.0)


def tv_signature(seconds: int = 300, interval: int = 10, *, rng=None) -> Trace:
    """The power drawn by a television while it shows a film, read every ``interval`` seconds.

    A stand-in for Chatzikokolakis et al. 2013 Example 2 / Fig 4 (a) (the first 5 minutes of a film, read every 10 s).
    Model: an LCD television with dynamic backlight draws 70 W plus up to 100 W in proportion to the
    picture's brightness. Brightness is piecewise constant between scene cuts (cuts after
    exponentially distributed durations of mean 12 s; each scene's brightness uniform in [0, 1]),
    plus flicker (Gaussian, σ = 2 W per second). The per-second power is clipped to ``TV_RANGE_W``
    = [60, 180] W (the value range), and each reading is the mean power over its interval (W).
    ``fine_values`` holds the per-second signal (Fig 4 (a)'s grey line).
    """
    s = check_positive_int(seconds, name="seconds")
    k = check_positive_int(interval, name="interval")
    if s % k:
        raise ValueError(f"interval ({k} s) must divide seconds ({s})")
    g = as_generator(rng)
    cuts = np.cumsum(g.exponential(12.0, size=s))  # more cuts than needed
    cuts = cuts[cuts < s]
    scene = np.searchsorted(cuts, np.arange(s), side="right")
    brightness = g.uniform(0.0, 1.0, size=scene.max() + 1)[scene]
    p = 70.0 + 100.0 * brightness + g.normal(0.0, 2.0, size=s)
    p = np.clip(p, *TV_RANGE_W)
    readings = p.reshape(s // k, k).mean(axis=1)
    return Trace(
        times=np.arange(s // k) * float(k), values=readings, unit="W", time_unit="s", value_range=TV_RANGE_W,
        description=(f"synthetic TV power signature ({s} s read every {k} s, W): 70 W + 100 W × scene brightness, "
                     "scene cuts every ~12 s, 2 W flicker, clipped to [60, 180] W"),
        fine_times=np.arange(s, dtype=float), fine_values=p,
    )
