"""Private kernels behind the front doors (:func:`dprivacy.tight_constraints`, :func:`dprivacy.regularity`,
:func:`dprivacy.tight_threshold`): the one certified solve of Φ x = b and its sign decision
(:mod:`.phi_solve`), the front doors' choice of path (:mod:`.dispatch`), the closed forms
(:mod:`.closed_form`), and the grid solvers of ElSalamouny et al. 2014 §6 and §7.2 at a million cells: Φ as an FFT
operator (:mod:`.operator`), conjugate gradients with a certified sign test (:mod:`.solve`,
:mod:`.spectrum`), the threshold search on grids (:mod:`.threshold`), regularity on grids
(:mod:`.regularity`), and the implicit (matrix-free) tight-constraints mechanism with its utility,
leakage, privacy certificate and exact sampler (:mod:`.implicit`, :mod:`.maxplus`, :mod:`.sampling`).

Nothing is imported here: import the submodule you need (the front doors import them lazily).
"""
