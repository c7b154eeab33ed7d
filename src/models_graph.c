/* models_graph.c — node classifiers on a graph (gat, gat-full, gcn, mlp), sparse input dropout,
 * and the full-batch training loop with the GAT paper's early stopping. */
#include "attnlab/graph.h"
#include "attnlab/attention.h"
#include "attnlab/ops.h"
#include "attnlab/optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- configuration ---------------- */
void al_gnn_defaults(al_gnn_cfg *cfg, al_gnn_kind kind)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->weight_decay = 5e-4f;
    switch (kind) {
    case AL_GNN_GAT: case AL_GNN_GAT_FULL:
        cfg->hidden = 8; cfg->heads = 8; cfg->dropout = 0.6f; cfg->attn_dropout = 0.6f; cfg->slope = 0.2f;
        cfg->lr = 0.005f; cfg->decay_all = 1; cfg->epochs = 1000; cfg->patience = 100;
        break;
    case AL_GNN_GCN:
        cfg->hidden = 16; cfg->heads = 1; cfg->dropout = 0.5f; cfg->lr = 0.01f; cfg->decay_all = 0;
        cfg->epochs = 200; cfg->patience = 0;
        break;
    case AL_GNN_MLP:
        cfg->hidden = 64; cfg->heads = 1; cfg->dropout = 0.5f; cfg->lr = 0.01f; cfg->decay_all = 0;
        cfg->epochs = 200; cfg->patience = 0;
        break;
    }
}

static const char *kind_names[] = {"gat", "gat-full", "gcn", "mlp"};
const char *al_gnn_kind_name(al_gnn_kind kind) { return (unsigned)kind < 4 ? kind_names[kind] : "?"; }
al_status al_gnn_kind_parse(const char *name, al_gnn_kind *out, al_error *err)
{
    for (int i = 0; i < 4; i++) if (name && !strcmp(name, kind_names[i])) { *out = (al_gnn_kind)i; return AL_OK; }
    return al_seterr(err, "unknown graph model '%s' (expected gat, gat-full, gcn or mlp)", name ? name : "(null)");
}

/* ---------------- model ---------------- */
static al_init glorot(int fan_in, int fan_out)
{
    al_init i = {AL_INIT_UNIFORM, 0.f};
    i.a = (float)sqrt(6.0 / (double)(fan_in + fan_out));
    return i;
}
static const al_init zeros = {AL_INIT_ZEROS, 0.f};

al_status al_gnn_init(al_gnn *m, const al_gnn_cfg *cfg, const al_graph *g, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->n = g->n; m->nfeat = g->nfeat; m->nclass = g->nclass; m->feat = &g->feat;
    if (cfg->hidden < 1 || cfg->heads < 1) return al_seterr(err, "graph model: hidden and heads must be >= 1");
    if (!(cfg->dropout >= 0 && cfg->dropout < 1) || !(cfg->attn_dropout >= 0 && cfg->attn_dropout < 1))
        return al_seterr(err, "graph model: dropout must be in [0, 1)");
    if (cfg->epochs < 1) return al_seterr(err, "graph model: epochs must be >= 1");
    al_params_init(&m->params);
    al_params *p = &m->params;
    int C = g->nclass, F = g->nfeat;
    if (cfg->kind == AL_GNN_GAT || cfg->kind == AL_GNN_GAT_FULL) {
        int H = cfg->heads, D = cfg->hidden;
        m->w1 = al_params_add(p, "layer1.weight", 2, (int[]){F, H * D}, glorot(F, H * D));
        m->a1q = al_params_add(p, "layer1.att_dst", 2, (int[]){H, D}, glorot(D, 1));
        m->a1k = al_params_add(p, "layer1.att_src", 2, (int[]){H, D}, glorot(D, 1));
        m->b1 = al_params_add(p, "layer1.bias", 1, (int[]){H * D}, zeros);
        m->w2 = al_params_add(p, "layer2.weight", 2, (int[]){H * D, C}, glorot(H * D, C));
        m->a2q = al_params_add(p, "layer2.att_dst", 2, (int[]){1, C}, glorot(C, 1));
        m->a2k = al_params_add(p, "layer2.att_src", 2, (int[]){1, C}, glorot(C, 1));
        m->b2 = al_params_add(p, "layer2.bias", 1, (int[]){C}, zeros);
        if (!m->w1 || !m->a1q || !m->a1k || !m->b1 || !m->w2 || !m->a2q || !m->a2k || !m->b2) goto oom;
        if (cfg->kind == AL_GNN_GAT && al_graph_adj_self_loops(g, &m->adj, err)) goto fail;
    } else {
        int Hd = cfg->hidden;
        m->w1 = al_params_add(p, "layer1.weight", 2, (int[]){F, Hd}, glorot(F, Hd));
        m->b1 = al_params_add(p, "layer1.bias", 1, (int[]){Hd}, zeros);
        m->w2 = al_params_add(p, "layer2.weight", 2, (int[]){Hd, C}, glorot(Hd, C));
        m->b2 = al_params_add(p, "layer2.bias", 1, (int[]){C}, zeros);
        if (!m->w1 || !m->b1 || !m->w2 || !m->b2) goto oom;
        if (cfg->kind == AL_GNN_GCN && al_graph_gcn_norm(g, &m->adj, err)) goto fail;
    }
    for (int i = 0; i < p->n; i++) p->decay[i] = cfg->decay_all ? 1 : p->t[i] == m->w1;
    al_rng r; al_rng_seed(&r, seed, AL_RNG_INIT);
    if (al_params_finalize(p, &r, err)) goto fail;
    return AL_OK;
oom:
    al_seterr(err, "graph model: out of memory registering parameters");
fail:
    al_gnn_free(m);
    return AL_ERR;
}

