/* pattern.c — the attention patterns: slot counts and offsets, argument checking (al_attn_setup,
 * shared by al_attention and the reference) and the slot lists of the sparse patterns (per query,
 * and transposed per key). The one file a new pattern touches besides the reference mask (ref.c). */
#include "attention/attention_impl.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int64_t al_pattern_slots(const al_pattern *p, int n)
{
    switch (p->kind) {
    case AL_PAT_FULL: return (int64_t)n * n;
    case AL_PAT_WINDOW2D: return (int64_t)n * p->win_h * p->win_w;
    case AL_PAT_WINDOW1D: return (int64_t)n * (2 * p->radius + 1);
    case AL_PAT_GRAPH: return p->adj ? p->adj->nnz : 0;
    }
    return 0;
}

int al_pattern_offsets(const al_pattern *p)
{
    if (p->kind == AL_PAT_WINDOW2D) return p->win_h * p->win_w;
    if (p->kind == AL_PAT_WINDOW1D) return 2 * p->radius + 1;
    return 0;
}

int al_attn_setup(al_ctx *c, const char *op, const al_attn_desc *d, al_tensor *q /* (B,H,N,D) */,
                  al_tensor *k /* (B,H,N,D) */, al_tensor *v /* (B,H,N,Dv) */, al_tensor *a_q /* (H,D) or NULL */,
                  al_tensor *a_k /* (H,D) or NULL */, al_tensor *rel_bias /* (H,offsets) or NULL */,
                  al_tensor *bias /* (H,slots) or NULL */, al_attn_cfg *g)
{
    char b1[64], b2[64], b3[64];
    if (!d) { al_fail(c, "%s: descriptor is NULL", op); return -1; }
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || !al_same_shape(q, k) ||
        v->shape[0] != q->shape[0] || v->shape[1] != q->shape[1] || v->shape[2] != q->shape[2]) {
        al_fail(c, "%s: expected q, k (B,H,N,D) and v (B,H,N,Dv), got q %s, k %s, v %s", op,
                al_shape_str(q, b1, sizeof b1), al_shape_str(k, b2, sizeof b2), al_shape_str(v, b3, sizeof b3));
        return -1;
    }
    memset(g, 0, sizeof *g);
    g->B = q->shape[0]; g->H = q->shape[1]; g->N = q->shape[2]; g->D = q->shape[3]; g->Dv = v->shape[3];
    const al_pattern *p = &d->pattern;
    switch (p->kind) {
    case AL_PAT_FULL: break;
    case AL_PAT_WINDOW2D:
        if (p->grid_h < 1 || p->grid_w < 1 || (int64_t)p->grid_h * p->grid_w != g->N) {
            al_fail(c, "%s: window2d grid %dx%d does not hold N = %d tokens", op, p->grid_h, p->grid_w, g->N);
            return -1;
        }
        if (p->win_h < 1 || p->win_w < 1 || !(p->win_h & 1) || !(p->win_w & 1)) {
            al_fail(c, "%s: window2d size %dx%d must be odd and positive", op, p->win_h, p->win_w);
            return -1;
        }
        break;
    case AL_PAT_WINDOW1D:
        if (p->radius < 0) { al_fail(c, "%s: window1d radius %d < 0", op, p->radius); return -1; }
        break;
    case AL_PAT_GRAPH: {
        const al_csr *a = p->adj;
        if (!a || !a->rowptr || (a->nnz > 0 && !a->col)) { al_fail(c, "%s: graph pattern without an adjacency", op); return -1; }
        if (a->rows != g->N || a->cols != g->N) {
            al_fail(c, "%s: adjacency is %dx%d but N = %d", op, a->rows, a->cols, g->N);
            return -1;
        }
        if (a->rowptr[0] != 0 || a->rowptr[a->rows] != a->nnz) {
            al_fail(c, "%s: adjacency rowptr does not span 0..nnz (%lld)", op, (long long)a->nnz);
            return -1;
        }
        for (int i = 0; i < a->rows; i++)
            if (a->rowptr[i + 1] < a->rowptr[i]) { al_fail(c, "%s: adjacency rowptr decreases at row %d", op, i); return -1; }
        for (int64_t e = 0; e < a->nnz; e++)
            if (a->col[e] < 0 || a->col[e] >= g->N) {
                al_fail(c, "%s: adjacency edge %lld has column %d outside [0, %d)", op, (long long)e, a->col[e], g->N);
                return -1;
            }
        break;
    }
    default: al_fail(c, "%s: unknown pattern kind %d", op, (int)p->kind); return -1;
    }
    g->slots = al_pattern_slots(p, g->N);
    g->noff = al_pattern_offsets(p);

    if (d->score == AL_SCORE_ADDITIVE) {
        g->additive = 1;
        if (!a_q || !a_k) { al_fail(c, "%s: additive score needs a_q and a_k (H,D)", op); return -1; }
        if (a_q->ndim != 2 || a_k->ndim != 2 || a_q->shape[0] != g->H || a_q->shape[1] != g->D || !al_same_shape(a_q, a_k)) {
            al_fail(c, "%s: a_q %s and a_k %s must be (H,D) = (%d, %d)", op, al_shape_str(a_q, b1, sizeof b1),
                    al_shape_str(a_k, b2, sizeof b2), g->H, g->D);
            return -1;
        }
    } else if (d->score == AL_SCORE_DOT) {
        if (a_q || a_k) { al_fail(c, "%s: a_q/a_k given for a dot-product score", op); return -1; }
    } else { al_fail(c, "%s: unknown score kind %d", op, (int)d->score); return -1; }
    if (d->norm != AL_NORM_SOFTMAX && d->norm != AL_NORM_RELU) { al_fail(c, "%s: unknown normaliser %d", op, (int)d->norm); return -1; }
    g->relu = d->norm == AL_NORM_RELU;
    g->scale = d->scale != 0.f ? d->scale : 1.0f / sqrtf((float)g->D);
    g->slope = d->slope;

    if (rel_bias) {
        if (!g->noff) { al_fail(c, "%s: rel_bias is only defined for window patterns", op); return -1; }
        if (rel_bias->ndim != 2 || rel_bias->shape[0] != g->H || rel_bias->shape[1] != g->noff) {
            al_fail(c, "%s: rel_bias %s must be (H, offsets) = (%d, %d)", op, al_shape_str(rel_bias, b1, sizeof b1), g->H, g->noff);
            return -1;
        }
    }
    if (bias && (bias->ndim != 2 || bias->shape[0] != g->H || bias->shape[1] != g->slots)) {
        al_fail(c, "%s: bias %s must be (H, slots) = (%d, %lld)", op, al_shape_str(bias, b1, sizeof b1), g->H, (long long)g->slots);
        return -1;
    }
    if (!(d->dropout >= 0.f && d->dropout < 1.f)) { al_fail(c, "%s: dropout %g outside [0, 1)", op, (double)d->dropout); return -1; }
    if (c->training && d->dropout > 0.f) {
        g->drop = 1;
        double t = (double)d->dropout * 4294967296.0;
        g->thresh = t >= 4294967295.0 ? 0xffffffffu : (uint32_t)t;
        g->inv_keep = 1.0f / (1.0f - d->dropout);
        g->seed = al_rng_u64(&c->dropout_rng);
    }
    return 0;
}

