"""One mechanism for the threaded numba kernels: a parallel and a serial build of the
same source, chosen by the amount of work of each call."""

import types

from numba import njit

__all__ = ["SERIAL_WORK", "ROW_SUM_FASTMATH", "threaded"]

#: Below this many multiply-adds a kernel runs on the calling thread only. With the
#: other core idle the parallel build already wins at 2·10⁴ (11 vs 14 µs a call;
#: 1.9× at 3·10⁵), but with the other core busy a call waits for a preempted worker
#: (~10 ms a call, measured on PCMAC-sized graphs) — so small calls stay serial.
SERIAL_WORK = 1 << 18


def _renamed_copy(pyfunc, suffix):
    """The same Python function under another (qualified) name.

    numba's on-disk cache files a compiled function under its module, qualified
    name and line, and the index key holds the signature but not the compile
    options (numba issue #6845): compiling one function both with and without
    ``parallel=True`` lets either build be loaded for the other — the parallel
    build then runs on one thread.  The serial build gets its own name, so its
    cache entries are its own.
    """
    copy = types.FunctionType(pyfunc.__code__, pyfunc.__globals__, pyfunc.__name__ + suffix,
                              pyfunc.__defaults__, pyfunc.__closure__)
    copy.__qualname__ = pyfunc.__qualname__ + suffix
    copy.__doc__ = pyfunc.__doc__
    return copy


#: Floating-point licence for the kernels that sum along CSR rows: reassociating
#: the sum (and fusing multiply-adds) lets LLVM split it over several accumulators
#: instead of one chain of dependent additions — 7–20 % faster passes over X and
#: the graph; the sums change in the last bits only.
ROW_SUM_FASTMATH = frozenset({"reassoc", "contract"})


def threaded(pyfunc=None, *, fastmath=False, serial_work=None):
    """Compile ``pyfunc`` twice — parallel (prange) and serial — and dispatch on size.

    The returned function takes the kernel's arguments plus ``work=`` (an estimate
    of the multiply-adds; None means large) and runs the serial build below its
    ``serial_work`` attribute (None: ``SERIAL_WORK``).  ``fastmath`` is passed to both
    builds.
    """
    if pyfunc is None:
        return lambda f: threaded(f, fastmath=fastmath, serial_work=serial_work)
    fm = set(fastmath) if fastmath else False
    parallel = njit(parallel=True, cache=True, nogil=True, fastmath=fm)(pyfunc)
    serial = njit(cache=True, nogil=True, fastmath=fm)(_renamed_copy(pyfunc, "_serial"))

    def kernel(*args, work=None):
        limit = SERIAL_WORK if kernel.serial_work is None else kernel.serial_work
        run = serial if work is not None and work < limit else parallel
        return run(*args)

    kernel.__name__ = pyfunc.__name__
    kernel.__doc__ = pyfunc.__doc__
    kernel.parallel, kernel.serial = parallel, serial
    kernel.serial_work = serial_work
    return kernel

