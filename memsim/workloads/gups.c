/* GUPS, HPC Challenge RandomAccess (Luszczek et al., "The HPC Challenge (HPCC) benchmark
 * suite", SC 2006): UPDATES read-modify-writes of random 64-bit words of a table of
 * 2**LOG2_TABLE words, Table[ran & (size - 1)] ^= ran, with HPCC's generator: ran is a
 * shift register over GF(2) with the primitive polynomial x**63 + x**2 + x + 1
 * (ran = (ran << 1) ^ (ran < 0 ? 7 : 0)), started at 1 (HPCC_starts(0)).
 *
 *   gups [LOG2_TABLE] [UPDATES]   defaults: 2**20 words (8 MiB), 131072 updates
 *                                 (HPCC runs 4 x the table size)
 *
 * Region of interest: the updates. Prints how many table words the updates changed
 * (HPCC's verification runs the same updates again: every word is then restored). */
#include "memsim_kernel.h"

#define POLY 0x0000000000000007ULL

int main(int argc, char **argv)
{
    long log2_table = arg_long(argc, argv, 1, "LOG2_TABLE", 20, 1);
    long size = 1L << log2_table;
    long updates = arg_long(argc, argv, 2, "UPDATES", 131072, 1);
    uint64_t *table = alloc_lines(size * sizeof *table);
    for (long i = 0; i < size; i++)
        table[i] = (uint64_t)i;
    uint64_t ran = 1;
    ROI_BEGIN();
    for (long i = 0; i < updates; i++) {
        ran = (ran << 1) ^ ((int64_t)ran < 0 ? POLY : 0);
        table[ran & (uint64_t)(size - 1)] ^= ran;
    }
    ROI_END();
    long changed = 0;
    for (long i = 0; i < size; i++)
        changed += table[i] != (uint64_t)i;
    printf("gups: table=2**%ld updates=%ld changed=%ld\n", log2_table, updates, changed);
    return 0;
}
