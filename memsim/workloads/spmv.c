/* Sparse matrix-vector multiply, y = A x with A in compressed sparse row (CSR) form, on a
 * generated ROWS x ROWS matrix with a power-law row-length distribution: row lengths
 * are drawn from a Pareto law of shape 1.5 (a degree exponent of 2.5, within the 2..3
 * of web and social graphs: Barabasi and Albert, Science 286, 1999) scaled to a mean
 * of about AVG_NNZ, at least 1 and at most 4096; the columns of a row are distinct,
 * uniformly random and sorted.
 *
 *   spmv [ROWS] [AVG_NNZ] [ITERS]   defaults: 131072 rows, 8 non-zeros per row
 *                                   (about 12 MiB of matrix), 1 multiply
 *
 * Region of interest: the ITERS multiplies. Prints a checksum of y. */
#include <math.h>

#include "memsim_kernel.h"

#define MAX_LEN 4096

static int by_column(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* sort a row's columns, drop repeats; its new length */
static long sort_row(int *cols, long len)
{
    if (len <= 16) {
        for (long i = 1; i < len; i++) {
            int v = cols[i];
            long j = i;
            for (; j > 0 && cols[j - 1] > v; j--)
                cols[j] = cols[j - 1];
            cols[j] = v;
        }
    } else {
        qsort(cols, (size_t)len, sizeof *cols, by_column);
    }
    long out = 0;
    for (long i = 0; i < len; i++)
        if (out == 0 || cols[out - 1] != cols[i])
            cols[out++] = cols[i];
    return out;
}

int main(int argc, char **argv)
{
    long rows = arg_long(argc, argv, 1, "ROWS", 131072, 1);
    long avg = arg_long(argc, argv, 2, "AVG_NNZ", 8, 1);
    long iters = arg_long(argc, argv, 3, "ITERS", 1, 1);
    long cap = rows < MAX_LEN ? rows : MAX_LEN;
    uint64_t seed = 7;

    /* P(len = k) for k = 1..cap: the Pareto law of shape 1.5 and mean avg (minimum
     * avg / 3), over [k, k + 1); cdf[k] = P(len <= k) */
    double xmin = avg / 3.0, *cdf = alloc_lines((cap + 1) * sizeof *cdf);
    for (long k = 1; k <= cap; k++)
        cdf[k] = k + 1 <= xmin ? 0.0 : 1.0 - pow(xmin / (k + 1.0), 1.5);
    cdf[cap] = 1.0;
    long *rowptr = alloc_lines((rows + 1) * sizeof *rowptr);
    for (long r = 0; r < rows; r++) {
        double u = rng_uniform(&seed);
        long lo = 1, hi = cap;  /* the first k with u < cdf[k] */
        while (lo < hi) {
            long mid = (lo + hi) / 2;
            if (u < cdf[mid])
                hi = mid;
            else
                lo = mid + 1;
        }
        rowptr[r + 1] = rowptr[r] + lo;
    }
    int *col = alloc_lines(rowptr[rows] * sizeof *col);
    double *val = alloc_lines(rowptr[rows] * sizeof *val);
    long nnz = 0;
    for (long r = 0; r < rows; r++) {  /* fill, sort and compact the rows in place */
        long start = nnz, len = rowptr[r + 1] - rowptr[r];
        for (long i = 0; i < len; i++)
            col[start + i] = (int)rng_below(&seed, (uint64_t)rows);
        len = sort_row(col + start, len);
        for (long i = 0; i < len; i++)
            val[start + i] = 1.0 / (double)(1 + (col[start + i] + r) % 7);
        rowptr[r] = start;
        nnz = start + len;
    }
    rowptr[rows] = nnz;
    double *x = alloc_lines(rows * sizeof *x);
    double *y = alloc_lines(rows * sizeof *y);
    for (long i = 0; i < rows; i++)
        x[i] = 1.0 + (double)(i % 3);

    ROI_BEGIN();
    for (long it = 0; it < iters; it++) {
        for (long r = 0; r < rows; r++) {
            double sum = 0.0;
            for (long k = rowptr[r]; k < rowptr[r + 1]; k++)
                sum += val[k] * x[col[k]];
            y[r] = sum;
        }
    }
    ROI_END();
    double check = 0.0;
    for (long i = 0; i < rows; i++)
        check += y[i];
    printf("spmv: rows=%ld nnz=%ld iters=%ld checksum=%.6f\n", rows, nnz, iters, check);
    return 0;
}
