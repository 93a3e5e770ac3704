/* Shared by memsim's workload kernels: region-of-interest markers, a random number
 * generator, argument parsing and allocation.
 *
 * ROI_BEGIN() and ROI_END() bracket a kernel's timed part. Run under valgrind they
 * print "memsim-roi-begin" / "memsim-roi-end" into valgrind's log through its
 * client-request mechanism (VALGRIND_PRINTF), which is where lackey writes its trace,
 * so the markers land between the right records and `memsim trace capture --roi`
 * counts only what lies between them. Run natively they cost a few no-op
 * instructions. Without valgrind's header (valgrind/valgrind.h, in Debian's valgrind
 * package) they are empty and a capture has no region of interest. */
#ifndef MEMSIM_KERNEL_H
#define MEMSIM_KERNEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define MEMSIM_HAVE_ROI 1
#define ROI_BEGIN() ((void)VALGRIND_PRINTF("memsim-roi-begin\n"))
#define ROI_END() ((void)VALGRIND_PRINTF("memsim-roi-end\n"))
#endif
#endif
#ifndef MEMSIM_HAVE_ROI
#define MEMSIM_HAVE_ROI 0
#define ROI_BEGIN() ((void)0)
#define ROI_END() ((void)0)
#endif

/* splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014): one 64-bit add and two multiply-xorshift rounds per number. */
static inline uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform in [0, 1), 53 random bits */
static inline double rng_uniform(uint64_t *state)
{
    return (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* uniform in [0, n), n > 0 (Lemire's multiply-shift; bias below 2**-32 for n < 2**32) */
static inline uint64_t rng_below(uint64_t *state, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)rng_next(state) * n) >> 64);
}

/* argv[index] as an integer of at least `min`, or `fallback` when absent; a bad value
 * stops the program with a message naming the argument. */
static inline long arg_long(int argc, char **argv, int index, const char *name, long fallback,
                     long min)
{
    if (index >= argc)
        return fallback;
    char *end;
    long value = strtol(argv[index], &end, 10);
    if (*argv[index] == '\0' || *end != '\0' || value < min) {
        fprintf(stderr, "%s: %s must be an integer of at least %ld, got '%s'\n", argv[0],
                name, min, argv[index]);
        exit(2);
    }
    return value;
}

static inline double arg_double(int argc, char **argv, int index, const char *name,
                         double fallback, double min)
{
    if (index >= argc)
        return fallback;
    char *end;
    double value = strtod(argv[index], &end);
    if (*argv[index] == '\0' || *end != '\0' || !(value >= min)) {
        fprintf(stderr, "%s: %s must be a number of at least %g, got '%s'\n", argv[0], name,
                min, argv[index]);
        exit(2);
    }
    return value;
}

/* `bytes` of zeroed memory aligned to a 64-byte cache line; stops the program if there
 * is none. */
static inline void *alloc_lines(size_t bytes)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (p == NULL) {
        fprintf(stderr, "out of memory allocating %zu bytes\n", bytes);
        exit(1);
    }
    memset(p, 0, rounded);
    return p;
}

#endif
