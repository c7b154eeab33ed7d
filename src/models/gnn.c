/* gnn.c — node classifiers on a graph (gat, gat-full, gcn, mlp): the model table, defaults,
 * parameters and the forward pass; see gnn.h. The layers around the attention are the fused ops
 * of src/ops/graph.c; the training loop is src/train/graph.c. */
#include "attnlab/io.h"
#include "attnlab/gnn.h"
#include "attnlab/attention.h"
#include "attnlab/ops.h"
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

/* ---------------- the model table (enum order) ---------------- */
static const al_gnn_model models[] = {
    {AL_GNN_GAT, "gat", "2 GAT layers over the edges and self-loops (8 heads x 8, ELU), then 1 head", 1, 1},
    {AL_GNN_GAT_FULL, "gat-full", "gat with every node attending to every node", 1, 0},
    {AL_GNN_GCN, "gcn", "2 GCN layers, D^-1/2 (A+I) D^-1/2, 16 hidden, ReLU", 0, 1},
    {AL_GNN_MLP, "mlp", "no graph: 2 layers, 64 hidden, ReLU", 0, 0},
};
enum { NMODELS = (int)(sizeof models / sizeof *models) };

const al_gnn_model *al_gnn_model_find(const char *name)
{
    for (int i = 0; name && i < NMODELS; i++)
        if (!strcmp(name, models[i].name)) return &models[i];
    return NULL;
}
int al_gnn_model_count(void) { return NMODELS; }
const al_gnn_model *al_gnn_model_at(int i) { return i >= 0 && i < NMODELS ? &models[i] : NULL; }
const char *al_gnn_names(void) { return "gat|gat-full|gcn|mlp"; }

const char *al_gnn_kind_name(al_gnn_kind kind) { return (unsigned)kind < NMODELS ? models[kind].name : "?"; }
al_status al_gnn_kind_parse(const char *name, al_gnn_kind *out, al_error *err)
{
    const al_gnn_model *gm = al_gnn_model_find(name);
    if (gm) { *out = gm->kind; return AL_OK; }
    return al_seterr(err, "unknown graph model '%s' (expected gat, gat-full, gcn or mlp)", name ? name : "(null)");
}

/* ---------------- model ---------------- */
static al_init glorot(int fan_in, int fan_out)
{
    al_init i = {AL_INIT_UNIFORM, 0.f};
    i.a = (float)sqrt(6.0 / ((double)fan_in + (double)fan_out));   /* no int overflow for a huge feature count */
    return i;
}
static const al_init zeros = {AL_INIT_ZEROS, 0.f};

/* Dense features for the first layer when at least AL_GNN_DENSE_MIN of the entries are stored:
 * the CSR's own values when it holds every entry in row-major order (no copy), else a dense copy. */
static al_status dense_features(al_gnn *m, al_error *err)
{
    const al_csr *x = m->feat;
    m->xdense = NULL; m->xdense_own = NULL;
    const int64_t full = (int64_t)x->rows * x->cols;
    if (!x->val || full <= 0 || (double)x->nnz < AL_GNN_DENSE_MIN * (double)full) return AL_OK;
    int complete = x->nnz == full;
    for (int i = 0; complete && i < x->rows; i++) complete = x->rowptr[i] == (int64_t)i * x->cols;
    for (int64_t k = 0; complete && k < x->nnz; k++) complete = x->col[k] == (int)(k % x->cols);
    if (complete) { m->xdense = x->val; return AL_OK; }
    if (al_mem_check(al_size_mul((uint64_t)full, sizeof(float)), err, "graph model: dense features %d x %d", x->rows, x->cols))
        return AL_ERR;
    float *d = calloc((size_t)full, sizeof *d);
    if (!d) return al_seterr(err, "graph model: out of memory for %lld dense features", (long long)full);
    for (int i = 0; i < x->rows; i++)
        for (int64_t k = x->rowptr[i]; k < x->rowptr[i + 1]; k++) d[(int64_t)i * x->cols + x->col[k]] += x->val[k];
    m->xdense = m->xdense_own = d;
    return AL_OK;
}

