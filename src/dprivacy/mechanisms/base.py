"""The Mechanism object, at its public path: :mod:`dprivacy.channels.mechanism` defines it, below the measures and
kernels that use it, and this module re-exports it for the mechanism constructors."""

from ..channels.mechanism import (BASES, DenseMechanism, LogEntries, LogMechanism, Mechanism, PrivacyCertificate,
                                  as_mechanism, built, built_from_log, by_construction, checked_certificate,
                                  log_underflows)

__all__ = ["BASES", "DenseMechanism", "LogEntries", "LogMechanism", "Mechanism", "PrivacyCertificate", "as_mechanism",
           "built", "built_from_log", "by_construction", "checked_certificate", "log_underflows"]
