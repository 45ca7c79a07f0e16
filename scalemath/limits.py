"""A time limit for the SymPy calls that user input reaches (simplify, solve).

In the main thread of a Unix process the call is interrupted by ``SIGALRM``. Anywhere
else (a worker thread, a notebook kernel's executor, a web server) signals cannot
interrupt it, so the call runs in a forked child process that is killed when the time
is up. Either way the caller gets :class:`TimeLimitError` after ``seconds``.

>>> run_limited(sum, [1, 2, 3], seconds=1.0, what="a sum")
6
"""

from __future__ import annotations

import signal
import threading
import warnings
from typing import Any, Callable

from .errors import ScalemathError

__all__ = ["TimeLimitError", "run_limited"]


class TimeLimitError(ScalemathError, TimeoutError):
    """A computation on user input did not finish within its time limit."""


def _alarm_usable() -> bool:
    return (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
            and signal.getitimer(signal.ITIMER_REAL)[0] == 0)


def run_limited(fn: Callable[..., Any], *args: Any, seconds: float, what: str) -> Any:
    """``fn(*args)``, or :class:`TimeLimitError` naming ``what`` if it takes longer than ``seconds``."""
    if _alarm_usable():
        return _with_alarm(fn, args, seconds, what)
    return _in_child(fn, args, seconds, what)


def _timeout(what: str, seconds: float) -> TimeLimitError:
    return TimeLimitError(f"{what} did not finish within {seconds:g} s; "
                          "give numbers with --set, or a simpler expression")


def _with_alarm(fn, args, seconds, what):
    class _Expired(BaseException):  # not an Exception, so SymPy's own except clauses cannot swallow it
        pass

    def expire(signum, frame):
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    except _Expired:
        raise _timeout(what, seconds) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _child(conn, fn, args):
    try:
        conn.send((True, fn(*args)))
    except BaseException as exc:  # sent back to the parent, which re-raises it
        conn.send((False, exc))
    finally:
        conn.close()


def _in_child(fn, args, seconds, what):
    import multiprocessing  # only off the main thread: a command's start-up does not pay for it

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(send, fn, args), daemon=True)
    with warnings.catch_warnings():
        # libraries with threads of their own (JAX) warn at every fork; the child runs only SymPy
        warnings.filterwarnings("ignore", message=r".*fork\(\)", category=RuntimeWarning)
        process.start()
    send.close()
    try:
        if not receive.poll(seconds):
            raise _timeout(what, seconds)
        ok, payload = receive.recv()
    except EOFError:
        raise ScalemathError(f"{what} stopped without an answer") from None
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receive.close()
    if ok:
        return payload
    raise payload
