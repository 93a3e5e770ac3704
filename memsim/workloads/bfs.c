/* Breadth-first search, Graph500's kernel 2 (top-down, with a queue, as its reference
 * code), on an R-MAT graph (Chakrabarti, Zhan and Faloutsos, SDM 2004) with Graph500's
 * parameters a = 0.57, b = 0.19, c = 0.19, d = 0.05: 2**SCALE vertices and
 * EDGE_FACTOR * 2**SCALE edges, undirected (each edge in both vertices' lists), vertex
 * numbers scrambled by a bijection as Graph500's generator scrambles them (self-loops
 * and repeated edges kept, as there). Two R-MAT levels are drawn at once from 16
 * random bits through a table of the pair's 16 outcomes.
 *
 *   bfs [SCALE] [EDGE_FACTOR]   defaults: 17, 8 (131072 vertices, 1048576 edges: 8 MiB
 *                               of adjacency lists)
 *
 * Region of interest: one search, from a random vertex with an edge. Prints the
 * vertices reached and the levels. */
#include "memsim_kernel.h"

int main(int argc, char **argv)
{
    long scale = arg_long(argc, argv, 1, "SCALE", 17, 1);
    long factor = arg_long(argc, argv, 2, "EDGE_FACTOR", 8, 1);
    if (scale > 30) {
        fprintf(stderr, "%s: SCALE must be at most 30\n", argv[0]);
        return 2;
    }
    long n = 1L << scale, edges = factor * n;
    uint64_t seed = 500;

    /* quadrant probabilities (row bit, column bit): 00 a, 01 b, 10 c, 11 d; a pair of
     * levels is one of 16 outcomes, 4 bits: first level's row, column, second's */
    const double quad[4] = {0.57, 0.19, 0.19, 0.05};
    unsigned char *pair = alloc_lines(65536);
    double edge = 0.0;
    int outcome = 0;
    for (long u = 0; u < 65536; u++) {
        while (outcome < 15 && (u + 0.5) / 65536.0 >= edge + quad[outcome >> 2] * quad[outcome & 3]) {
            edge += quad[outcome >> 2] * quad[outcome & 3];
            outcome++;
        }
        pair[u] = (unsigned char)outcome;
    }
    const uint64_t mult = 0x9e3779b97f4a7c15ULL | 1;  /* odd: a bijection modulo 2**scale */
    int *src = alloc_lines(edges * sizeof *src), *dst = alloc_lines(edges * sizeof *dst);
    long *offset = alloc_lines((n + 1) * sizeof *offset);
    for (long e = 0; e < edges; e++) {
        uint64_t s = 0, d = 0, bits = 0;
        int left = 0;
        for (long level = 0; level < scale; level += 2) {
            if (left == 0) {
                bits = rng_next(&seed);
                left = 4;
            }
            int o = pair[bits & 0xffff];
            bits >>= 16;
            left--;
            s = (s << 1) | ((o >> 3) & 1);
            d = (d << 1) | ((o >> 2) & 1);
            if (level + 1 < scale) {
                s = (s << 1) | ((o >> 1) & 1);
                d = (d << 1) | (o & 1);
            }
        }
        src[e] = (int)((s * mult) & (uint64_t)(n - 1));
        dst[e] = (int)((d * mult) & (uint64_t)(n - 1));
        offset[src[e] + 1]++;
        offset[dst[e] + 1]++;
    }
    for (long v = 0; v < n; v++)
        offset[v + 1] += offset[v];
    int *adj = alloc_lines(offset[n] * sizeof *adj);
    long *fill = alloc_lines(n * sizeof *fill);
    for (long e = 0; e < edges; e++) {
        adj[offset[src[e]] + fill[src[e]]++] = dst[e];
        adj[offset[dst[e]] + fill[dst[e]]++] = src[e];
    }
    free(src);
    free(dst);
    free(fill);
    long root;
    do
        root = (long)rng_below(&seed, (uint64_t)n);
    while (offset[root + 1] == offset[root]);
    int *parent = alloc_lines(n * sizeof *parent);
    int *queue = alloc_lines(n * sizeof *queue);
    for (long v = 0; v < n; v++)
        parent[v] = -1;

    ROI_BEGIN();
    long head = 0, tail = 0, levels = 0, level_end = 1;
    parent[root] = (int)root;
    queue[tail++] = (int)root;
    while (head < tail) {
        int v = queue[head++];
        for (long k = offset[v]; k < offset[v + 1]; k++) {
            int w = adj[k];
            if (parent[w] < 0) {
                parent[w] = v;
                queue[tail++] = w;
            }
        }
        if (head == level_end) {
            levels++;
            level_end = tail;
        }
    }
    ROI_END();
    printf("bfs: scale=%ld edges=%ld root=%ld reached=%ld levels=%ld\n", scale, edges, root,
           tail, levels);
    return 0;
}
