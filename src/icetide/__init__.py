"""icetide: a near-real-time lakehouse for user-behaviour analytics on Spark and Iceberg."""

from icetide.errors import IcetideError

__version__ = "0.1.0"
__all__ = ["IcetideError", "__version__"]
