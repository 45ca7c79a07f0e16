"""Making a set's problems in worker processes, so that a set uses the CPUs the machine gives it.

The problems of a set are independent of one another, and making one (drawing it, solving it by the engine,
checking it by the second route) and rendering its blocks is most of the time a new set takes. The draw
itself stays sequential and in this process (:func:`scalemath.problems.sets.build_set`): it alone decides
which problem a slot gets, redrawing one whose statement repeats an earlier one. Before it runs, workers
make *ahead* the problem each slot gets on its first draw, render its statement and solution in every
format the set will be written in, and draw its figure. The draw then finds them made, and the set is
byte-identical to one made in a single process (a test compares them).

Workers are forked from this process once its modules are imported (nothing is imported again), and only
where forking is safe: on Linux, from a process that runs no other thread. Elsewhere, for one job, or for
a few problems (starting workers would cost more than it saves), everything is made in this process. By default
a set starts no more workers than the machine has idle CPUs (:func:`default_jobs`): on cores other processes keep
busy a worker saves no time, and costs the CPU time of warming its own caches.
A problem a worker fails to make is made again here, which raises the error a single process would.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import pickle
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Sequence

from .. import cache
from . import figures, outfolder, registry, render

__all__ = ["FIGURES_PER_WORKER", "MAX_JOBS", "MIN_PROBLEMS", "can_fork", "default_jobs", "idle_cpus",
           "make_ahead"]

#: The most worker processes a set starts (each holds its own copy of the engine's caches).
MAX_JOBS = 8

#: Fewer problems to make than this are made in this process.
MIN_PROBLEMS = 8

#: A worker that draws figures draws at least this many, or all there are: matplotlib costs about what drawing one
#: and a half does to import (imported in this process before the fork when more than one worker draws).
FIGURES_PER_WORKER = 3

Key = tuple[str, int, str]  # (generator, problem seed, problem id)


def default_jobs() -> int:
    """The CPUs this process may run on that other processes leave idle (:func:`idle_cpus`), at most
    :data:`MAX_JOBS`, and at least one. Workers pay where they get a CPU of their own: on cores other processes keep
    busy, each worker warms its own caches again for no time saved (issue 28 measured two workers adding 31 % wall
    time to a set of 176 on two busy cores)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_JOBS, cpus, idle_cpus()))


