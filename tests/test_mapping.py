"""Address mapping: field layout, encode/decode round trips, capacity errors and wrapping."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import resolve, run_logged
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.mapping import AddressError, AddressMapping
from memsim.sim import run, run_arrays

FIELDS = ("ro", "ba", "bg", "ra", "co", "ch")
ORDERS = ["ro-ba-bg-ra-co-ch", "ro-ra-ba-bg-co-ch", "ch-ra-ro-bg-ba-co", "co-ro-ch-ba-ra-bg",
          "ra-ch-co-bg-ro-ba"]
SYSTEMS = [
    ("ddr4_2400_x8_1ch1r", ()),
    ("ddr4_3200_x8_2ch2r", ()),
    ("ddr4_2400_x8_1ch1r", ("dram.org=x16", "dram.ranks=4", "dram.density_gbit=4")),
    ("ddr4_2400_x8_1ch1r", ("dram.org=x4", "dram.channels=4", "dram.density_gbit=16")),
]


def split(mapping: AddressMapping, decoded):
    """Flat bank index -> (channel, rank, bank group, bank)."""
    s = mapping.spec
    b = np.asarray(decoded.bank)
    per_rank = s.bankgroups * s.banks_per_group
    return (b // (s.ranks * per_rank), (b // per_rank) % s.ranks,
            (b // s.banks_per_group) % s.bankgroups, b % s.banks_per_group)


def test_default_layout_of_the_default_preset():
    # ro-ba-bg-ra-co-ch on 1 channel, 1 rank, x8 8 Gb: byte offset 6 bits, column 7 bits
    # (1K columns / BL8), no rank or channel bits, bank group 2, bank 2, row 16 bits
    _, spec, m = resolve()
    assert m.shifts == {"ch": 6, "co": 6, "ra": 13, "bg": 13, "ba": 15, "ro": 17}
    assert m.widths == {"ch": 0, "ra": 0, "bg": 2, "ba": 2, "ro": 16, "co": 7}
    assert m.capacity_bytes == 1 << 33 == spec.capacity_bytes
    # consecutive 64 B lines walk the columns of one row; 8 KiB later the bank group moves
    d = m.decode(np.arange(0, 8192, 64))
    assert (d.bank == 0).all() and (d.row == 0).all()
    assert d.column.tolist() == list(range(0, 1024, 8))
    # bank group 1, bank 0: flat bank 1 * banks_per_group + 0
    assert m.decode(np.array([8192])).bank.tolist() == [spec.banks_per_group]


def test_flat_bank_index_counts_banks_within_a_group_first():
    _, spec, m = resolve()
    # bank group 1, bank 0 is flat bank 1 * banks_per_group + 0
    addr = m.encode(bankgroup=1, bank=0)
    assert int(m.decode(np.array([addr])).bank[0]) == spec.banks_per_group
    addr = m.encode(bankgroup=0, bank=1)
    assert int(m.decode(np.array([addr])).bank[0]) == 1


def test_channel_bits_are_lowest_on_the_two_channel_preset():
    _, _, m = resolve("ddr4_3200_x8_2ch2r")
    ch, ra, _, _ = split(m, m.decode(np.arange(8) * 64))
    assert ch.tolist() == [0, 1] * 4 and (ra == 0).all()


def test_xor_bank_permutes_banks_with_low_row_bits():
    _, _, plain = resolve()
    _, _, xor = resolve(None, ["mapping.xor_bank=true"])
    row = 0b1110  # low 2 bits (banks per group) 0b10, next 2 (bank groups) 0b11
    addr = plain.encode(bankgroup=0, bank=0, row=row)
    _, _, bg, ba = split(xor, xor.decode(np.array([addr])))
    assert (int(bg[0]), int(ba[0])) == (0b11, 0b10)
    # rows that differ only above those bits keep the permutation
    assert int(xor.decode(np.array([plain.encode(row=row + 16)])).bank[0]) == int(
        xor.decode(np.array([addr])).bank[0])


@settings(max_examples=40, deadline=None)
@given(system=st.sampled_from(SYSTEMS), order=st.sampled_from(ORDERS), xor=st.booleans(),
       data=st.data())
def test_encode_decode_round_trip(system, order, xor, data):
    preset, over = system
    _, spec, _ = resolve(preset, over)
    m = AddressMapping(spec, order, xor)
    n = 20
    fields = {
        "channel": data.draw(st.lists(st.integers(0, spec.channels - 1), min_size=n,
                                      max_size=n)),
        "rank": data.draw(st.lists(st.integers(0, spec.ranks - 1), min_size=n, max_size=n)),
        "bankgroup": data.draw(st.lists(st.integers(0, spec.bankgroups - 1), min_size=n,
                                        max_size=n)),
        "bank": data.draw(st.lists(st.integers(0, spec.banks_per_group - 1), min_size=n,
                                   max_size=n)),
        "row": data.draw(st.lists(st.integers(0, spec.rows - 1), min_size=n, max_size=n)),
        "column": [8 * c for c in data.draw(st.lists(st.integers(0, spec.columns // 8 - 1),
                                                     min_size=n, max_size=n))],
    }
    addr = m.encode(**{k: np.array(v) for k, v in fields.items()})
    assert ((addr >= 0) & (addr < m.capacity_bytes) & (addr % 64 == 0)).all()
    d = m.decode(addr)
    ch, ra, bg, ba = split(m, d)
    assert ch.tolist() == fields["channel"] and ra.tolist() == fields["rank"]
    assert bg.tolist() == fields["bankgroup"] and ba.tolist() == fields["bank"]
    assert d.row.tolist() == fields["row"] and d.column.tolist() == fields["column"]
    # and the other way round: any address (byte offset aside) re-encodes to itself
    raw = np.array(data.draw(st.lists(st.integers(0, m.capacity_bytes - 1), min_size=n,
                                      max_size=n)), np.int64)
    d = m.decode(raw)
    ch, ra, bg, ba = split(m, d)
    again = m.encode(channel=ch, rank=ra, bankgroup=bg, bank=ba, row=d.row, column=d.column)
    assert (again == (raw & ~np.int64(63))).all()


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("xor", [False, True])
def test_mapping_is_a_bijection_on_a_small_system(order, xor):
    # x16 4 Gb, 1 channel 2 ranks: enumerate every (bank, row) pair for a few columns
    _, spec, _ = resolve(None, ["dram.org=x16", "dram.density_gbit=4", "dram.ranks=2"])
    m = AddressMapping(spec, order, xor)
    rows = [0, 1, 2, 3, 4, 5, 6, 7, spec.rows - 1]
    combos = list(itertools.product(range(2), range(spec.bankgroups),
                                    range(spec.banks_per_group), rows, (0, 8, 1016)))
    r, g, b, row, col = (np.array(x) for x in zip(*combos, strict=True))
    addr = m.encode(rank=r, bankgroup=g, bank=b, row=row, column=col)
    assert len(set(addr.tolist())) == len(combos)


def test_mapping_order_in_the_config_reaches_the_engine(tmp_path):
    over = ("mapping.order=ro-co-ba-bg-ra-ch", "dram.refresh=false")
    _, _, m = resolve(None, over)
    assert m.shifts["bg"] == 6  # bank group bits right above the byte offset
    # consecutive lines now walk the bank groups, then the banks
    _, _, log, _ = run_logged(tmp_path, np.arange(8) * 64, overrides=over)
    acts = log[log["command"] == "ACT"]
    assert acts["bankgroup"].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert acts["bank"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


# ---------------------------------------------------------------- capacity

def test_address_beyond_capacity_names_the_request():
    with pytest.raises(AddressError, match=r"^requests:3: address 0x200000000 is beyond the "
                                           r"configured capacity \(0x200000000 bytes = 8 GiB\)"):
        run_arrays([0, 64, 1 << 33])


def test_address_beyond_capacity_names_file_and_line(tmp_path):
    p = tmp_path / "big.trace"
    p.write_text("# a comment line\n0 R 0x0\n5 W 0x200000040\n9 R 0x40\n")
    with pytest.raises(AddressError) as e:
        run(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:3: address 0x200000040 is beyond the configured capacity")
    assert "--wrap-addresses" in msg


def test_wrap_addresses_wraps_at_capacity(tmp_path):
    _, spec, m = resolve()
    cap = m.capacity_bytes
    addrs = [0x40, cap + 0x80, 3 * cap + 0x1000]
    wrapped = m.check(np.array(addrs, np.int64), wrap=True)
    assert wrapped.tolist() == [0x40, 0x80, 0x1000]
    p = tmp_path / "w.trace"
    p.write_text("".join(f"{10 * i} R {a:#x}\n" for i, a in enumerate(addrs)))
    q = tmp_path / "q.trace"
    q.write_text("".join(f"{10 * i} R {a:#x}\n" for i, a in enumerate(wrapped.tolist())))
    a = run(p, wrap_addresses=True, cmd_log=tmp_path / "a.csv")
    b = run(q, cmd_log=tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
    assert a.summary()["requests"] == b.summary()["requests"] == {"reads": 3, "writes": 0,
                                                                    "total": 3}


def test_capacity_grows_with_channels_and_ranks():
    _, _, m = resolve("ddr4_3200_x8_2ch2r")
    assert m.capacity_bytes == 4 << 33
    run_arrays([(4 << 33) - 64], config="ddr4_3200_x8_2ch2r")  # the last line is fine
    with pytest.raises(AddressError, match="requests:1"):
        run_arrays([4 << 33], config="ddr4_3200_x8_2ch2r")


def test_negative_address_is_rejected():
    with pytest.raises(AddressError):
        run_arrays([-64])