/* The number of threads of a transpose: several only for a million slots or more. */
static int transpose_threads(int nthr, int64_t slots) { return nthr > 1 && slots >= 1000000 ? nthr : 1; }

/* The transposed lists of (qptr, key) (absent keys: key < 0): a counting sort of the present slots by
 * key, slots ascending within a key. In parallel over nt fixed query ranges, each with its own counts
 * (fill: (nt, N), zeroed) whose running sums order the ranges within a key: the same lists as one pass
 * over the queries in order, for any nt. */
static void transpose_lists(const int64_t *qptr, const int *key, int N, int nt, int64_t *fill /* (nt, N) */,
                            int64_t *kptr /* (N + 1) */, int64_t *kslot /* (present) */, int *kq /* (present) */)
{
    AL_OMP("omp parallel num_threads(nt) if (nt > 1)")
    {
        AL_OMP("omp for schedule(static)")
        for (int u = 0; u < nt; u++) {   /* range u: its count of each key */
            const int i0 = (int)((int64_t)N * u / nt), i1 = (int)((int64_t)N * (u + 1) / nt);
            int64_t *f = fill + (size_t)u * N;
            for (int64_t s = qptr[i0]; s < qptr[i1]; s++) if (key[s] >= 0) f[key[s]]++;
        }
        AL_OMP("omp single")
        {
            kptr[0] = 0;
            for (int j = 0; j < N; j++) {   /* counts to the start of each range's run */
                int64_t at = kptr[j];
                for (int u = 0; u < nt; u++) { const int64_t n = fill[(size_t)u * N + j]; fill[(size_t)u * N + j] = at; at += n; }
                kptr[j + 1] = at;
            }
        }
        AL_OMP("omp for schedule(static)")
        for (int u = 0; u < nt; u++) {
            const int i0 = (int)((int64_t)N * u / nt), i1 = (int)((int64_t)N * (u + 1) / nt);
            int64_t *f = fill + (size_t)u * N;
            for (int i = i0; i < i1; i++)
                for (int64_t s = qptr[i]; s < qptr[i + 1]; s++) {
                    const int j = key[s];
                    if (j < 0) continue;
                    kslot[f[j]] = s; kq[f[j]] = i; f[j]++;
                }
        }
    }
}

