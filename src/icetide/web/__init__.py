"""The live web dashboard: a thin adapter over the application layer (``icetide.app``)."""