def idle_cpus() -> int:
    """About how many of the machine's CPUs no other process is using: all of them less the processes running
    or waiting to run now (Linux: ``/proc/loadavg``'s fourth field, less this process), rounded to the nearest
    whole CPU. The count of this moment, not the load average of the last minute, which still holds a set made a
    moment ago. Where there is no such count, the load average; where there is neither, all of them."""
    total = os.cpu_count() or 1
    try:
        with open(_LOADAVG, encoding="ascii") as fh:
            others = int(fh.read().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        try:
            others = os.getloadavg()[0]
        except (OSError, AttributeError):  # no load average (Windows)
            return total
    return max(0, min(total, int(total - others + 0.5)))


#: Where Linux reports the processes running now (the fourth field: running/all).
_LOADAVG = "/proc/loadavg"


def can_fork() -> bool:
    """Whether workers may be forked from this process: Linux, and no other thread running (a thread holding a
    lock at the fork would leave it locked in the child forever; native threads count too). Asked before the
    generators' modules are imported: those import numpy, whose BLAS starts a thread pool that is safe to fork
    (it stops its threads at a fork, through pthread_atfork), while a thread the caller started may not be."""
    if not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods():
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def make_ahead(keys: Sequence[Key], jobs: int, formats: Sequence[str],
               progress: Callable[[int], None] | None = None) -> set[Key]:
    """Make the problems ``keys`` in up to ``jobs`` workers, with their blocks rendered in ``formats`` (md, tex,
    html) and their figures drawn, and keep them in this process for :func:`registry.made_problem`. Problems the
    persistent cache holds are left to it (reading one back is faster than sending it). Returns the keys made,
    each reported to ``progress`` as it arrives."""
    todo = [k for k in dict.fromkeys(keys) if not registry.in_cache(*k)]
    jobs = min(jobs, len(todo) // (MIN_PROBLEMS // 2) or 1)  # a worker makes half MIN_PROBLEMS or more
    if jobs < 2 or len(todo) < MIN_PROBLEMS or not can_fork():
        return set()
    # what every worker needs, loaded once before the fork: the generators' modules, the templates' environment
    for name in dict.fromkeys(k[0] for k in todo):
        registry.ensure_loaded(name)
    render.prepare_workers()
    # the figures first, in batches of FIGURES_PER_WORKER or more, then one problem a task
    figured = [k for k in todo if figures.has_figure(k[0])]
    batches = max(1, min(jobs, len(figured) // FIGURES_PER_WORKER))
    tasks = [figured[i::batches] for i in range(batches) if figured[i::batches]]
    if len(tasks) > 1:  # several workers draw: matplotlib imported once, here, and shared by them (not once each)
        figures.load_drawing()
    tasks += [[k] for k in todo if not figures.has_figure(k[0])]
    made: set[Key] = set()
    # The ending signals (Ctrl-C, SIGTERM, a closed terminal) are held back for the pool's whole life and looked
    # for between short waits. Raised at any bytecode, they could leave a lock of the pool's or a future's held
    # (as_completed takes every future's lock in turn), and the shutdown would then wait forever for the thread
    # that needs it. Held back, they also reach the workers blocked (the terminal signals every process of its
    # group; the command stops them, and a worker interrupted on its own would print a traceback). One that came
    # is delivered when the block ends, after the workers were stopped, and ends the command as it would have.
    # Until the workers are forked, the objects made so far are frozen out of garbage collection: a collection
    # touches every object it scans, which would copy the memory the workers share with this process page by page.
    with outfolder.signals_held_back():
        others = set(multiprocessing.active_children())  # a caller's own children, never stopped here
        pending: set = set()
        pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"), initializer=_start,
                                   initargs=(tuple(formats), os.getpid()))
        try:
            gc.freeze()
            try:
                pending = {pool.submit(_make, task) for task in tasks}
            finally:
                gc.unfreeze()
            while pending and not _ending_signal():
                done, pending = wait(pending, timeout=_POLL, return_when=FIRST_COMPLETED)
                for future in done:
                    for key, result in future.result():
                        if result is None:
                            continue  # made again by the draw, which raises the error
                        data, blocks, drawn, mathml = result
                        problem = pickle.loads(data)
                        registry.remember(problem)
                        render.remember(problem, blocks, mathml)
                        figures.remember(problem, drawn)
                        made.add(key)
                        if progress is not None:
                            progress(1)
        except BrokenProcessPool:  # a worker was killed (out of memory, a signal): the draw makes the rest here
            pass
        finally:
            if pending:  # stopped by a signal: the workers' problems are not waited for
                for worker in set(multiprocessing.active_children()) - others:
                    worker.terminate()
            pool.shutdown(wait=True, cancel_futures=True)
    return made


#: Seconds between looks for an ending signal while the workers run.
_POLL = 0.05


def _ending_signal() -> bool:
    """Whether an ending signal is waiting to be delivered to this process."""
    return not outfolder.HELD_BACK.isdisjoint(signal.sigpending()) if hasattr(signal, "sigpending") else False


_FORMATS: tuple[str, ...] = ()
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _start(formats: tuple[str, ...], parent: int) -> None:
    global _FORMATS
    _FORMATS = formats
    # a command killed outright (SIGTERM, SIGKILL) takes its workers with it: Linux signals a child whose parent
    # died (prctl PR_SET_PDEATHSIG), and one whose parent died before it asked stops at once
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl to ask (a C library without it): only Ctrl-C stops the workers
        pass
    if os.getppid() != parent:
        os._exit(1)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # a worker can be killed; Ctrl-C stays held


def _make(keys: list[Key]) -> list:
    return [_make_one(key) for key in keys]


def _make_one(key: Key):
    """In a worker: the problem ``key``, pickled as the persistent cache stores it, its rendered blocks, its
    figure's files and the MathML conversions this worker made; None in place of those when it failed."""
    name, seed, pid = key
    try:
        problem = registry.made_problem(name, seed, pid)
        figures.prepare([problem], _FORMATS)  # drawn once for every format, before the blocks ask
        blocks = {(fmt, part): render.render_problem(problem, fmt, part)
                  for fmt in dict.fromkeys(("md",) + _FORMATS) if fmt in render.FORMATS
                  for part in ("statement", "solution")}
        return key, (cache.dumps(problem), blocks, figures.drawn(problem, _FORMATS), render.new_mathml())
    except Exception:  # noqa: BLE001 - the draw makes it again in the parent, and reports the error there
        return key, None
