"""The data API: releases from Python, on the objects a data scientist holds.

``dp.obfuscate``, ``dp.evaluate``, ``dp.query``, ``dp.release_series`` and ``dp.Budget`` take a pandas or polars
DataFrame, a GeoPandas GeoDataFrame, a pyarrow Table, a Dask DataFrame (obfuscate, query) or a path, and return the
same kind of object with a result that holds the guarantee, the random source, the counts and the sidecar. This
layer sits between the data layer (:mod:`dprivacy.data`, which reads, releases and writes files) and the command
line, which calls it: every refusal of the command line is made here, with the same sentence.
"""

from .budget import Budget
from .frames import OptionError
from .locations import evaluate, obfuscate
from .query import query
from .results import DataResult, QueryAnswer
from .series import release_series

__all__ = ["Budget", "DataResult", "OptionError", "QueryAnswer", "evaluate", "obfuscate", "query", "release_series"]
