"""Experiments: one module per paper (``seedNNN.py``), each registering the tables, figures and
numeric claims it recomputes. Nothing outside this package imports from it."""