void al_gnn_free(al_gnn *m)
{
    al_params_free(&m->params);
    al_csr_free(&m->adj);
}

/* Inverted dropout on the stored values of a constant sparse matrix (no gradient flows into it).
 * The mask is counter-based: entry k keeps its value when 32 bits of splitmix64(base + k/2) are
 * >= p·2^32, base being one draw of c->dropout_rng, so it does not depend on the thread count. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
const al_csr *al_csr_dropout(al_ctx *c, const al_csr *s, float p)
{
    if (!s || !al_ok(c)) return NULL;
    if (!c->training || p <= 0.f) return s;
    if (p >= 1.f) return al_fail(c, "csr_dropout: p must be < 1, got %g", (double)p);
    al_csr *o = al_arena_alloc(&c->arena, sizeof *o);
    float *v = al_arena_alloc(&c->arena, (size_t)(s->nnz > 0 ? s->nnz : 1) * sizeof(float));  /* (nnz) */
    if (!o || !v) return al_fail(c, "csr_dropout: out of memory (arena)");
    *o = *s; o->val = v;
    const float *sv = s->val;   /* (nnz) or NULL = ones */
    const uint64_t base = al_rng_u64(&c->dropout_rng);
    const uint32_t thr = (uint32_t)fmin(4294967295.0, (double)p * 4294967296.0);
    const float scale = 1.0f / (1.0f - p);
    const int64_t npair = (s->nnz + 1) / 2, nnz = s->nnz;
    #pragma omp parallel for schedule(static) if (npair > 65536)
    for (int64_t q = 0; q < npair; q++) {
        uint64_t z = mix64(base + 0x9e3779b97f4a7c15ULL * (uint64_t)(q + 1));
        int64_t k = 2 * q;
        v[k] = (uint32_t)z >= thr ? (sv ? sv[k] : 1.0f) * scale : 0.0f;
        if (k + 1 < nnz) v[k + 1] = (uint32_t)(z >> 32) >= thr ? (sv ? sv[k + 1] : 1.0f) * scale : 0.0f;
    }
    return o;
}

