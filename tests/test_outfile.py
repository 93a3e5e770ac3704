"""``memsim.outfile.atomic_write``: the one writer of whole output files (results JSON
and CSV, sweep tables and manifests, stored runs), with the behaviour that
docs/reference/running.md ("Outputs") promises: parent directories created, a symbolic
link's target written, a FIFO written through, the umask respected, nothing
half-written left behind."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from memsim import outfile, results, sweep
from memsim.outfile import atomic_write


def test_one_atomic_write_for_the_package():
    assert results.atomic_write is atomic_write
    assert sweep.atomic_write is atomic_write


def test_text_and_bytes(tmp_path):
    atomic_write(tmp_path / "t.txt", "grün\n")
    atomic_write(tmp_path / "b.bin", b"\x00\xff")
    assert (tmp_path / "t.txt").read_bytes() == "grün\n".encode()
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff"


def test_missing_parent_directories_are_created(tmp_path):
    atomic_write(tmp_path / "a" / "b" / "r.json", "{}\n")
    assert (tmp_path / "a" / "b" / "r.json").read_text() == "{}\n"


def test_a_symlinks_target_is_written_and_the_link_stays(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "r.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    # a dangling link: its target is created
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "real" / "new.csv")
    atomic_write(dangling, "x,y\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "new.csv").read_text() == "x,y\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == [
        "dangling.csv", "link.json", "new.csv", "r.json", "real"]


def test_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = {}

    def read():
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    reader = threading.Thread(target=read)
    reader.start()
    atomic_write(fifo, "through the pipe\n")
    reader.join(timeout=30)
    assert got["data"] == b"through the pipe\n"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.fifo"]


def test_a_device_is_written_through():
    # /dev/null stays a character device (replacing it would need root, and must not
    # happen even then: the write goes through)
    atomic_write("/dev/null", "nothing\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_get_0666_less_the_umask_replaced_files_keep_their_mode(tmp_path, umask):
    old = os.umask(umask)
    try:
        atomic_write(tmp_path / "new.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o666 & ~umask
    os.chmod(tmp_path / "new.json", 0o640)
    atomic_write(tmp_path / "new.json", "{\"a\": 1}")
    assert stat.S_IMODE(os.stat(tmp_path / "new.json").st_mode) == 0o640


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match=f"^{tmp_path}: is a directory, not a file$"):
        atomic_write(tmp_path, "x")


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    out = tmp_path / "keep.json"
    out.write_text("previous")
    with pytest.raises(TypeError), outfile.writing(out) as f:
        f.write("text into a binary file")  # (fails half-way through the with block)
    assert out.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.json"]


def test_a_signal_just_as_the_partial_file_is_created_still_gets_it_deleted(
        tmp_path, monkeypatch):
    """SIGTERM arriving right after the ``.partial`` file exists (before the writer has
    registered it for deletion) must not leave it behind: `memsim trace gen` stopped at
    that moment by a loaded machine's timing once did."""
    import signal

    from memsim.signals import Terminated, terminate_as_interrupt

    real = os.open

    def open_then_sigterm(*args, **kwargs):
        created = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # (the handler runs at the next bytecode)
        return created

    monkeypatch.setattr(outfile.os, "open", open_then_sigterm)
    with pytest.raises(Terminated), terminate_as_interrupt():
        outfile.OutputFile(tmp_path / "out.csv")
    outfile.discard_open()  # (what the command line does on a signal)
    assert list(tmp_path.iterdir()) == []