al_status al_gnn_init(al_gnn *m, const al_gnn_cfg *cfg, const al_graph *g, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    const al_gnn_model *gm = al_gnn_model_at((int)cfg->kind);
    if (!gm) return al_seterr(err, "graph model: unknown kind %d", (int)cfg->kind);
    m->cfg = *cfg;
    m->n = g->n; m->nfeat = g->nfeat; m->nclass = g->nclass; m->feat = &g->feat;
    if (cfg->hidden < 1 || cfg->heads < 1) return al_seterr(err, "graph model: hidden and heads must be >= 1");
    if (!(cfg->dropout >= 0 && cfg->dropout < 1) || !(cfg->attn_dropout >= 0 && cfg->attn_dropout < 1))
        return al_seterr(err, "graph model: dropout must be in [0, 1)");
    if (cfg->epochs < 1) return al_seterr(err, "graph model: epochs must be >= 1");
    /* Sizes before anything is allocated: F × width weights (values, gradients, AdamW moments). */
    const int64_t width = (int64_t)cfg->hidden * (gm->attention ? cfg->heads : 1);
    if (width > (1 << 24) || g->nfeat < 1 || g->nclass < 1)
        return al_seterr(err, "graph model: hidden %d x heads %d, %d features or %d classes out of range", cfg->hidden,
                         cfg->heads, g->nfeat, g->nclass);
    if (al_mem_check(al_size_mul(al_size_mul((uint64_t)g->nfeat + (uint64_t)g->nclass, (uint64_t)width), 4 * sizeof(float)),
                     err, "graph model %s: %d features x %lld hidden units (values, gradients, AdamW moments)", gm->name,
                     g->nfeat, (long long)width))
        return AL_ERR;
    al_params_init(&m->params);
    al_params *p = &m->params;
    int C = g->nclass, F = g->nfeat;
    if (gm->attention) {
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
        if (gm->graph && al_graph_adj_self_loops(g, &m->adj, err)) goto fail;
    } else {
        int Hd = cfg->hidden;
        m->w1 = al_params_add(p, "layer1.weight", 2, (int[]){F, Hd}, glorot(F, Hd));
        m->b1 = al_params_add(p, "layer1.bias", 1, (int[]){Hd}, zeros);
        m->w2 = al_params_add(p, "layer2.weight", 2, (int[]){Hd, C}, glorot(Hd, C));
        m->b2 = al_params_add(p, "layer2.bias", 1, (int[]){C}, zeros);
        if (!m->w1 || !m->b1 || !m->w2 || !m->b2) goto oom;
        if (gm->graph && al_graph_gcn_norm(g, &m->adj, err)) goto fail;
    }
    if (dense_features(m, err)) goto fail;
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
    free(m->xdense_own);
    m->xdense_own = NULL; m->xdense = NULL;
}

/* One GAT layer's attention over h (1, H, N, D) head-major → (1, H, N, D), q = k = v = h. */
static al_tensor *gat_attend(al_ctx *c, al_gnn *m, al_tensor *h, al_tensor *aq, al_tensor *ak, int layer)
{
    if (!h) return NULL;
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = al_gnn_model_at((int)m->cfg.kind)->graph ? al_pattern_graph(&m->adj) : al_pattern_full();
    d.score = AL_SCORE_ADDITIVE;
    d.norm = AL_NORM_SOFTMAX;
    d.slope = m->cfg.slope;
    d.dropout = m->cfg.attn_dropout;
    m->attn[layer] = NULL;
    if (m->capture_attn) d.weights = &m->attn[layer];
    return al_attention(c, &d, h, h, h, aq, ak, NULL, NULL);
}

/* GAT, two layers:
 *   h  (1, H, N, D) = dropout(X) · W1, heads split as it is written      al_gnn_project
 *   h  (1, H, N, D) = attention over A + I (or all nodes), q = k = v = h  al_attention
 *   z  (N, H·D)     = dropout(ELU(merge(h) + b1))                        al_gnn_bias_act_dropout
 *   z  (N, C)       = z · W2, then one head of attention, + b2
 * No tensor is copied only to change its layout. */
al_tensor *al_gnn_forward(al_ctx *c, al_gnn *m)
{
    if (!al_ok(c)) return NULL;
    const al_gnn_cfg *cfg = &m->cfg;
    const int n = m->n, C = m->nclass;
    switch (cfg->kind) {
    case AL_GNN_GAT: case AL_GNN_GAT_FULL: {
        al_tensor *h = al_gnn_project(c, m->feat, m->xdense, m->w1, cfg->heads, 1, cfg->dropout);    /* (1, H, N, D) */
        h = gat_attend(c, m, h, m->a1q, m->a1k, 0);                               /* (1, H, N, D) */
        h = al_gnn_bias_act_dropout(c, h, m->b1, 0, 1.0f, cfg->dropout);                 /* (N, H·D) */
        h = al_matmul(c, h, m->w2, 0, 0);                                         /* (N, C) */
        h = al_reshape(c, h, 4, (int[]){1, 1, n, C});                             /* (1, 1, N, C) */
        h = gat_attend(c, m, h, m->a2q, m->a2k, 1);                               /* (1, 1, N, C) */
        h = al_reshape(c, h, 2, (int[]){n, C});                                   /* (N, C) */
        return al_add_bcast(c, h, m->b2);
    }
    case AL_GNN_GCN: {
        al_tensor *h = al_gnn_project(c, m->feat, m->xdense, m->w1, 1, 0, cfg->dropout);             /* X W1: (N, hidden) */
        h = al_spmm(c, &m->adj, h);                                               /* Â X W1 */
        h = al_gnn_bias_act_dropout(c, h, m->b1, 1, 0.f, cfg->dropout);                  /* (N, hidden) */
        h = al_spmm(c, &m->adj, al_matmul(c, h, m->w2, 0, 0));                    /* (N, C) */
        return al_add_bcast(c, h, m->b2);
    }
    case AL_GNN_MLP: {
        al_tensor *h = al_gnn_project(c, m->feat, m->xdense, m->w1, 1, 0, cfg->dropout);             /* (N, hidden) */
        h = al_gnn_bias_act_dropout(c, h, m->b1, 1, 0.f, cfg->dropout);
        return al_add_bcast(c, al_matmul(c, h, m->w2, 0, 0), m->b2);
    }
    }
    return al_fail(c, "graph model: unknown kind %d", (int)cfg->kind);
}
