/* SVRG, stochastic variance-reduced gradient descent (Johnson and Zhang, NIPS 2013), for
 * L2-regularised logistic regression on SAMPLES generated samples of FEATURES float
 * features: the inner loop Chopim (Cho et al., "Near data acceleration with concurrent
 * host access", ISCA 2020) runs on the host while its near-data accelerators compute
 * the full gradient. An inner step picks a random sample i and moves the weights w by
 *     -eta * ((sigma(x_i . w) - sigma(x_i . v)) x_i + mu + lambda w)
 * where v is the epoch's snapshot of w and mu its full gradient over all samples.
 *
 *   svrg [SAMPLES] [FEATURES] [INNER]   defaults: 16384 samples of 128 features
 *                                       (8 MiB), 8192 inner steps
 *
 * Region of interest: the inner steps (the snapshot's full gradient comes before).
 * Prints the training loss after them. */
#include <math.h>

#include "memsim_kernel.h"

static double sigma(double z)
{
    return 1.0 / (1.0 + exp(-z));
}

static double dot(const float *x, const double *w, long d)
{
    double sum = 0.0;
    for (long j = 0; j < d; j++)
        sum += x[j] * w[j];
    return sum;
}

int main(int argc, char **argv)
{
    long n = arg_long(argc, argv, 1, "SAMPLES", 16384, 1);
    long d = arg_long(argc, argv, 2, "FEATURES", 128, 1);
    long inner = arg_long(argc, argv, 3, "INNER", 8192, 1);
    const double eta = 0.05, lambda = 1e-4;
    uint64_t seed = 2013;

    float *x = alloc_lines(n * d * sizeof *x);
    double *label = alloc_lines(n * sizeof *label);
    double *truth = alloc_lines(d * sizeof *truth);
    for (long j = 0; j < d; j++)
        truth[j] = rng_uniform(&seed) - 0.5;
    for (long i = 0; i < n; i++) {  /* features in [-1, 1), labels from a true model */
        for (long j = 0; j < d; j++)
            x[i * d + j] = (float)(2.0 * rng_uniform(&seed) - 1.0);
        label[i] = rng_uniform(&seed) < sigma(dot(x + i * d, truth, d)) ? 1.0 : 0.0;
    }
    double *w = alloc_lines(d * sizeof *w), *v = alloc_lines(d * sizeof *v);
    double *mu = alloc_lines(d * sizeof *mu);
    for (long i = 0; i < n; i++) {  /* full gradient at the snapshot v = w = 0 */
        double g = sigma(dot(x + i * d, v, d)) - label[i];
        for (long j = 0; j < d; j++)
            mu[j] += g * x[i * d + j] / (double)n;
    }

    ROI_BEGIN();
    for (long t = 0; t < inner; t++) {
        long i = (long)rng_below(&seed, (uint64_t)n);
        const float *xi = x + i * d;
        double now = 0.0, then = 0.0;
        for (long j = 0; j < d; j++) {
            now += xi[j] * w[j];
            then += xi[j] * v[j];
        }
        double diff = sigma(now) - sigma(then);
        for (long j = 0; j < d; j++)
            w[j] -= eta * (diff * xi[j] + mu[j] + lambda * w[j]);
    }
    ROI_END();
    double loss = 0.0;
    for (long i = 0; i < n; i++) {
        double p = sigma(dot(x + i * d, w, d));
        loss -= label[i] * log(p + 1e-12) + (1.0 - label[i]) * log(1.0 - p + 1e-12);
    }
    printf("svrg: samples=%ld features=%ld inner=%ld loss=%.6f\n", n, d, inner, loss / n);
    return 0;
}
