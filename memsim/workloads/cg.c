/* Conjugate gradient (Hestenes and Stiefel, J. Res. NBS 49(6), 1952) on the 2-D Poisson
 * problem: the 5-point Laplacian of a GRID x GRID mesh, a sparse symmetric positive
 * definite matrix in CSR form (HPCG's 3-D 27-point problem is the same kind), right-hand
 * side all ones, from x = 0. Each iteration: q = A p, two dot products, three vector
 * updates: the inner loop of the solvers Chopim (Cho et al., ISCA 2020) accelerates.
 *
 *   cg [GRID] [ITERS]   defaults: 256 (65536 unknowns: 4 MiB of matrix, 512 KiB per
 *                       vector), 2 iterations
 *
 * Region of interest: the iterations. Prints the residual norm after them. */
#include <math.h>

#include "memsim_kernel.h"

static double dot(const double *a, const double *b, long n)
{
    double sum = 0.0;
    for (long i = 0; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

int main(int argc, char **argv)
{
    long grid = arg_long(argc, argv, 1, "GRID", 256, 2);
    long iters = arg_long(argc, argv, 2, "ITERS", 2, 1);
    long n = grid * grid;
    long *rowptr = alloc_lines((n + 1) * sizeof *rowptr);
    int *col = alloc_lines(5 * n * sizeof *col);
    double *val = alloc_lines(5 * n * sizeof *val);
    long nnz = 0;
    for (long i = 0; i < grid; i++) {
        for (long j = 0; j < grid; j++) {  /* row of unknown (i, j); columns in order */
            long row = i * grid + j;
            if (i > 0)
                col[nnz] = (int)(row - grid), val[nnz++] = -1.0;
            if (j > 0)
                col[nnz] = (int)(row - 1), val[nnz++] = -1.0;
            col[nnz] = (int)row, val[nnz++] = 4.0;
            if (j + 1 < grid)
                col[nnz] = (int)(row + 1), val[nnz++] = -1.0;
            if (i + 1 < grid)
                col[nnz] = (int)(row + grid), val[nnz++] = -1.0;
            rowptr[row + 1] = nnz;
        }
    }
    double *x = alloc_lines(n * sizeof *x), *r = alloc_lines(n * sizeof *r);
    double *p = alloc_lines(n * sizeof *p), *q = alloc_lines(n * sizeof *q);
    for (long k = 0; k < n; k++)
        r[k] = p[k] = 1.0;  /* b = 1, x = 0: r = p = b */
    double rr = dot(r, r, n);

    ROI_BEGIN();
    for (long it = 0; it < iters; it++) {
        for (long row = 0; row < n; row++) {
            double sum = 0.0;
            for (long k = rowptr[row]; k < rowptr[row + 1]; k++)
                sum += val[k] * p[col[k]];
            q[row] = sum;
        }
        double alpha = rr / dot(p, q, n);
        for (long k = 0; k < n; k++) {
            x[k] += alpha * p[k];
            r[k] -= alpha * q[k];
        }
        double rr_next = dot(r, r, n);
        double beta = rr_next / rr;
        for (long k = 0; k < n; k++)
            p[k] = r[k] + beta * p[k];
        rr = rr_next;
    }
    ROI_END();
    printf("cg: grid=%ld nnz=%ld iters=%ld residual=%.6e\n", grid, nnz, iters, sqrt(rr));
    return 0;
}
