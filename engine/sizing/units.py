"""Units used across the sizing package.

Memory is computed in bytes and reported in GB, where **1 GB = 1e9 bytes** (decimal, as in the API's
``_gb`` fields and as GPU vendors quote HBM capacity). Some tools (DeepSpeed's estimator, guide G2's code)
print GiB (2**30 bytes) labelled "GB"; :data:`GIB` converts those for comparison (1 GiB = 1.0737 GB).
Bandwidth is bytes per second (1 GB/s = 1e9 bytes/s); compute is FLOP per second (1 TFLOPS = 1e12).
"""

from __future__ import annotations

from engine.sizing._checks import check_non_negative

__all__ = [
    "GB",
    "GIB",
    "HOURS_PER_MONTH",
    "HOURS_PER_YEAR",
    "SECONDS_PER_HOUR",
    "TB",
    "TFLOPS",
    "bytes_to_gb",
    "gb_to_bytes",
]

GB: float = 1e9
"""Bytes in one GB (decimal gigabyte)."""

TB: float = 1e12
"""Bytes in one TB (decimal terabyte); 1 TB/s = 1e12 bytes/s."""

GIB: float = float(2**30)
"""Bytes in one GiB (binary gibibyte)."""

TFLOPS: float = 1e12
"""FLOP per second in one TFLOPS."""

SECONDS_PER_HOUR: float = 3600.0

HOURS_PER_YEAR: float = 365.0 * 24.0
"""8,760 h: a 365-day year, the convention of guide G2's cost code (``365 * 24 * 3600`` seconds)."""

HOURS_PER_MONTH: float = HOURS_PER_YEAR / 12.0
"""730 h: a twelfth of that year, what a month of rent and a horizon in months are counted in."""


def bytes_to_gb(n_bytes: float) -> float:
    """Bytes to GB: ``n_bytes / 1e9``. Units: bytes in, GB (1e9 bytes) out."""
    return check_non_negative("n_bytes", n_bytes) / GB


def gb_to_bytes(gb: float) -> float:
    """GB to bytes: ``gb * 1e9``. Units: GB (1e9 bytes) in, bytes out."""
    return check_non_negative("gb", gb) * GB
