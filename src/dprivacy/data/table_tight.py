"""``--mechanism tight-constraints`` for a sum or an average under standard ε-DP (:mod:`dprivacy.data.tables`):
the tight-constraints mechanism on the sum's answer graph, built matrix-free, one exact draw per group."""

from __future__ import annotations

import math

from .memory import display_name
from .table_accuracy import _answer_prior
from .table_models import GroupAnswer, QueryResult, _on_grid, standard_statement

def _tight_sum(table, query, rows, src, *, eps, eps_answer, factor, delta, lo_a, hi_a, step, total, bounds, where,
               group_by, theorem, composition, confidence, prior, public_cols, n_groups, invalid,
               max_answers: int) -> QueryResult:
    """The tight-constraints mechanism on the sum's answer graph (ElSalamouny et al. 2014 §7.1: answers lo..hi, adjacent iff
    |i − j| ≤ Δ, d = ⌈|i − j|/Δ⌉) at ε_a per answer, matrix-free (:mod:`dprivacy._kernels.sum_line`); one
    exact draw per group from the row of its true answer. Refused with ε* (ValueError) when it does not exist."""
    from .._kernels.sum_line import regularity_sum_line, tight_constraints_sum_line, tight_threshold_sum_line

    n = int(hi_a - lo_a + 1)
    if n > max_answers:
        raise ValueError(f"--mechanism tight-constraints: the answers of {query.name} range over {n:,} values "
                         f"({lo_a}..{hi_a}), over the {max_answers:,} on which the mechanism is built (about "
                         f"{220 * n / 2**30:.1f} GiB and {4.5e-6 * n:.0f} s at this size); narrow --bounds, give a coarser "
                         "--unit, or use --mechanism truncated-geometric")
    dlt = int(round(delta))
    res = tight_constraints_sum_line(n, dlt, epsilon=eps_answer)
    per = f" (ε/{factor} = {eps_answer:g} per answer)" if factor != 1 else ""
    if not res.exists:
        th = tight_threshold_sum_line(n, dlt)
        if th.epsilon_star is None:
            star = "no ε* was found"
        else:
            lo_b = th.bracket[0] if th.bracket and th.bracket[0] is not None else None
            star = (f"it exists from the threshold ε* = {th.epsilon_star * factor:.6g} (this query's ε" +
                    (f"; ε* in ({lo_b * factor:.6g}, {th.epsilon_star * factor:.6g}], certified)" if lo_b is not None and th.certified
                     else "; verified existence there, the bracket is not certified)"))
        verdict = "is undecided at" if res.certainty == "undecided" else "does not exist at"
        raise ValueError(f"--mechanism tight-constraints {verdict} ε = {eps:g}{per} on the {n:,} answers of {query.name} "
                         f"(adjacent iff |i − j| ≤ {dlt}, ElSalamouny et al. 2014 §7.1; {res.certificate if res.certificate != 'none' else 'no'} "
                         f"certificate, min z = {res.min_z:.3g}): {star}; use a larger --epsilon or "
                         "--mechanism truncated-geometric")
    mech = res.mechanism
    mean, t = mech.accuracy(confidence=confidence)
    answers = []
    # The delivered ε is reported at fixed answers, never at the true one (measured at the true answer's
    # row it printed 2.99999999492 for a sum of 0 and 2.99999999416 for 100: a reading of the data).
    reference = sorted({0, min(dlt, n - 1), n // 2, max(n - 1 - dlt, 0), n - 1})
    delivered = max(mech.delivered_epsilon(y) for y in reference)
    for row in rows:
        grp, val, n_clamped = row[0], int(row[1]), row[-1]
        o, _ = mech.sample_answer(val - lo_a, src.generator)
        answers.append(GroupAnswer(grp, _on_grid(lo_a + o, step), int(n_clamped), mean * step, t * step, confidence))
    optimality = ""
    if prior is not None:
        pi, _ = _answer_prior(prior, n, lo_a, hi_a)
        reg = regularity_sum_line(n, dlt, pi, epsilon=eps_answer)
        verdict = {"exists": "is in", "absent": "is NOT in", "undecided": "could not be placed in or outside"}[reg.status]
        optimality = (f"the prior {verdict} the region of ε·d-regular priors ({reg.certainty}, {reg.certificate}; "
                      "μΦ = π solved matrix-free)")
        optimality += ("; so this mechanism is optimal for it: no ε·d-private mechanism has a larger probability of "
                       "reporting the true answer (binary gain) under it (ElSalamouny et al. 2014 Thm 4)" if reg.status == "exists" else
                       "; ElSalamouny et al. 2014 Thm 4 then makes no optimality claim for it (`--mechanism optimal` may do better)")
    theorem = (f"the tight-constraints mechanism of ElSalamouny et al. 2014 (Def 6, Eq. 12: H(y, o) = z_o·e^(−ε⌈|y−o|/{dlt}⌉), Φz = 1) on the "
               f"sum's answer graph lo..hi = {lo_a}..{hi_a} ({n:,} answers, adjacent iff |i − j| ≤ Δ = {dlt}; ElSalamouny et al. 2014 §7.1); "
               f"ε·d-private by Prop 6 (z ≥ 0 {res.certainty}, {res.certificate}: {res.reason.split('; ', 1)[-1]}), hence ε-DP "
               f"for tables: a changed row moves the answer by at most Δ; optimal for the binary gain for every ε·d-regular "
               f"prior on the answers (ElSalamouny et al. 2014 Thm 4); Δ: {theorem}")
    neighbours, guarantee, public = standard_statement(eps, total, group_by, n_groups, composition)
    accuracy = ("worst case over every true answer in the public range, computed exactly from the mechanism's rows (one FFT "
                "product for all rows): 'expected |error|' = max_y Σ_o H(y, o)·|o − y|, 'within ±' the smallest t with "
                f"P(|error| > t) ≤ {1 - confidence:g} for every true answer")
    r = QueryResult(display_name(table), query.name, "standard", "tight-constraints", eps, float(delta), bounds, where, group_by, answers,
                    src.to_dict(), guarantee=guarantee, theorem=theorem, epsilon_spent=eps,
                    delivered_epsilon=delivered * factor,
                    sampler=("exact: the true answer's row quantised to integers summing to 2^62 (mixed with the uniform "
                             f"distribution at weight {mech.mixing_weight():.3g}), one uniform 62-bit "
                             "integer from the random source; delivered ε measured on the integers against the rows of the "
                             f"adjacent answers, at the answers {', '.join(str(lo_a + y) for y in reference)} (the same "
                             "whatever the data)"),
                    neighbours=neighbours, public="; ".join(public), epsilon_per_answer=eps_answer,
                    composition=composition, answer_range=(lo_a, hi_a), answer_step=step, noise_alpha=math.exp(-eps_answer),
                    accuracy=accuracy, universally_optimal=False, optimality=optimality,
                    solver={"answers": n, "delta": dlt, "method": res.method, "iterations": res.iterations,
                            "certainty": res.certainty, "certificate": res.certificate, "min_z": res.min_z,
                            "error_bound": res.error_bound, "seconds": round(res.elapsed, 3)})
    r.rows_skipped_not_private = invalid
    return r
