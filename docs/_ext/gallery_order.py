"""The order of the gallery's examples: the papers' theory first, then the data commands."""

ORDER = [
    "plot_regular_priors.py",
    "plot_tight_vs_geometric.py",
    "plot_optimal_grid.py",
    "plot_leakage_vs_epsilon.py",
    "plot_world_cities.py",
    "plot_superstore_queries.py",
    "plot_glucose_series.py",
]


def example_order(filename: str):
    """Sort key for sphinx-gallery's ``within_subsection_order``: listed examples first, in ORDER."""
    return (ORDER.index(filename), filename) if filename in ORDER else (len(ORDER), filename)