/* One GAT layer's attention over h (n, heads·d) → (n, heads·d), q = k = v = h per head. */
static al_tensor *gat_attend(al_ctx *c, al_gnn *m, al_tensor *h, int heads, al_tensor *aq, al_tensor *ak, int layer)
{
    if (!h) return NULL;
    int n = m->n, hd = h->shape[1];
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = m->cfg.kind == AL_GNN_GAT ? al_pattern_graph(&m->adj) : al_pattern_full();
    d.score = AL_SCORE_ADDITIVE;
    d.norm = AL_NORM_SOFTMAX;
    d.slope = m->cfg.slope;
    d.dropout = m->cfg.attn_dropout;
    m->attn[layer] = NULL;
    if (m->capture_attn) d.weights = &m->attn[layer];
    al_tensor *x;
    if (heads == 1) {   /* one head: (N, D) and (1, 1, N, D) share a layout, no copy */
        x = al_reshape(c, h, 4, (int[]){1, 1, n, hd});                /* (1, 1, N, D) */
        x = al_attention(c, &d, x, x, x, aq, ak, NULL, NULL);        /* (1, 1, N, D) */
    } else {
        x = al_reshape(c, h, 3, (int[]){1, n, hd});                   /* (1, N, H·D) */
        x = al_split_heads(c, x, heads);                              /* (1, H, N, D) */
        x = al_attention(c, &d, x, x, x, aq, ak, NULL, NULL);        /* (1, H, N, D) */
        x = al_merge_heads(c, x);                                     /* (1, N, H·D) */
    }
    return al_reshape(c, x, 2, (int[]){n, hd});                       /* (N, H·D) */
}

al_tensor *al_gnn_forward(al_ctx *c, al_gnn *m)
{
    if (!al_ok(c)) return NULL;
    const al_gnn_cfg *cfg = &m->cfg;
    const al_csr *x = al_csr_dropout(c, m->feat, cfg->dropout);   /* (N, F) sparse */
    al_tensor *h = al_spmm(c, x, m->w1);                             /* (N, hidden·heads) */
    switch (cfg->kind) {
    case AL_GNN_GAT: case AL_GNN_GAT_FULL:
        h = gat_attend(c, m, h, cfg->heads, m->a1q, m->a1k, 0);
        h = al_elu(c, al_add_bcast(c, h, m->b1), 1.0f);
        h = al_dropout(c, h, cfg->dropout);
        h = al_matmul(c, h, m->w2, 0, 0);                            /* (N, C) */
        h = gat_attend(c, m, h, 1, m->a2q, m->a2k, 1);
        return al_add_bcast(c, h, m->b2);
    case AL_GNN_GCN:
        h = al_spmm(c, &m->adj, h);                                  /* Â X W1: (N, hidden) */
        h = al_relu(c, al_add_bcast(c, h, m->b1));
        h = al_dropout(c, h, cfg->dropout);
        h = al_spmm(c, &m->adj, al_matmul(c, h, m->w2, 0, 0));       /* (N, C) */
        return al_add_bcast(c, h, m->b2);
    case AL_GNN_MLP:
        h = al_relu(c, al_add_bcast(c, h, m->b1));
        h = al_dropout(c, h, cfg->dropout);
        return al_add_bcast(c, al_matmul(c, h, m->w2, 0, 0), m->b2);
    }
    return al_fail(c, "graph model: unknown kind %d", (int)cfg->kind);
}

/* ---------------- training ---------------- */
al_status al_gnn_step(al_gnn *m, const al_graph *g, al_ctx *c, al_optim *o, double *loss, al_error *err)
{
    al_ctx_reset(c);
    c->training = 1; c->grad_enabled = 1;
    int *lab = al_arena_alloc(&c->arena, (size_t)g->n * sizeof *lab);        /* (N) */
    uint8_t *mask = al_arena_calloc(&c->arena, (size_t)g->n);                /* (N) */
    if (!lab || !mask) return al_seterr(err, "graph training: out of memory");
    for (int i = 0; i < g->n; i++) lab[i] = g->label[i] >= 0 ? g->label[i] : 0;
    for (int i = 0; i < g->ntrain; i++) mask[g->train[i]] = 1;
    al_tensor *logits = al_gnn_forward(c, m);
    al_tensor *L = al_cross_entropy(c, logits, lab, mask);
    al_params_zero_grad(&m->params);
    if (!L || al_backward(c, L) != AL_OK) return al_seterr(err, "graph training: %s", al_ctx_error(c));
    if (loss) *loss = L->data[0];
    al_optim_step(o, &m->params);
    return AL_OK;
}

static void split_stats(const float *lg, int C, const int *label, const int *ids, int n, double *loss, double *acc)
{
    double ls = 0; long hit = 0;
    for (int t = 0; t < n; t++) {
        const float *z = lg + (int64_t)ids[t] * C;        /* (C) */
        int y = label[ids[t]], arg = 0;
        double mx = z[0];
        for (int k = 1; k < C; k++) if (z[k] > mx) { mx = z[k]; arg = k; }
        double s = 0;
        for (int k = 0; k < C; k++) s += exp((double)z[k] - mx);
        ls += mx + log(s) - z[y];
        hit += arg == y;
    }
    *loss = n ? ls / n : NAN;
    *acc = n ? (double)hit / n : NAN;
}

