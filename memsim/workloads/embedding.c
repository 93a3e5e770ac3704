/* Embedding-bag lookups, the sparse-feature layer of recommendation models (DLRM's
 * EmbeddingBag in sum mode: Naumov et al., "Deep learning recommendation model for
 * personalization and recommendation systems", arXiv:1906.00091, 2019; the operation
 * TensorDIMM (Kwon, Lee and Rhu, MICRO 2019) moves next to memory): BAGS bags, each the
 * sum of POOL rows of a ROWS x DIM table of floats. Rows are drawn with Zipf popularity
 * of exponent S: the row of popularity rank r (from 1) with probability r**-S / H, ranks
 * scattered over the table by a random permutation, as a table's popular entries are.
 *
 *   embedding [ROWS] [DIM] [BAGS] [POOL] [S]   defaults: 131072 rows of 32 floats
 *                                              (16 MiB), 2048 bags of 32, S = 1.05
 *
 * Region of interest: the lookups and sums. Prints a checksum of the bags' sums. */
#include <math.h>

#include "memsim_kernel.h"

int main(int argc, char **argv)
{
    long rows = arg_long(argc, argv, 1, "ROWS", 131072, 1);
    long dim = arg_long(argc, argv, 2, "DIM", 32, 1);
    long bags = arg_long(argc, argv, 3, "BAGS", 2048, 1);
    long pool = arg_long(argc, argv, 4, "POOL", 32, 1);
    double s = arg_double(argc, argv, 5, "S", 1.05, 0.0);
    uint64_t seed = 1906;

    float *table = alloc_lines(rows * dim * sizeof *table);
    for (long i = 0; i < rows * dim; i++)
        table[i] = (float)((i % 1000) * 0.001);
    double *cdf = alloc_lines(rows * sizeof *cdf);  /* cdf[r - 1] = P(rank <= r) */
    double total = 0.0;
    for (long r = 1; r <= rows; r++)
        cdf[r - 1] = total += pow((double)r, -s);
    for (long r = 0; r < rows; r++)
        cdf[r] /= total;
    long *row_of_rank = alloc_lines(rows * sizeof *row_of_rank);
    for (long r = 0; r < rows; r++)
        row_of_rank[r] = r;
    for (long r = rows - 1; r > 0; r--) {  /* Fisher-Yates */
        long j = (long)rng_below(&seed, (uint64_t)r + 1);
        long t = row_of_rank[r];
        row_of_rank[r] = row_of_rank[j];
        row_of_rank[j] = t;
    }
    long *index = alloc_lines(bags * pool * sizeof *index);
    for (long i = 0; i < bags * pool; i++) {
        double u = rng_uniform(&seed);
        long lo = 0, hi = rows - 1;  /* the first rank whose cdf exceeds u */
        while (lo < hi) {
            long mid = (lo + hi) / 2;
            if (u < cdf[mid])
                hi = mid;
            else
                lo = mid + 1;
        }
        index[i] = row_of_rank[lo];
    }
    free(cdf);
    free(row_of_rank);
    float *out = alloc_lines(bags * dim * sizeof *out);

    ROI_BEGIN();
    for (long b = 0; b < bags; b++) {
        float *sum = out + b * dim;
        for (long p = 0; p < pool; p++) {
            const float *row = table + index[b * pool + p] * dim;
            for (long d = 0; d < dim; d++)
                sum[d] += row[d];
        }
    }
    ROI_END();
    double check = 0.0;
    for (long i = 0; i < bags * dim; i++)
        check += out[i];
    printf("embedding: rows=%ld dim=%ld bags=%ld pool=%ld s=%.2f checksum=%.4f\n", rows, dim,
           bags, pool, s, check);
    return 0;
}
