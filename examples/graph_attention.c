/* graph_attention.c — embedding attnlab: the attention operator with a graph pattern. Eight nodes
 * on a ring (each attends to itself and its two neighbours), two heads, dot-product scores; the
 * result is checked against the library's dense masked reference, and one node's weights are shown
 * to be zero outside its neighbourhood.
 *   cc graph_attention.c $(pkg-config --cflags --libs attnlab) -o graph_attention && ./graph_attention */
#include <math.h>
#include <stdio.h>
#include <attnlab/attention.h>
#include <attnlab/tensor.h>

enum { NODES = 8, HEADS = 2, D = 4 };

int main(void)
{
    /* the ring's adjacency as CSR, row i = {i-1, i, i+1} (mod NODES), sorted */
    static int64_t rowptr[NODES + 1];
    static int col[3 * NODES];
    int64_t nnz = 0;
    for (int i = 0; i < NODES; i++) {
        int nb[3] = {(i + NODES - 1) % NODES, i, (i + 1) % NODES};
        for (int a = 0; a < 3; a++)      /* sort the three ids */
            for (int b = a + 1; b < 3; b++)
                if (nb[b] < nb[a]) { int t = nb[a]; nb[a] = nb[b]; nb[b] = t; }
        rowptr[i] = nnz;
        for (int a = 0; a < 3; a++) col[nnz++] = nb[a];
    }
    rowptr[NODES] = nnz;
    al_csr adj = {NODES, NODES, nnz, rowptr, col, NULL};

    al_ctx *c = al_ctx_new(1);
    c->grad_enabled = 0;
    al_rng r; al_rng_seed(&r, 3, AL_RNG_DATA);
    int shape[4] = {1, HEADS, NODES, D};
    al_tensor *q = al_new(c, 4, shape), *k = al_new(c, 4, shape), *v = al_new(c, 4, shape);
    for (int i = 0; i < NODES * HEADS * D; i++) {
        q->data[i] = al_rng_normal(&r); k->data[i] = al_rng_normal(&r); v->data[i] = al_rng_normal(&r);
    }
    al_tensor *w = NULL;
    al_attn_desc d = {.pattern = al_pattern_graph(&adj), .score = AL_SCORE_DOT, .norm = AL_NORM_SOFTMAX, .weights = &w};
    al_tensor *o = al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL);        /* (1, H, N, D) */
    d.weights = NULL;
    al_tensor *ref = al_attention_ref(c, &d, q, k, v, NULL, NULL, NULL, NULL);
    if (!o || !ref || !w) { fprintf(stderr, "graph_attention: %s\n", al_ctx_error(c)); return 1; }
    double maxdiff = 0;
    for (int64_t i = 0; i < o->numel; i++) maxdiff = fmax(maxdiff, fabs((double)o->data[i] - ref->data[i]));
    printf("graph attention, %d nodes, %lld edges, %d heads: max |fast - reference| = %.2e\n", NODES,
           (long long)nnz, HEADS, maxdiff);
    /* weights are in the pattern's layout: head h, slot rowptr[i] + t is the weight of node col[..] */
    printf("node 0, head 0 attends to:");
    for (int64_t s = rowptr[0]; s < rowptr[1]; s++) printf("  node %d: %.3f", col[s], w->data[s]);
    printf("\n");
    al_ctx_free(c);
    return maxdiff < 1e-5 ? 0 : 1;
}