al_status al_gnn_evaluate(al_gnn *m, const al_graph *g, al_ctx *c, al_gnn_eval *ev, al_error *err)
{
    al_ctx_reset(c);
    int tr = c->training, ge = c->grad_enabled;
    c->training = 0; c->grad_enabled = 0;
    al_tensor *lg = al_gnn_forward(c, m);       /* (N, C) */
    c->training = tr; c->grad_enabled = ge;
    if (!lg) return al_seterr(err, "graph evaluation: %s", al_ctx_error(c));
    split_stats(lg->data, m->nclass, g->label, g->train, g->ntrain, &ev->train_loss, &ev->train_acc);
    split_stats(lg->data, m->nclass, g->label, g->val, g->nval, &ev->val_loss, &ev->val_acc);
    split_stats(lg->data, m->nclass, g->label, g->test, g->ntest, &ev->test_loss, &ev->test_acc);
    return AL_OK;
}

al_status al_gnn_train(al_gnn *m, const al_graph *g, uint64_t seed, al_gnn_epoch_fn fn, void *ud,
                       al_gnn_result *res, al_error *err)
{
    memset(res, 0, sizeof *res);
    al_ctx *c = al_ctx_new(seed);
    float *best = malloc((size_t)(m->params.total > 0 ? m->params.total : 1) * sizeof *best);
    al_optim o; memset(&o, 0, sizeof o);
    if (!c || !best) { al_ctx_free(c); free(best); return al_seterr(err, "graph training: out of memory"); }
    if (al_optim_init(&o, AL_ADAM, m->params.total, m->cfg.lr, err)) { al_ctx_free(c); free(best); return AL_ERR; }
    o.weight_decay = m->cfg.weight_decay;
    memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
    double acc_max = -1, loss_min = INFINITY, step_total = 0;
    int bad = 0, best_epoch = 0, e;
    al_status st = AL_OK;
    int capture = m->capture_attn;
    m->capture_attn = 0;
    for (e = 1; e <= m->cfg.epochs; e++) {
        double t0 = al_time(), loss = 0;
        if (al_gnn_step(m, g, c, &o, &loss, err)) { st = AL_ERR; break; }
        double dt = al_time() - t0;
        step_total += dt;
        al_gnn_eval ev;
        if (al_gnn_evaluate(m, g, c, &ev, err)) { st = AL_ERR; break; }
        int stop = 0;
        if (ev.val_acc >= acc_max || ev.val_loss <= loss_min) {
            if (ev.val_acc >= acc_max && ev.val_loss <= loss_min) {
                memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
                best_epoch = e;
            }
            if (ev.val_acc > acc_max) acc_max = ev.val_acc;
            if (ev.val_loss < loss_min) loss_min = ev.val_loss;
            bad = 0;
        } else if (m->cfg.patience > 0 && ++bad >= m->cfg.patience) {
            stop = 1;
        }
        al_gnn_epoch rec = {e, 0, loss, ev.train_acc, ev.val_loss, ev.val_acc, ev.test_acc, dt};
        if (fn && fn(&rec, ud)) stop = 1;
        if (stop) { e++; break; }
    }
    res->epochs_run = e - 1;
    if (st == AL_OK) {
        memcpy(m->params.data, best, (size_t)m->params.total * sizeof *best);
        al_gnn_eval ev;
        if (al_gnn_evaluate(m, g, c, &ev, err)) st = AL_ERR;
        else {
            res->best_epoch = best_epoch;
            res->train_acc = ev.train_acc; res->val_loss = ev.val_loss;
            res->val_acc = ev.val_acc; res->test_acc = ev.test_acc;
            res->step_seconds = res->epochs_run ? step_total / res->epochs_run : 0;
            al_gnn_epoch rec = {best_epoch, 1, ev.train_loss, ev.train_acc, ev.val_loss, ev.val_acc, ev.test_acc, NAN};
            if (fn) fn(&rec, ud);
        }
    }
    m->capture_attn = capture;
    m->attn[0] = m->attn[1] = NULL;
    al_optim_free(&o);
    al_ctx_free(c);
    free(best);
    return st;
}
