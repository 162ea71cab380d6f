"""One way to try again: every retry loop of icetide is a tenacity ``Retrying`` built here.

As dlt composes ``Retrying(wait=..., retry=..., stop=...)``, a caller states what it
retries, how long it waits and when it gives up::

    retrying(KafkaException, wait=backoff(0.2, 30.0), stop=patience(300.0),
             give_up=lambda f: SourceUnavailableError(f"... {f.attempts} attempts ..."),
             on_retry=lambda f, wait: log.warning("...; retry %d in %.1fs", f.attempts, wait),
             )(fetch)

Every wait goes through :func:`icetide.runtime.interrupt.pause`, and a stop request ends
the retrying at the next failure: a run that is backing off from an unreachable broker
or database, or from a writer it conflicts with, still stops within a second
(:class:`~icetide.runtime.interrupt.Interrupted`).

Waiting for something to become ready (a server icetide started, a socket to close, a
worker to register) is the same loop with a result instead of an error to retry on:
:func:`wait_until` polls a predicate within a bound and raises
:class:`~icetide.errors.NotReadyError`, naming what and after how long, when the bound
passes. No other module of icetide sleeps in a loop of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn, TypeVar, cast

from tenacity import (
    AttemptManager,
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    retry_if_result,
    stop_after_delay,
    stop_before_delay,
    stop_never,
    wait_exponential,
    wait_fixed,
)
from tenacity.nap import sleep as plain_sleep
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from icetide.errors import NotReadyError
from icetide.runtime.interrupt import Interrupted, pause, stop_requested

__all__ = ["Failure", "backoff", "patience", "restart", "retrying", "stop_after_counted",
           "wait_until"]

_Ready = TypeVar("_Ready")

#: What is retried: exception classes, or a predicate on the exception.
RetryOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]


@dataclass(frozen=True)
class Failure:
    """The latest failure: its error, the attempts made so far and the seconds since the
    first of them."""

    error: BaseException
    attempts: int
    waited: float


def backoff(initial: float = 0.2, maximum: float = 30.0) -> wait_base:
    """Exponential backoff: ``initial`` seconds, doubling per failure, at most ``maximum``."""
    return wait_exponential(multiplier=initial, exp_base=2, max=maximum)


def patience(seconds: float | None) -> stop_base:
    """Give up rather than wait past ``seconds`` of retrying (``None``: never give up)."""
    return stop_never if seconds is None else stop_before_delay(seconds)


def stop_after_counted(limit: int, counted: Callable[[BaseException], bool]) -> stop_base:
    """Give up after ``limit`` retries of failures that ``counted`` accepts; others are
    retried without limit. A new one per :func:`retrying` (it keeps the count)."""
    return _CountedStop(limit, counted)


class _CountedStop(stop_base):
    def __init__(self, limit: int, counted: Callable[[BaseException], bool]) -> None:
        self.limit = limit
        self.counted = counted
        self.seen = 0

    def __call__(self, retry_state: RetryCallState) -> bool:
        error = _error(retry_state)
        if self.counted(error):
            self.seen += 1
        return self.seen > self.limit


def _error(state: RetryCallState) -> BaseException:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    if error is None:  # retrying() retries exceptions only
        raise RuntimeError("a retry without an exception")
    return error


def _failure(state: RetryCallState) -> Failure:
    return Failure(_error(state), state.attempt_number, state.seconds_since_start or 0.0)


def _retry_condition(retry_on: RetryOn) -> Callable[[RetryCallState], bool]:
    if isinstance(retry_on, type | tuple):
        return retry_if_exception_type(retry_on)
    return retry_if_exception(retry_on)


def retrying(retry_on: RetryOn, *, wait: wait_base, stop: stop_base = stop_never,
             give_up: Callable[[Failure], BaseException] | None = None,
             on_retry: Callable[[Failure, float], None] | None = None) -> Retrying:
    """A tenacity ``Retrying`` that retries what ``retry_on`` names, waiting ``wait``
    (interruptibly), until ``stop``; then raises ``give_up(failure)`` (chained to the last
    error), or the last error itself. ``on_retry(failure, seconds)`` runs before each wait.

    A stop request (:func:`~icetide.runtime.interrupt.request_stop`) ends it: the wait
    raises :class:`Interrupted`, and so does the next failure once a stop is requested.
    Call the result with the function to try, or iterate it (``for attempt in ...: with
    attempt: ...``) around a block — a generator's, say.
    """

    def stopping(state: RetryCallState) -> bool:
        return stop_requested() or stop(state)

    def gave_up(state: RetryCallState) -> NoReturn:
        failure = _failure(state)
        if stop_requested():
            raise Interrupted() from failure.error
        if give_up is None:
            raise failure.error
        raise give_up(failure) from failure.error

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is not None:
            on_retry(_failure(state), state.upcoming_sleep)

    return Retrying(retry=_retry_condition(retry_on), wait=wait, stop=stopping, sleep=pause,
                    before_sleep=before_sleep, retry_error_callback=gave_up)


def restart(attempt: AttemptManager) -> None:
    """Count this (failed) attempt as the first: a caller that made progress before it
    failed backs off and measures its patience afresh from here."""
    state = attempt.retry_state
    state.attempt_number = 1
    state.start_time = state.outcome_timestamp or state.start_time


def wait_until(ready: Callable[[], _Ready | None], *, timeout: float, what: str,
               interval: float | wait_base = 0.1,
               ignoring: type[BaseException] | tuple[type[BaseException], ...] = (),
               detail: Callable[[], str] | None = None,
               interruptible: bool = True) -> _Ready:
    """Call ``ready`` every ``interval`` seconds (or as a tenacity wait says) until it
    returns something truthy, and return that; an error it raises ends the wait, except
    ``ignoring`` ones, which count as "not yet".

    After ``timeout`` seconds raise :class:`~icetide.errors.NotReadyError` naming ``what``
    (``"the metastore at thrift://..."``), the seconds waited, the last ignored error and
    ``detail()`` (where to look: a log's last lines), chained to that error. A stop request
    ends the wait with :class:`Interrupted`, unless ``interruptible`` is false: a wait
    that finishes work already under way (a batch's commit, a server's shutdown).
    """

    def gave_up(state: RetryCallState) -> NoReturn:
        if interruptible and stop_requested():
            raise Interrupted()
        error = state.outcome.exception() if state.outcome is not None else None
        notes = [f"last: {error}"] if error is not None else []
        notes += [detail()] if detail is not None else []
        raise NotReadyError(what, state.seconds_since_start or 0.0,
                            "; ".join(notes)) from error

    bound = stop_after_delay(timeout)

    def stopping(state: RetryCallState) -> bool:
        return (interruptible and stop_requested()) or bound(state)

    wait = interval if isinstance(interval, wait_base) else wait_fixed(interval)
    result = Retrying(retry=retry_if_result(lambda value: not value)
                      | retry_if_exception_type(ignoring),
                      wait=wait, stop=stopping, sleep=pause if interruptible else plain_sleep,
                      retry_error_callback=gave_up)(ready)
    return cast(_Ready, result)  # truthy: a None was retried
