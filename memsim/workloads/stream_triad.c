/* STREAM's triad kernel (McCalpin, "Memory bandwidth and machine balance in current high
 * performance computers", IEEE TCCA newsletter 1995; stream.c): a[j] = b[j] + q * c[j]
 * over arrays of N doubles, TIMES times.
 *
 *   stream_triad [N] [TIMES]      defaults: 524288 doubles per array (4 MiB), 1 pass
 *
 * Region of interest: the TIMES passes. Prints a checksum of a[]. */
#include "memsim_kernel.h"

int main(int argc, char **argv)
{
    long n = arg_long(argc, argv, 1, "N", 524288, 1);
    long times = arg_long(argc, argv, 2, "TIMES", 1, 1);
    double *a = alloc_lines(n * sizeof *a);
    double *b = alloc_lines(n * sizeof *b);
    double *c = alloc_lines(n * sizeof *c);
    for (long j = 0; j < n; j++) {  /* as STREAM initialises them */
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
    const double q = 3.0;
    ROI_BEGIN();
    for (long k = 0; k < times; k++)
        for (long j = 0; j < n; j++)
            a[j] = b[j] + q * c[j];
    ROI_END();
    double sum = 0.0;
    for (long j = 0; j < n; j++)
        sum += a[j];
    printf("stream_triad: n=%ld times=%ld checksum=%.6f\n", n, times, sum);
    return 0;
}
