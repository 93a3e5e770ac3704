/* Pointer chasing: STEPS dependent loads around one random cycle through NODES nodes of
 * a cache line (64 bytes) each. The cycle is a random cyclic permutation (Sattolo's
 * algorithm, Information Processing Letters 22(6), 1986), so every load misses
 * wherever the nodes outnumber the cache's lines, and none can start before the one
 * before it ends: the latency-bound access pattern of linked data structures.
 *
 *   pointer_chase [NODES] [STEPS]   defaults: 131072 nodes (8 MiB), 131072 steps
 *
 * Region of interest: the chase. Prints the node it ends at. */
#include "memsim_kernel.h"

struct node {
    struct node *next;
    long pad[7];  /* one node per 64-byte line */
};

int main(int argc, char **argv)
{
    long nodes = arg_long(argc, argv, 1, "NODES", 131072, 2);
    long steps = arg_long(argc, argv, 2, "STEPS", 131072, 1);
    struct node *pool = alloc_lines(nodes * sizeof *pool);
    long *order = alloc_lines(nodes * sizeof *order);
    uint64_t seed = 42;
    for (long i = 0; i < nodes; i++)
        order[i] = i;
    for (long i = nodes - 1; i > 0; i--) {  /* Sattolo: j < i, a single cycle */
        long j = (long)rng_below(&seed, (uint64_t)i);
        long t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (long i = 0; i < nodes; i++)
        pool[i].next = &pool[order[i]];
    free(order);
    struct node *p = &pool[0];
    ROI_BEGIN();
    for (long s = 0; s < steps; s++)
        p = p->next;
    ROI_END();
    printf("pointer_chase: nodes=%ld steps=%ld end=%ld\n", nodes, steps, (long)(p - pool));
    return 0;
}