/* The longest slot list of a query or a key (at least 1). */
static int64_t max_degree(const int64_t *qptr, const int64_t *kptr, int N)
{
    int64_t md = 1;
    for (int i = 0; i < N; i++) {
        if (qptr[i + 1] - qptr[i] > md) md = qptr[i + 1] - qptr[i];
        if (kptr[i + 1] - kptr[i] > md) md = kptr[i + 1] - kptr[i];
    }
    return md;
}

/* One adjacency's transposed lists: a plan built once on the heap (al_graph_plan_new), or the arena's
 * memo of one step, so that the layers of a model over one adjacency (borrowed for the whole step
 * already) build them once per step, not once per layer. */
struct al_graph_plan {
    const int64_t *rowptr; const int *col; int N; int64_t nnz;   /* the adjacency's arrays it was made for */
    int64_t *kptr, *kslot; int *kq; int maxdeg;
};

/* Were q's lists made for these arrays (and sizes)? */
static int plan_fits(const al_graph_plan *q, const al_csr *adj, int N, int64_t nnz)
{
    return q->rowptr == adj->rowptr && q->col == adj->col && q->N == N && q->nnz == nnz;
}

al_graph_plan *al_graph_plan_new(const al_csr *adj, al_error *err)
{
    if (!adj || adj->rows != adj->cols || adj->rows < 0 || adj->nnz < 0 || !adj->rowptr || (adj->nnz > 0 && !adj->col)) {
        al_seterr(err, "graph plan: the adjacency must be a square CSR");
        return NULL;
    }
    const int N = adj->rows;
    const int64_t nnz = adj->nnz;
    int64_t present = 0;
    for (int64_t s = 0; s < nnz; s++) {
        if (adj->col[s] >= N) { al_seterr(err, "graph plan: column %d of slot %lld is outside the %d nodes", adj->col[s], (long long)s, N); return NULL; }
        present += adj->col[s] >= 0;
    }
    const int nt = transpose_threads(al_threads(), nnz);
    al_graph_plan *q = calloc(1, sizeof *q);
    int64_t *fill = calloc((size_t)nt * (size_t)(N > 0 ? N : 1), sizeof *fill);
    if (q) {
        q->kptr = malloc((size_t)(N + 1) * sizeof *q->kptr);
        q->kslot = malloc((size_t)(present > 0 ? present : 1) * sizeof *q->kslot);
        q->kq = malloc((size_t)(present > 0 ? present : 1) * sizeof *q->kq);
    }
    if (!q || !fill || !q->kptr || !q->kslot || !q->kq) {
        free(fill); al_graph_plan_free(q);
        al_seterr(err, "graph plan: out of memory for the lists of %lld slots", (long long)nnz);
        return NULL;
    }
    transpose_lists(adj->rowptr, adj->col, N, nt, fill, q->kptr, q->kslot, q->kq);
    free(fill);
    const int64_t md = max_degree(adj->rowptr, q->kptr, N);
    if (md > INT32_MAX / 2) {
        al_graph_plan_free(q);
        al_seterr(err, "graph plan: a node with %lld edges is too many", (long long)md);
        return NULL;
    }
    q->rowptr = adj->rowptr; q->col = adj->col; q->N = N; q->nnz = nnz; q->maxdeg = (int)md;
    return q;
}

void al_graph_plan_free(al_graph_plan *q)
{
    if (!q) return;
    free(q->kptr); free(q->kslot); free(q->kq);
    free(q);
}

/* Build qptr/key (window patterns; graphs borrow the CSR) and the transposed slot lists (graphs: the
 * pattern's plan, else the arena's memo of this step, else built and memoised). */

