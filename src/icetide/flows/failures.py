"""How a flow's failure is told: the error that stops it, and one line per cause."""

from __future__ import annotations

from icetide.errors import IcetideError


class FlowFailed(IcetideError):
    """A flow's batches failed ``failures`` times in a row (not a transient outage)."""

    def __init__(self, flow: str, failures: int, cause: BaseException) -> None:
        super().__init__(
            f"flow {flow!r} stopped after {failures} failed batches in a row: "
            f"{describe_error(cause)} (fix the flow's code or data, then run again; "
            "flows.max_failures sets how many tries)"
        )
        self.flow = flow


def describe_error(exc: BaseException) -> str:
    """One line saying what went wrong: for a JVM error its root cause (the py4j wrapper
    only says which method was called)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            while java.getCause() is not None:
                java = java.getCause()
            return str(java.toString())[:500]
        except Exception:  # the gateway may be gone: fall back to the Python text
            pass
    first = (str(exc).strip().splitlines() or [""])[0][:500]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
