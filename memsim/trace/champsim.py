"""ChampSim's binary instruction traces: one 64-byte ``input_instr`` record per
instruction (ChampSim's ``inc/trace_instruction.h``), usually xz-compressed.

A record, little-endian::

    offset  size  field
         0     8  ip                        the instruction's address
         8     1  is_branch                 0 or 1
         9     1  branch_taken              0 or 1 (1 only for a branch)
        10     2  destination_registers[2]  register ids, 0 = none
        12     4  source_registers[4]
        16    16  destination_memory[2]     addresses stored to, 0 = none
        32    32  source_memory[4]          addresses loaded from, 0 = none

Each record is one instruction: its loads (the non-zero source addresses, in order),
then its stores (the destination ones). Sizes are not recorded; as in ChampSim, each
address is one access within one cache line. With instruction fetches asked for, the
instruction's ``ip`` is fetched first. A record whose branch flags are not 0/1 (or
that is taken without being a branch), an address of 2**63 or more, or a file that
ends inside a record is an error naming the record.
"""

from __future__ import annotations

import numpy as np

from .errors import file_error
from .instrchunk import IFETCH, LOAD, STORE, InstrChunk

NAME = "champsim"
RECORD_BYTES = 64
RECORD = np.dtype([("ip", "<u8"), ("is_branch", "u1"), ("branch_taken", "u1"),
                   ("dst_reg", "u1", 2), ("src_reg", "u1", 4), ("dst_mem", "<u8", 2),
                   ("src_mem", "<u8", 4)])
assert RECORD.itemsize == RECORD_BYTES
_OPERAND_KINDS = np.array([LOAD] * 4 + [STORE] * 2, dtype=np.uint8)
_TOP_BIT = np.uint64(1 << 63)


def problems(records: np.ndarray) -> np.ndarray:
    """For each record, whether it breaks the format's rules."""
    branch, taken = records["is_branch"], records["branch_taken"]
    bad = (branch > 1) | (taken > 1) | (taken > branch)
    bad |= (records["ip"] & _TOP_BIT) != 0
    bad |= ((records["src_mem"] & _TOP_BIT) != 0).any(axis=1)
    bad |= ((records["dst_mem"] & _TOP_BIT) != 0).any(axis=1)
    return bad


def explain(record: np.void) -> str:
    """Why a record breaks the format's rules (``problems``)."""
    branch, taken = int(record["is_branch"]), int(record["branch_taken"])
    if branch > 1:
        return f"is_branch is {branch} (expected 0 or 1)"
    if taken > 1:
        return f"branch_taken is {taken} (expected 0 or 1)"
    if taken > branch:
        return "branch_taken is 1 but is_branch is 0"
    for field in ("ip", "dst_mem", "src_mem"):
        for value in np.atleast_1d(record[field]):
            if int(value) >= 1 << 63:
                return f"{field} {int(value):#x} is not a user-space address (2**63 or more)"
    return "malformed record"


def describe(record: np.void) -> str:
    """A record as shown in a message."""
    sources = ",".join(f"{int(a):#x}" for a in record["src_mem"] if a)
    dests = ",".join(f"{int(a):#x}" for a in record["dst_mem"] if a)
    return (f"ip={int(record['ip']):#x} branch={int(record['is_branch'])}/"
            f"{int(record['branch_taken'])} loads=[{sources}] stores=[{dests}]")


class ChampSimParser:
    """Parses the bytes of one ChampSim trace in order, a block at a time."""

    format = NAME
    title = "ChampSim"
    has_ifetch = True
    has_roi = False

    def __init__(self, name: str, roi: bool = False, ifetch: bool = False):
        self.name = name
        self.ifetch = ifetch
        self.carry = b""
        self.instructions = self.total_instructions = 0
        self.records = 0

    def parse(self, block: bytes) -> InstrChunk:
        data = self.carry + block if self.carry else block
        whole = len(data) // RECORD_BYTES * RECORD_BYTES
        self.carry = data[whole:]
        records = np.frombuffer(data, dtype=RECORD, count=whole // RECORD_BYTES)
        bad = problems(records)
        if bad.any():
            index = int(np.argmax(bad))
            raise file_error(self.name, f"record {self.records + index + 1} "
                                        f"({describe(records[index])}): "
                                        f"{explain(records[index])}")
        first = self.records
        n = len(records)
        operands = np.concatenate([records["src_mem"], records["dst_mem"]], axis=1)
        kinds = np.broadcast_to(_OPERAND_KINDS, operands.shape)
        if self.ifetch:
            operands = np.concatenate([records["ip"][:, None], operands], axis=1)
            kinds = np.concatenate([np.full((n, 1), IFETCH, np.uint8), kinds], axis=1)
        used = operands != 0
        if self.ifetch:
            used[:, 0] = True
        row = np.broadcast_to(np.arange(n)[:, None], operands.shape)[used]
        self.records += n
        self.instructions = self.total_instructions = self.records
        return InstrChunk(kind=kinds[used], addr=operands[used].astype(np.int64),
                          size=np.zeros(len(row), np.int32),
                          pc=records["ip"][row].astype(np.int64), inst=first + row,
                          counted=np.ones(len(row), dtype=bool),
                          record=first + row + 1)

    def finish(self) -> None:
        if self.carry:
            raise file_error(self.name, f"record {self.records + 1} is truncated: the file "
                                        f"ends {len(self.carry)} bytes into it (a record is "
                                        f"{RECORD_BYTES} bytes)")
        if self.records == 0:
            raise file_error(self.name, "trace has no ChampSim records (the file is empty)")


def plausible(head: bytes, sample: int = 1000) -> bool:
    """Whether ``head`` (binary data from the start of a file) reads as ChampSim
    records: at least one whole record, and nine in ten of the first ``sample`` keep the
    format's rules with a non-zero ip (a bad one is then reported by the reader)."""
    count = min(len(head) // RECORD_BYTES, sample)
    if count == 0:
        return False
    records = np.frombuffer(head, dtype=RECORD, count=count)
    good = ~problems(records) & (records["ip"] != 0)
    return np.count_nonzero(good) >= 0.9 * count