int al__attn_slot_lists(al_ctx *c, const al_pattern *p, const al_attn_cfg *g, attn_node *nd)
{
    const int N = g->N;
    const int64_t slots = g->slots;
    if (p->kind == AL_PAT_GRAPH) {
        nd->qptr = p->adj->rowptr; nd->key = nd->keyc = p->adj->col;
        const al_graph_plan *q = p->plan ? p->plan : c->arena.memo;
        if (q && plan_fits(q, p->adj, N, slots)) {
            nd->kptr = q->kptr; nd->kslot = q->kslot; nd->kq = q->kq; nd->maxdeg = q->maxdeg;
            return 0;
        }
        if (p->plan) {
            al_fail(c, "attention: the graph plan was made for another adjacency (al_graph_plan_new on this one)");
            return -1;
        }
    } else {
        int64_t *qptr = al_arena_alloc(&c->arena, (size_t)(N + 1) * sizeof(int64_t));
        int *key = al_arena_alloc(&c->arena, (size_t)(slots > 0 ? slots : 1) * sizeof(int));
        int *keyc = al_arena_alloc(&c->arena, (size_t)(slots > 0 ? slots : 1) * sizeof(int));
        if (!qptr || !key || !keyc) { al_fail(c, "attention: out of memory"); return -1; }
        int K = g->noff;
        for (int i = 0; i <= N; i++) qptr[i] = (int64_t)i * K;
        if (p->kind == AL_PAT_WINDOW2D) {
            int rh = p->win_h / 2, rw = p->win_w / 2, W = p->grid_w, Hg = p->grid_h;
            for (int i = 0; i < N; i++) {
                int y = i / W, x = i % W;
                for (int dy = -rh; dy <= rh; dy++)
                    for (int dx = -rw; dx <= rw; dx++) {
                        int yy = y + dy, xx = x + dx;
                        key[(int64_t)i * K + (dy + rh) * p->win_w + dx + rw] =
                            (yy >= 0 && yy < Hg && xx >= 0 && xx < W) ? yy * W + xx : -1;
                    }
            }
        } else {
            int r = p->radius;
            for (int i = 0; i < N; i++)
                for (int o = 0; o < K; o++) { int j = i + o - r; key[(int64_t)i * K + o] = (j >= 0 && j < N) ? j : -1; }
        }
        for (int i = 0; i < N; i++)
            for (int64_t s = qptr[i]; s < qptr[i + 1]; s++) keyc[s] = key[s] >= 0 ? key[s] : i;
        nd->qptr = qptr; nd->key = key; nd->keyc = keyc;
    }
    int64_t present = 0;
    const int nt = transpose_threads(nd->nthr, slots);
    AL_OMP("omp parallel for schedule(static) num_threads(nt) reduction(+:present) if (nt > 1)")
    for (int64_t s = 0; s < slots; s++) present += nd->key[s] >= 0;
    int64_t *kptr = al_arena_alloc(&c->arena, (size_t)(N + 1) * sizeof(int64_t));
    int64_t *kslot = al_arena_alloc(&c->arena, (size_t)(present > 0 ? present : 1) * sizeof(int64_t));
    int *kq = al_arena_alloc(&c->arena, (size_t)(present > 0 ? present : 1) * sizeof(int));
    const al_arena_mark mark = al_arena_mark_get(&c->arena);
    int64_t *fill = al_arena_calloc(&c->arena, (size_t)nt * N * sizeof(int64_t));   /* (nt, N) a temporary */
    if (!kptr || !kslot || !kq || !fill) { al_fail(c, "attention: out of memory"); return -1; }
    transpose_lists(nd->qptr, nd->key, N, nt, fill, kptr, kslot, kq);
    al_arena_release(&c->arena, mark);
    nd->kptr = kptr; nd->kslot = kslot; nd->kq = kq;
    const int64_t md = max_degree(nd->qptr, kptr, N);
    if (md > INT32_MAX / 2) { al_fail(c, "attention: a node with %lld edges is too many", (long long)md); return -1; }
    nd->maxdeg = (int)md;
    if (p->kind == AL_PAT_GRAPH) {
        al_graph_plan *m = al_arena_alloc(&c->arena, sizeof *m);
        if (!m) { al_fail(c, "attention: out of memory"); return -1; }
        *m = (al_graph_plan){p->adj->rowptr, p->adj->col, N, slots, kptr, kslot, kq, nd->maxdeg};
        c->arena.memo = m;
    }
    return 0;
}
