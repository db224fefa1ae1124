"""Mechanisms by name, for the command line and the experiments.

Every builder returns a :class:`Outcome`: a mechanism that does not exist (tight-constraints below its
threshold, an infeasible LP, a symmetric mechanism on an asymmetric space) is an outcome with
``exists=False`` and the reason, never an exception and never an empty matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..channels import Channel
    from ..spaces import MetricSpace


@dataclass
class Outcome:
    """A named mechanism built on a space at some ε: the channel when it exists, else the reason."""

    name: str
    exists: bool
    channel: Channel | None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    #: A matrix-free mechanism (e.g. :class:`dprivacy._kernels.ImplicitTightMechanism`) when the
    #: n×n channel is too large to build; ``channel`` is then None.
    implicit: Any = None


def _always(fn: Callable[[MetricSpace, float], Channel], name: str):
    def build(space, epsilon, prior=None):
        needs = _NEEDS.get(name)
        if needs is not None and not needs[0](space):
            # not defined on this space: a result with the reason, in the command line's words (the library's said
            # "pass coordinates= to MetricSpace" or "space must be a GridSpace")
            return Outcome(name, False, None, f"{name} is defined on {needs[1]}; {space.name} is not one")
        mech = fn(space, epsilon)
        if not getattr(mech, "is_dense", True):  # kept implicit (e.g. TG whose entries underflow)
            return Outcome(name, True, None, implicit=mech)
        return Outcome(name, True, mech)

    return build


def _on_a_line(space) -> bool:
    c = space.coordinates
    return c is not None and c.ndim == 2 and c.shape[1] == 1


def _a_grid(space) -> bool:
    from ..spaces import GridSpace

    return isinstance(space, GridSpace)


#: What a mechanism needs of its space (a test, and the words for the reason when it is not met).
_NEEDS = {
    "truncated-geometric": (_on_a_line, "points of a line (line:N, count:N, sum:U,V)"),
    "laplace": (_on_a_line, "points of a line (line:N, count:N, sum:U,V)"),
    "planar-laplace": (_a_grid, "a grid of the plane (grid:WxH)"),
}


def _truncated_geometric(space, epsilon):
    from ..mechanisms.geometric import truncated_geometric

    return truncated_geometric(space, epsilon=epsilon)


def _exponential(space, epsilon):
    from ..mechanisms import exponential

    return exponential(space, epsilon=epsilon)


def _randomized_response(space, epsilon):
    from ..mechanisms import randomized_response

    return randomized_response(space, epsilon=epsilon)


def _laplace(space, epsilon):
    from ..mechanisms.laplace import laplace_channel

    return laplace_channel(space, epsilon=epsilon)


def _planar_laplace(space, epsilon):
    from ..mechanisms.planar_laplace import planar_laplace_channel

    return planar_laplace_channel(space, epsilon=epsilon)


def _tight(space, epsilon, prior=None, progress=None):
    """The library front door :func:`dprivacy.tight_constraints` (method="auto": it picks the closed form,
    the structured grid solver or the dense one); a dense channel when the result has one, else the
    implicit mechanism."""
    from ..mechanisms.tight import tight_constraints

    from ..mechanisms.tight import TightConstraintsResult

    r = tight_constraints(space, epsilon=epsilon, progress=progress)
    implicit = not isinstance(r, TightConstraintsResult)  # the grid and sum-line paths: z and the metric only
    details = {k: getattr(r, k) for k in ("residual", "condition", "error_bound", "margin", "certainty")}
    if hasattr(r, "delta"):
        details["solver"] = ("closed form (a clique: ElSalamouny et al. 2014 Prop 9)" if r.method == "closed-form" else
                             f"{r.method} on the sum line's Toeplitz FFT operator, {r.iterations} iterations "
                             f"(certificate: {r.certificate})")
        details["structured"] = True
    elif implicit:
        details["solver"] = (f"{r.method}" + (f" on the FFT operator (preconditioner {r.preconditioner}), {r.iterations} "
                             "iterations" if r.method != "closed-form" else " (Kronecker product of line solutions)"))
        details["structured"] = True
    if not r.exists and len(r.negative[0]):
        idx, val = r.negative
        details["n_negative"] = int(len(idx))
        # The most negative entries first; at most 20 (the count says how many there are).
        order = sorted(range(len(idx)), key=lambda k: val[k])[:20]
        labels = None if implicit else space.labels
        details["negative"] = [{"index": int(idx[k]), **({} if labels is None else {"label": labels[int(idx[k])]}),
                                "value": float(val[k])} for k in order]
    if not r.exists:
        return Outcome("tight-constraints", False, None, r.reason, details)
    if implicit:
        return Outcome("tight-constraints", True, None, r.reason, details, implicit=r.mechanism)
    if r.method == "closed-form":
        from ..mechanisms.tight import path_structure

        path = path_structure(space)
        coords = space.coordinates
        if path is not None and path[0] == "line" and coords is not None and coords.shape[1] == 1:
            # on a line the tight-constraints mechanism is the truncated geometric (ElSalamouny et al. 2014 §6.1): where its
            # far entries underflow in float64 (count:1000 at ε = 1) it is kept implicit, exact in log space,
            # like the truncated geometric itself (the dense matrix was reported "not private as stored")
            tg = _truncated_geometric(space, epsilon)
            if not getattr(tg, "is_dense", True):
                details["solver"] = "closed form: the truncated geometric (ElSalamouny et al. 2014 §6.1), kept implicit (entries underflow)"
                return Outcome("tight-constraints", True, None, r.reason, details, implicit=tg)
    if not r.mechanism.is_dense:
        # its float64 matrix underflows (ε·d above about 708): the mechanism is kept in log space
        details["solver"] = f"{r.method}, kept implicit in log space (entries e^(-ε·d)·z underflow in float64)"
        return Outcome("tight-constraints", True, None, r.reason, details, implicit=r.mechanism)
    return Outcome("tight-constraints", True, r.channel, r.reason, details)


def _optimal(space, epsilon, prior=None, **lp):
    from ..mechanisms.optimal import optimal_mechanism

    r = optimal_mechanism(space, prior, epsilon=epsilon, **lp)
    details = {
        "method": r.method,
        "objective_kind": r.kind,
        "value": r.value,
        "bound": r.bound,
        "gap": r.gap,
        "status": getattr(r, "status", None),
        "solver_message": r.solver_message,
        "certified_smallest_epsilon": r.smallest_epsilon,
        "lp_seconds": r.seconds,
        "time_limit": lp.get("time_limit"),
        "lp_constraints": r.n_constraints,
        "lp_variables": r.n_variables,
    }
    if r.method in ("constraint-generation", "dantzig-wolfe"):
        details["rounds"] = r.rounds
    if r.method == "spanner":
        details["dilation"] = r.dilation
    if r.solved and not r.private:
        details["lp_smallest_epsilon"] = r.smallest_epsilon
    # Never "exists" with a channel that fails the privacy check: ok = solved and certified.
    if r.ok and r.implicit is not None:
        return Outcome("optimal", True, None, "", details, implicit=r.implicit)
    return Outcome("optimal", r.ok, r.channel if r.ok else None, "" if r.ok else r.reason, details)


def _symmetric(space, epsilon, prior=None):
    from ..mechanisms.symmetric import symmetric_mechanism

    r = symmetric_mechanism(space, epsilon=epsilon)
    if r.exists and not r.mechanism.is_dense:  # kept by its exact log-entries (its float64 matrix underflows)
        return Outcome("symmetric", True, None, getattr(r, "reason", ""), implicit=r.mechanism)
    return Outcome("symmetric", bool(r.exists), r.channel if r.exists else None, getattr(r, "reason", ""))


BUILDERS: dict[str, Callable] = {
    "truncated-geometric": _always(_truncated_geometric, "truncated-geometric"),
    "exponential": _always(_exponential, "exponential"),
    "randomized-response": _always(_randomized_response, "randomized-response"),
    "laplace": _always(_laplace, "laplace"),
    "planar-laplace": _always(_planar_laplace, "planar-laplace"),
    "tight-constraints": _tight,
    "optimal": _optimal,
    "symmetric": _symmetric,
}

#: Mechanisms whose optimum depends on the prior.
NEEDS_PRIOR = {"optimal"}


def build(name: str, space: MetricSpace, *, epsilon: float, prior=None, progress=None, lp: dict | None = None) -> Outcome:
    """Build mechanism ``name`` on ``space`` at ``epsilon`` (``prior`` is used by prior-dependent ones;
    ``progress(iteration, residual)`` is called by iterative solvers; ``lp`` holds the keyword
    arguments of :func:`~dprivacy.mechanisms.optimal.optimal_mechanism` for "optimal")."""
    if name not in BUILDERS:
        raise ValueError(f"unknown mechanism {name!r}: expected one of {', '.join(BUILDERS)}")
    if lp and name != "optimal":
        raise ValueError(f"LP options ({', '.join(sorted(lp))}) apply to the 'optimal' mechanism, not {name!r}")
    if name == "tight-constraints":
        return _tight(space, epsilon, prior, progress)
    if name == "optimal":
        return _optimal(space, epsilon, prior, **(lp or {}))
    return BUILDERS[name](space, epsilon, prior)
