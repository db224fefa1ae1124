"""Data commands' library layer: reading and writing tables of points (:mod:`.io`) and geo-
indistinguishability for real locations (:mod:`.locations`)."""
