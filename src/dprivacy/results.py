"""One result vocabulary for everything that can fail for a mathematical reason.

A mechanism that does not exist, a prior outside the region, a channel that is not private, an LP that
stopped early: each comes back as a :class:`Result` (in the style of ``scipy.optimize.OptimizeResult``)
with the same three words —

* ``ok``: the question's answer is yes (the mechanism exists, the prior is regular, the check holds);
* ``reason``: one or two sentences saying why, or why not, and how it was decided;
* ``certificate``: the evidence (a vector μ, a diagonal z, a worst triple, a bracket), or None;

and ``to_dict()`` gives the figures as **strict JSON** (:func:`jsonable`): no NaN, no ±Infinity, no
−0.0. A non-finite float under key ``k`` is written as ``null`` with a sibling ``"k_nonfinite": "+inf"``
(or ``"-inf"``, ``"nan"``), so nothing is lost and every JSON parser accepts the output.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Result:
    """Base of every result object.

    Subclasses are (usually frozen) dataclasses that define the fields ``ok`` and ``reason``; they may
    override :attr:`certificate` and list in ``_json_exclude`` fields too large or too internal for
    ``to_dict()`` (dense matrices, cached solvers).
    """

    _json_exclude: tuple[str, ...] = ()

    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return bool(self.ok)

    @property
    def certificate(self) -> Any:
        """The evidence behind ``ok`` (None when the result carries none)."""
        return None

    def to_dict(self) -> dict:
        """The result's figures as a strict-JSON-ready dict (see :func:`jsonable`)."""
        out: dict[str, Any] = {}
        if dataclasses.is_dataclass(self):
            items = ((f.name, getattr(self, f.name)) for f in dataclasses.fields(self) if f.repr or f.name in ("ok", "reason"))
        else:
            items = vars(self).items()
        for k, v in items:
            if k.startswith("_") or k in self._json_exclude:
                continue
            out[k] = v
        out.setdefault("ok", bool(self.ok))
        out.setdefault("reason", self.reason)
        return jsonable(out)


@dataclass(frozen=True)
class UtilityResult(Result):
    """``value``: expected gain (or loss) under ``remap``, the optimal deterministic remap (output z ↦
    guess ``remap[z]``). ``kind`` is "gain" or "loss". A utility always exists: ``ok`` is True and
    ``reason`` says what was computed (ElSalamouny et al. 2014 §3.4, Alvim et al. 2015 Def 22 / Prop 23).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.4 (utility
       model, optimal remap).
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Def 22, Prop
       23.
    """

    value: float
    remap: np.ndarray = field(repr=False)
    kind: str = "gain"

    @property
    def ok(self) -> bool:
        return True

    @property
    def reason(self) -> str:
        what = "expected gain" if self.kind == "gain" else "expected loss"
        best = "maximises" if self.kind == "gain" else "minimises"
        return f"{what} {self.value:.12g} under the deterministic remap that {best} it for the prior"

    def __float__(self) -> float:
        return self.value


def _float(x: float):
    x = float(x)
    if x == 0.0:
        return 0.0  # no −0.0
    return x


def jsonable(x: Any) -> Any:
    """Convert ``x`` to plain JSON types, strictly.

    numpy scalars and arrays become Python numbers and lists; dataclasses and :class:`Result` objects
    become dicts; −0.0 becomes 0.0; a non-finite float under a dict key ``k`` becomes ``None`` with a
    sibling ``k_nonfinite`` set to ``"+inf"``, ``"-inf"`` or ``"nan"``; inside a list it becomes
    ``None`` (the list's owner documents what that means). Sets become sorted lists; other objects
    become their ``str``.
    """
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        return _float(f) if math.isfinite(f) else None
    if isinstance(x, Result):
        return x.to_dict()
    if isinstance(x, dict):
        out: dict[str, Any] = {}
        for k, v in x.items():
            key = str(k)
            if isinstance(v, (float, np.floating)) and not math.isfinite(float(v)):
                f = float(v)
                out[key] = None
                out[f"{key}_nonfinite"] = "nan" if math.isnan(f) else ("+inf" if f > 0 else "-inf")
            else:
                out[key] = jsonable(v)
        return out
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted(jsonable(v) for v in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return jsonable({f.name: getattr(x, f.name) for f in dataclasses.fields(x) if f.repr})
    if hasattr(x, "__fspath__"):
        return str(x)
    return str(x)


def dumps(obj: Any, **kwargs) -> str:
    """``json.dumps`` of :func:`jsonable` (``allow_nan=False``: a stray NaN is a bug, not output)."""
    import json

    return json.dumps(jsonable(obj), allow_nan=False, **kwargs)
