/* GUPS, HPC Challenge RandomAccess (Luszczek et al., "The HPC Challenge (HPCC) benchmark
 * suite", SC 2006), as its serial reference code runs it: UPDATES read-modify-writes of
 * random 64-bit words of a table of 2**LOG2_TABLE words, Table[ran & (size - 1)] ^= ran,
 * by 128 interleaved streams of HPCC's generator. The generator is a shift register
 * over GF(2), ran = (ran << 1) ^ (ran < 0 ? 7 : 0): multiplication by x modulo
 * x**64 + x**2 + x + 1. Stream j starts where the sequence from 1 is after
 * j * UPDATES / 128 steps (HPCC_starts), computed here as x**n modulo that polynomial.
 *
 *   gups [LOG2_TABLE] [UPDATES]   defaults: 2**20 words (8 MiB), 131072 updates, a
 *                                 multiple of 128 (HPCC runs 4 x the table size)
 *
 * Region of interest: the updates. Prints how many table words the updates changed
 * (HPCC's verification runs the same updates again: every word is then restored). */
#include "memsim_kernel.h"

#define POLY 0x0000000000000007ULL
#define STREAMS 128

static uint64_t step(uint64_t ran)
{
    return (ran << 1) ^ ((int64_t)ran < 0 ? POLY : 0);
}

/* a * b modulo x**64 + x**2 + x + 1, polynomials over GF(2) as bit vectors */
static uint64_t mulmod(uint64_t a, uint64_t b)
{
    uint64_t product = 0;
    for (int bit = 0; bit < 64; bit++) {
        if (b >> bit & 1)
            product ^= a;
        a = step(a);
    }
    return product;
}

/* the generator's value n steps after 1: x**n */
static uint64_t starts(uint64_t n)
{
    uint64_t result = 1, power = 2;  /* power: x**(2**k) */
    for (; n; n >>= 1) {
        if (n & 1)
            result = mulmod(result, power);
        power = mulmod(power, power);
    }
    return result;
}

int main(int argc, char **argv)
{
    long log2_table = arg_long(argc, argv, 1, "LOG2_TABLE", 20, 1);
    long size = 1L << log2_table;
    long updates = arg_long(argc, argv, 2, "UPDATES", 131072, STREAMS);
    if (updates % STREAMS) {
        fprintf(stderr, "%s: UPDATES must be a multiple of %d, got %ld\n", argv[0], STREAMS,
                updates);
        return 2;
    }
    uint64_t *table = alloc_lines(size * sizeof *table);
    for (long i = 0; i < size; i++)
        table[i] = (uint64_t)i;
    uint64_t ran[STREAMS];
    for (int j = 0; j < STREAMS; j++)
        ran[j] = starts((uint64_t)(updates / STREAMS) * j);
    ROI_BEGIN();
    for (long i = 0; i < updates / STREAMS; i++) {
        for (int j = 0; j < STREAMS; j++) {
            ran[j] = step(ran[j]);
            table[ran[j] & (uint64_t)(size - 1)] ^= ran[j];
        }
    }
    ROI_END();
    long changed = 0;
    for (long i = 0; i < size; i++)
        changed += table[i] != (uint64_t)i;
    printf("gups: table=2**%ld updates=%ld changed=%ld\n", log2_table, updates, changed);
    return 0;
}
