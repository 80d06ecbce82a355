"""Run a build step over many inputs on every core, in worker processes, results in order."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

I = TypeVar("I")  # noqa: E741
R = TypeVar("R")

PARALLEL_FROM = 400
"""Fewer inputs than this are handled in the build's own process: starting a worker (a fresh
interpreter that imports the step and loads the tokenizer) costs about a second."""
BATCH = 16  # inputs sent to a worker at a time


def worker_count() -> int:
    """Worker processes to use: the cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows
        return os.cpu_count() or 1


def ordered_map(
    function: Callable[[I], R],
    inputs: list[I],
    setup: Callable[..., None],
    setup_args: tuple[object, ...] = (),
    workers: int | None = None,
) -> Iterator[R]:
    """``function`` over ``inputs`` in order, after ``setup(*setup_args)`` in each process.

    With one core or few inputs everything runs here; otherwise in ``workers`` fresh processes
    (spawned, not forked: the build holds threads and open databases a fork would copy).
    ``function`` and ``setup`` must be module-level functions; a worker that raises stops the map
    with its exception.
    """
    workers = workers or worker_count()
    if workers < 2 or len(inputs) < PARALLEL_FROM:
        setup(*setup_args)
        yield from map(function, inputs)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, context, initializer=setup, initargs=setup_args) as pool:
        yield from pool.map(function, inputs, chunksize=BATCH)
