"""Physical address -> (channel, rank, bank group, bank, [sub-bank], row, column),
vectorised.

The mapping is a field-order string, most significant field first, e.g.
``ro-ba-bg-ra-co-ch``: the lowest 6 address bits are the byte offset inside a 64-byte
burst, then (reading the string right to left) come the channel bits, the column bits
(one value per burst, so 7 bits for a 1K-column row and BL8), the rank bits, and so on.
With ``xor_bank`` the bank and bank-group bits are XORed with the lowest row bits
(permutation-based interleaving), which spreads row conflicts over banks.

Sub-banks (``spec.subbanks_per_bank`` > 1): the order string may name a sub-bank field
``sb``; without one the sub-bank is the top bits of the row field (the physical halves,
quarters... of the bank). The row is then the row within its sub-bank, and the engine's
"bank" index is the unit that holds a row: ``bank * subbanks_per_bank + subbank``. With
``row_permutation`` the sub-bank index is XORed with the row bits just above those the
bank XOR uses (the lowest row bits without ``xor_bank``).
Reserved locations (in-line ECC keeps its check bytes in the data space): ``reserve =
(field, n)`` lets one field (``co`` or ``ro``) take only its values below ``n``. The
address is then a mixed-radix number, that field of radix ``n`` and every other of its
power of two, so the user's address space shrinks to ``n / 2**width`` of the device's
and no address reaches a reserved location: decoding first spreads the address over
the field's full width (a *device* address with the field below ``n``), then decodes
that as usual.
A device whose row count is not a power of two (DDR5's 24 Gb: 98,304 rows) is the same
mixed-radix number: the row field takes the bits of the next power of two and only its
values below the row count. With the row as the most significant field (the default
order) the spread is the identity on every address within capacity, so decoding is the
power-of-two decode; other orders spread (a division and a modulo per request). Sub-banks
take power-of-two row fields (memsim.config rejects them on such a device).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FIELD_NAMES = {"ch": "channel", "ra": "rank", "bg": "bank group", "ba": "bank",
               "sb": "sub-bank", "ro": "row", "co": "column"}


class AddressError(ValueError):
    """An address that the configured memory cannot hold."""


def _row_width(rows: int) -> int:
    """Bits of the row field: log2 of the row count, rounded up."""
    return (rows - 1).bit_length()


def _bits(n: int, what: str) -> int:
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{what} = {n} is not a power of two")
    return n.bit_length() - 1


@dataclass(frozen=True)
class Decoded:
    bank: np.ndarray  # flat bank index ((ch*R + rank)*BG + bg)*BA + bank; with sub-banks
    #                   the unit: that times subbanks_per_bank, plus the sub-bank
    row: np.ndarray  # row (within its sub-bank)
    column: np.ndarray  # DRAM column address of the burst's first column


class AddressMapping:
    def __init__(self, spec, order: str = "ro-ba-bg-ra-co-ch", xor_bank: bool = False,
                 row_permutation: bool = False, reserve: tuple[str, int] | None = None):
        self.spec = spec
        self.order = order
        self.xor_bank = xor_bank
        self.subbanks = getattr(spec, "subbanks_per_bank", 1)
        self.burst_length = spec.burst_length  # DRAM columns per burst
        self.row_permutation = row_permutation and self.subbanks > 1
        fields = order.split("-")
        sb_bits = _bits(self.subbanks, "sub-banks per bank")
        # a row count that is not a power of two: the row field's radix (module docstring)
        self.rows_radix = bool(spec.rows & (spec.rows - 1))
        if self.rows_radix and self.subbanks > 1:
            raise ValueError(f"sub-banks on a device of {spec.rows} rows (not a power of "
                             f"two) are not modelled")
        self.widths = {
            "ch": _bits(spec.channels, "channels"),
            "ra": _bits(spec.ranks, "ranks"),
            "bg": _bits(spec.bankgroups, "bank groups"),
            "ba": _bits(spec.banks_per_group, "banks per group"),
            "ro": _row_width(spec.rows),
            "co": _bits(spec.bursts_per_row, "bursts per row"),
        }
        self.sb_field = "sb" in fields
        # row bits of a sub-bank; the sub-bank is the ``sb`` field or the row field's top
        self.row_bits = self.widths["ro"] - sb_bits
        if self.sb_field:
            self.widths["sb"] = sb_bits
            self.widths["ro"] = self.row_bits
        self.offset_bits = _bits(spec.burst_bytes, "burst bytes")
        # (field, shift) from the least significant field up
        self.shifts = {}
        shift = self.offset_bits
        for name in reversed(fields):
            self.shifts[name] = shift
            shift += self.widths[name]
        self.capacity_bytes = 1 << shift
        if self.rows_radix:
            if reserve is None:
                reserve = ("ro", spec.rows)
            elif reserve[0] != "ro" or reserve[1] > spec.rows:
                raise ValueError(f"reserve: {reserve!r} on a device of {spec.rows} rows (a "
                                 f"second non-power-of-two field is not modelled)")
            assert (self.capacity_bytes >> self.widths["ro"]) * spec.rows == spec.capacity_bytes
        else:
            assert self.capacity_bytes == spec.capacity_bytes
        self.reserve = reserve
        if reserve is not None:
            name, n = reserve
            if name not in ("co", "ro") or not 0 < n <= 1 << self.widths[name]:
                raise ValueError(f"reserve: {reserve!r} (expected ('co' or 'ro', a count up "
                                 f"to the field's values))")
            self.capacity_bytes = (self.capacity_bytes >> self.widths[name]) * n
        # the spread is the identity when the radix field is the most significant one
        # (every address below capacity has that field's value below its radix)
        self.spread = reserve is not None and reserve[0] != fields[0]
        # row_permutation: the row bits XORed into the sub-bank index
        self.perm_shift = (self.widths["ba"] + self.widths["bg"]) if xor_bank else 0

    @classmethod
    def from_config(cls, cfg, spec) -> AddressMapping:
        """The mapping of ``cfg.mapping`` for the device ``spec`` (with in-line ECC, its
        check bytes' locations are no address's: ``memsim.ecc.reserved_field``)."""
        from memsim.ecc import reserved_field

        m = cfg.mapping
        return cls(spec, m.order, m.xor_bank, m.row_permutation, reserved_field(spec))

    def field(self, addr: np.ndarray, name: str) -> np.ndarray:
        out = addr >> self.shifts[name]
        out &= (1 << self.widths[name]) - 1  # in place: decode runs on every request
        return out

    def _spread(self, addr: np.ndarray) -> np.ndarray:
        """User addresses -> device addresses, the reserved field below its limit."""
        name, n = self.reserve
        s, w = self.shifts[name], self.widths[name]
        q = addr >> s
        return ((q // n) << (s + w)) | ((q % n) << s) | (addr & ((1 << s) - 1))

    def _pack(self, addr: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`_spread`."""
        name, n = self.reserve
        s, w = self.shifts[name], self.widths[name]
        return (((addr >> (s + w)) * n + ((addr >> s) & ((1 << w) - 1))) << s) | (
            addr & ((1 << s) - 1))

    def decode(self, addr: np.ndarray) -> Decoded:
        """Decode byte addresses (int64, already checked against capacity)."""
        addr = np.asarray(addr, dtype=np.int64)
        if self.spread:
            addr = self._spread(addr)
        ch = self.field(addr, "ch")
        ra = self.field(addr, "ra")
        bg = self.field(addr, "bg")
        ba = self.field(addr, "ba")
        ro = self.field(addr, "ro")
        co = self.field(addr, "co")
        if self.xor_bank:
            ba ^= ro & (self.spec.banks_per_group - 1)
            bg ^= (ro >> self.widths["ba"]) & (self.spec.bankgroups - 1)
        s = self.spec
        if self.subbanks > 1:
            if self.sb_field:
                sb = self.field(addr, "sb")
            else:
                sb = ro >> self.row_bits
                ro &= (1 << self.row_bits) - 1
            if self.row_permutation:
                sb ^= (ro >> self.perm_shift) & (self.subbanks - 1)
        # bank = ((ch * ranks + ra) * bankgroups + bg) * banks_per_group + ba, in place
        bank = ch
        bank *= s.ranks
        bank += ra
        bank *= s.bankgroups
        bank += bg
        bank *= s.banks_per_group
        bank += ba
        if self.subbanks > 1:
            bank *= self.subbanks
            bank += sb
        co *= self.burst_length
        return Decoded(bank=bank, row=ro, column=co)

    def encode(self, channel=0, rank=0, bankgroup=0, bank=0, row=0, column=0, subbank=0):
        """Inverse of :meth:`decode` (``column`` in DRAM columns, ``row`` within the
        sub-bank); for tests and generators that target specific banks. Works on scalars
        and arrays."""
        row = np.asarray(row, dtype=np.int64)
        if self.subbanks > 1:
            subbank = np.asarray(subbank, dtype=np.int64)
            if self.row_permutation:
                subbank = subbank ^ ((row >> self.perm_shift) & (self.subbanks - 1))
            if not self.sb_field:
                row = row | (subbank << self.row_bits)
        if self.xor_bank:
            bank = np.asarray(bank) ^ (row & (self.spec.banks_per_group - 1))
            bankgroup = np.asarray(bankgroup) ^ (
                (row >> self.widths["ba"]) & (self.spec.bankgroups - 1))
        values = {"ch": channel, "ra": rank, "bg": bankgroup, "ba": bank, "ro": row,
                  "co": np.asarray(column, dtype=np.int64) // self.burst_length}
        if self.sb_field:
            values["sb"] = subbank
        addr = np.zeros_like(row, dtype=np.int64)
        for name, value in values.items():
            addr = addr | (np.asarray(value, dtype=np.int64) << self.shifts[name])
        if self.reserve is not None:
            name, n = self.reserve
            if (np.asarray(values[name]) >= n).any():
                if self.rows_radix and n == self.spec.rows:
                    raise AddressError(f"row {values[name]}: beyond the device's {n} rows "
                                       f"per bank (rows 0 to {n - 1})")
                raise AddressError(f"{FIELD_NAMES[name]} {values[name]}: reserved (only "
                                   f"the first {n} hold data)")
            if self.spread:
                addr = self._pack(addr)
        return addr

    def check(self, addr: np.ndarray, source: str = "trace", lines=None,
              wrap: bool = False) -> np.ndarray:
        """Return addresses within capacity: wrapped (``wrap``) or else an error that
        names the first offending record."""
        negative = addr < 0
        bad = (addr >= self.capacity_bytes) | negative
        if not bad.any():
            return addr
        i = int(np.argmax(bad))
        where = f"{source}:{int(lines[i])}" if lines is not None else f"{source}[{i}]"
        if negative[i]:
            raise AddressError(f"{where}: negative address {int(addr[i])} (expected a byte "
                               f"address >= 0)")
        if wrap:
            return addr % self.capacity_bytes
        raise AddressError(
            f"{where}: address {int(addr[i]):#x} is beyond the configured capacity "
            f"({self.capacity_bytes:#x} bytes = {self.capacity_bytes / 2**30:g} GiB); use a "
            f"larger configuration or --wrap-addresses")
