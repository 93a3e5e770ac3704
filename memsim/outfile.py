"""Output files written whole or not at all, to the place the user meant.

Every file memsim writes (results, command logs, traces, figures, sweep tables) goes
through :class:`OutputFile` (whole files: :func:`atomic_write`):

* A regular file (or a new name) is written under a temporary name in the same
  directory and renamed over the target on :meth:`~OutputFile.commit`, so a crash or
  Ctrl-C never leaves a half-written file and the previous file survives until then.
  Missing parent directories are created.
* A symbolic link is followed: the file it points to is written (as above) and the
  link stays a link.
* A device, FIFO or socket (``/dev/null``, ``/dev/stdout``, a named pipe) is written
  through directly; it is never replaced by a regular file.
* A directory is an error.

New files get the permissions ``0666 & ~umask`` (like ``open()``); a replaced regular
file keeps its permissions. Temporary files not yet committed are listed, so that a
process stopped by a signal can delete them (:func:`discard_open`, used by
:mod:`memsim.signals`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

# Temporary files of OutputFiles being written in this process.
_OPEN: set[Path] = set()


def discard_open() -> None:
    """Delete the temporary files of every OutputFile still being written (for a process
    that is about to end without unwinding)."""
    for tmp in list(_OPEN):
        with contextlib.suppress(OSError):
            tmp.unlink()
    _OPEN.clear()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def resolve(path) -> Path:
    """Where writing ``path`` ends up: symbolic links followed (even a dangling one)."""
    return Path(os.path.realpath(os.fspath(path)))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return resolve(a) == resolve(b)


def refuse_inputs(outputs: Iterable[tuple[str, object]], inputs: Iterable[object]) -> None:
    """Raise ValueError if an output (option name, path) would overwrite an input file
    or another output. ``None`` paths are ignored."""
    ins = [Path(os.fspath(p)) for p in inputs if p is not None]
    seen: list[tuple[str, Path]] = []
    for option, out in outputs:
        if out is None:
            continue
        p = Path(os.fspath(out))
        if p.exists() and not p.is_dir() and not p.resolve().is_file():
            continue  # a device or FIFO: writing it replaces nothing
        for src in ins:
            if src.exists() and _same_file(p, src):
                raise ValueError(f"{option} {out}: that is the input file {src}; refusing "
                                 f"to overwrite it")
        for other_option, other in seen:
            if resolve(p) == resolve(other):
                raise ValueError(f"{option} {out}: {other_option} writes the same file")
        seen.append((option, p))


class OutputFile:
    """A binary file being written to ``path``; see the module docstring.

    Use as a context manager (commits on success, discards on any exception), or call
    :meth:`commit` / :meth:`discard` yourself. ``file`` is the binary file object."""

    def __init__(self, path):
        self.path = Path(os.fspath(path))
        target = resolve(self.path)
        self.tmp: Path | None = None
        if target.is_dir():
            raise ValueError(f"{self.path}: is a directory, not a file")
        if target.exists() and not target.is_file():
            # device, FIFO, socket: write through, never replace
            self.target = target
            self.file: BinaryIO = open(target, "wb")  # noqa: SIM115 - closed in commit
            return
        self.target = target
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        fd = self._create(target)
        with contextlib.suppress(OSError):
            os.fchmod(fd, mode)
        self.file = os.fdopen(fd, "wb")

    def _create(self, target: Path) -> int:
        """Create ``.NAME.RANDOM.partial`` beside the target as ``tempfile.mkstemp``
        would (exclusively, mode 0600, not inherited by child processes), but registered
        for :func:`discard_open` before it exists: a signal's Python handler runs between
        two bytecodes, and with ``mkstemp`` one could run after the file was created and
        before it was registered, leaving it behind."""
        flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))
        while True:
            self.tmp = target.parent / f".{target.name}.{os.urandom(4).hex()}.partial"
            _OPEN.add(self.tmp)
            try:
                return os.open(self.tmp, flags, 0o600)
            except FileExistsError:
                _OPEN.discard(self.tmp)

    @property
    def special(self) -> bool:
        """True when writing through to a device or FIFO (no rename)."""
        return self.tmp is None

    def commit(self) -> None:
        """Close the file and put it in place."""
        self.file.close()
        if self.tmp is not None:
            os.replace(self.tmp, self.target)
            _OPEN.discard(self.tmp)
            self.tmp = None

    def discard(self) -> None:
        """Close and delete what was written (a device or FIFO is just closed)."""
        with contextlib.suppress(OSError):
            self.file.close()
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
            _OPEN.discard(self.tmp)
            self.tmp = None

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


@contextlib.contextmanager
def writing(path) -> Iterator[BinaryIO]:
    """``with writing(path) as f: f.write(b"...")``: an :class:`OutputFile`'s file."""
    with OutputFile(path) as out:
        yield out.file


def atomic_write(path, data: str | bytes) -> None:
    """Write ``data`` (text is UTF-8 encoded) to ``path`` whole or not at all: the one
    writer of every memsim output file (see the module docstring for symbolic links,
    devices, FIFOs, missing directories and permissions)."""
    with writing(path) as f:
        f.write(data.encode() if isinstance(data, str) else data)


def write_bytes(path, data: bytes) -> None:
    """:func:`atomic_write` of bytes."""
    atomic_write(path, data)


def write_text(path, text: str) -> None:
    """:func:`atomic_write` of text."""
    atomic_write(path, text)
