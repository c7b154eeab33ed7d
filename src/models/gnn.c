/* gnn.c — node classifiers on a graph (gat, gat-full, gatv2, gt, gt-full, gcn, mlp): the model table,
 * defaults, parameters and the forward pass; see gnn.h. The layers around the attention are the fused
 * ops of src/ops/graph.c, GATv2's score is al_gatv2 (src/attention/gatv2.c), the graph transformer's
 * layer is the pre-LN block of the image, sequence and molecule transformers (src/models/block.c);
 * the training loop is src/train/graph.c. */
#include "attnlab/io.h"
#include "attnlab/gnn.h"
#include "attnlab/attention.h"
#include "attnlab/ops.h"
#include "models/block_impl.h"
#include "models/budget_impl.h"
#include "models/table_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- configuration ---------------- */
static void gnn_defaults(al_gnn_config *cfg, al_gnn_kind kind)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->weight_decay = 5e-4f;
    switch (kind) {
    case AL_GNN_GAT: case AL_GNN_GAT_FULL: case AL_GNN_GATV2:
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
    case AL_GNN_GT: case AL_GNN_GT_FULL:
        cfg->hidden = 8; cfg->heads = 8; cfg->layers = AL_GNN_GT_LAYERS; cfg->dropout = 0.6f;
        cfg->attn_dropout = kind == AL_GNN_GT ? 0.6f : AL_GNN_GT_FULL_ATTN_DROPOUT;
        cfg->lr = 0.005f; cfg->decay_all = 1; cfg->patience = 100;
        cfg->epochs = kind == AL_GNN_GT ? 1000 : AL_GNN_GT_FULL_EPOCHS;
        cfg->pe_dim = kind == AL_GNN_GT_FULL ? AL_GNN_PE_DIM : 0;
        break;
    }
}

/* ---------------- the model table (enum order) ---------------- */
static const al_gnn_arch models[] = {
    {AL_GNN_GAT, "gat", "2 GAT layers over the edges and self-loops (8 heads x 8, ELU), then 1 head", 1, 1, 1},
    {AL_GNN_GAT_FULL, "gat-full", "gat with every node attending to every node: the degenerate case (static "
     "attention, no residual: one ranking of keys for every query)", 1, 0, 1},
    {AL_GNN_GCN, "gcn", "2 GCN layers, D^-1/2 (A+I) D^-1/2, 16 hidden, ReLU", 0, 1, 0},
    {AL_GNN_MLP, "mlp", "no graph: 2 layers, 64 hidden, ReLU", 0, 0, 0},
    {AL_GNN_GATV2, "gatv2", "gat with GATv2's dynamic score (LeakyReLU before the dot with a)", 1, 1, 0},
    {AL_GNN_GT, "gt", "graph transformer: 2 pre-LN blocks (8 heads x 8, dot product) masked by A + I", 1, 1, 0},
    {AL_GNN_GT_FULL, "gt-full", "gt over all nodes, with 8 Laplacian eigenvectors (random signs) added to the input", 1, 0, 0},
};
enum { NMODELS = (int)(sizeof models / sizeof *models) };

AL__MODEL_TABLE(al_gnn_arch, models, al_gnn_arch_find, al_gnn_arch_count, al_gnn_arch_at, al_gnn_arch_names)

const char *al_gnn_kind_name(al_gnn_kind kind) { return (unsigned)kind < NMODELS ? models[kind].name : "?"; }
al_status al_gnn_kind_parse(const char *name, al_gnn_kind *out, al_error *err)
{
    const al_gnn_arch *gm = al_gnn_arch_find(name);
    if (gm) { *out = gm->kind; return AL_OK; }
    return al_seterr(err, "unknown graph model '%s' (expected gat, gat-full, gatv2, gt, gt-full, gcn or mlp)", name ? name : "(null)");
}

al_status al_gnn_config_default(al_gnn_config *cfg, const char *name, al_error *err)
{
    al_gnn_kind kind = AL_GNN_GAT;
    al_status st = al_gnn_kind_parse(name, &kind, err);
    if (st == AL_OK) gnn_defaults(cfg, kind);
    return st;
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

al_status al_gnn_init(al_gnn *m, const al_gnn_config *cfg, const al_graph *g, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    const al_gnn_arch *gm = al_gnn_arch_at((int)cfg->kind);
    if (!gm) return al_seterr(err, "graph model: unknown kind %d", (int)cfg->kind);
    m->cfg = *cfg;
    m->n = g->n; m->nfeat = g->nfeat; m->nclass = g->nclass; m->feat = &g->feat;
    if (cfg->hidden < 1 || cfg->heads < 1) return al_seterr(err, "graph model: hidden and heads must be >= 1");
    if (!(cfg->dropout >= 0 && cfg->dropout < 1) || !(cfg->attn_dropout >= 0 && cfg->attn_dropout < 1))
        return al_seterr(err, "graph model: dropout must be in [0, 1)");
    if (cfg->epochs < 1) return al_seterr(err, "graph model: epochs must be >= 1");
    const int gt = cfg->kind == AL_GNN_GT || cfg->kind == AL_GNN_GT_FULL;
    if (gt && (cfg->layers < 1 || cfg->layers > AL_GNN_MAXLAYERS))
        return al_seterr(err, "graph model: %d transformer blocks outside [1, %d]", cfg->layers, AL_GNN_MAXLAYERS);
    if (cfg->kind == AL_GNN_GT_FULL && (cfg->pe_dim < 1 || cfg->pe_dim > 64))
        return al_seterr(err, "graph model: %d positional encodings outside [1, 64]", cfg->pe_dim);
    /* Sizes before anything is allocated: F × width weights (values, gradients, AdamW moments). */
    const int64_t width = (int64_t)cfg->hidden * (gm->attention ? cfg->heads : 1);
    if (width > (1 << 24) || g->nfeat < 1 || g->nclass < 1)
        return al_seterr(err, "graph model: hidden %d x heads %d, %d features or %d classes out of range", cfg->hidden,
                         cfg->heads, g->nfeat, g->nclass);
    if (al_mem_check(al_size_mul(al_size_mul(2 * ((uint64_t)g->nfeat + (uint64_t)g->nclass), (uint64_t)width), 4 * sizeof(float)),
                     err, "graph model %s: %d features x %lld hidden units (values, gradients, AdamW moments)", gm->name,
                     g->nfeat, (long long)width))
        return AL_ERR;
    al_params_init(&m->params);
    al_params *p = &m->params;
    int C = g->nclass, F = g->nfeat;
    if (cfg->kind == AL_GNN_GATV2) {
        /* PyG's GATv2Conv (share_weights=False): target and source projections side by side */
        int H = cfg->heads, D = cfg->hidden;
        m->w1 = al_params_add(p, "layer1.weight", 2, (int[]){F, 2 * H * D}, glorot(F, H * D));
        m->a1q = al_params_add(p, "layer1.att", 2, (int[]){H, D}, glorot(D, 1));
        m->b1 = al_params_add(p, "layer1.bias", 1, (int[]){H * D}, zeros);
        m->w2 = al_params_add(p, "layer2.weight", 2, (int[]){H * D, 2 * C}, glorot(H * D, C));
        m->a2q = al_params_add(p, "layer2.att", 2, (int[]){1, C}, glorot(C, 1));
        m->b2 = al_params_add(p, "layer2.bias", 1, (int[]){C}, zeros);
        if (!m->w1 || !m->a1q || !m->b1 || !m->w2 || !m->a2q || !m->b2) goto oom;
        if (al_graph_adj_self_loops(g, &m->adj, err)) goto fail;
    } else if (gt) {
        int W = cfg->heads * cfg->hidden;
        m->w1 = al_params_add(p, "layer1.weight", 2, (int[]){F, W}, glorot(F, W));
        m->b1 = al_params_add(p, "layer1.bias", 1, (int[]){W}, zeros);
        if (!m->w1 || !m->b1) goto oom;
        m->ln0_w = al_params_add(p, "ln0.weight", 1, (int[]){W}, (al_init){AL_INIT_ONES, 0.f});
        m->ln0_b = al_params_add(p, "ln0.bias", 1, (int[]){W}, zeros);
        if (!m->ln0_w || !m->ln0_b) goto oom;
        if (cfg->pe_dim > 0 && !(m->wpe = al_params_add(p, "pe.weight", 2, (int[]){cfg->pe_dim, W}, glorot(cfg->pe_dim, W))))
            goto oom;
        for (int l = 0; l < cfg->layers; l++)
            if (al__block_params_add(p, &m->blocks[l], l, "", W, cfg->heads, 2 * W, 0, AL_SCORE_DOT)) goto oom;
        m->w2 = al_params_add(p, "layer2.weight", 2, (int[]){W, C}, glorot(W, C));
        m->b2 = al_params_add(p, "layer2.bias", 1, (int[]){C}, zeros);
        if (!m->w2 || !m->b2) goto oom;
        if (gm->graph && al_graph_adj_self_loops(g, &m->adj, err)) goto fail;
        if (cfg->pe_dim > 0) {
            if (!(m->pe = malloc((size_t)g->n * (size_t)cfg->pe_dim * sizeof *m->pe))) goto oom;
            if (al_graph_lap_pe(&g->adj, cfg->pe_dim, AL_EIG_AUTO, m->pe, NULL, err)) goto fail;
        }
    } else if (gm->attention) {
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
    /* gat and gt: the attention's per-key lists of the fixed adjacency once, not in every step */
    if (gm->graph && cfg->kind != AL_GNN_GCN && cfg->kind != AL_GNN_GATV2 && !(m->plan = al_graph_plan_new(&m->adj, err))) goto fail;
    for (int i = 0; i < p->n; i++) p->decay[i] = cfg->decay_all ? 1 : p->t[i] == m->w1;
    /* every layer's weights, not only the first and last counted above (gt's blocks hold width² each) */
    if (al__params_budget(p, "graph model", gm->name, err)) goto fail;
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
    al_graph_plan_free(m->plan);
    m->plan = NULL;
    al_csr_free(&m->adj);
    free(m->pe);
    m->pe = NULL;
    free(m->xdense_own);
    m->xdense_own = NULL; m->xdense = NULL;
}

/* One GAT layer's attention over h (1, H, N, D) head-major → (1, H, N, D), q = k = v = h. */
static al_tensor *gat_attend(al_ctx *c, al_gnn *m, al_tensor *h, al_tensor *aq, al_tensor *ak, int layer)
{
    if (!h) return NULL;
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = al_gnn_arch_at((int)m->cfg.kind)->graph ? al_pattern_graph_plan(&m->adj, m->plan) : al_pattern_full();
    d.score = AL_SCORE_ADDITIVE;
    d.norm = AL_NORM_SOFTMAX;
    d.slope = m->cfg.slope;
    d.dropout = m->cfg.attn_dropout;
    m->attn[layer] = NULL;
    if (m->capture_attn) d.weights = &m->attn[layer];
    return al_attention(c, &d, h, h, h, aq, ak, NULL, NULL);
}

/* GATv2 layer: z (N, 2·H·D) holds the target and the source projections → (N, H·D). */
static al_tensor *gatv2_attend(al_ctx *c, al_gnn *m, al_tensor *z, al_tensor *a, int HD)
{
    al_tensor *q = al_slice_last(c, z, 0, HD), *k = al_slice_last(c, z, HD, HD);   /* (N, H·D) each */
    return al_gatv2_dropout(c, &m->adj, q, k, a, NULL, m->cfg.slope, m->cfg.attn_dropout);
}

/* gt-full's positional encodings as a constant (N, k): each eigenvector's sign flipped at random
 * while training (one draw of c->dropout_rng per pass), as they are in evaluation otherwise. */
static al_tensor *pe_input(al_ctx *c, al_gnn *m)
{
    const int n = m->n, k = m->cfg.pe_dim;
    al_tensor *p = al_new(c, 2, (int[]){n, k});
    if (!p) return NULL;
    const uint64_t bits = c->training ? al_rng_u64(&c->dropout_rng) : 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) p->data[(int64_t)i * k + j] = bits >> j & 1 ? -m->pe[(int64_t)i * k + j] : m->pe[(int64_t)i * k + j];
    return p;
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
    const al_gnn_config *cfg = &m->cfg;
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
    case AL_GNN_GATV2: {     /* gat's layers with al_gatv2 for the attention */
        const int HD = cfg->heads * cfg->hidden;
        al_tensor *h = al_gnn_project(c, m->feat, m->xdense, m->w1, 1, 0, cfg->dropout);   /* (N, 2·H·D) */
        h = gatv2_attend(c, m, h, m->a1q, HD);                                    /* (N, H·D) */
        h = al_gnn_bias_act_dropout(c, h, m->b1, 0, 1.0f, cfg->dropout);          /* (N, H·D) */
        h = gatv2_attend(c, m, al_matmul(c, h, m->w2, 0, 0), m->a2q, C);          /* (N, C) */
        return al_add_bcast(c, h, m->b2);
    }
    case AL_GNN_GT: case AL_GNN_GT_FULL: {
        /* h = LN(dropout(X) W1 + b1 [+ PE Wpe]); blocks x ← x + dropout(attn(LN x)),
         * x ← x + dropout(FFN(LN x)); dropout; W2 */
        const int W = cfg->heads * cfg->hidden;
        al_attn_desc d;
        memset(&d, 0, sizeof d);
        d.pattern = cfg->kind == AL_GNN_GT ? al_pattern_graph_plan(&m->adj, m->plan) : al_pattern_full();
        d.score = AL_SCORE_DOT; d.norm = AL_NORM_SOFTMAX; d.dropout = cfg->attn_dropout;
        al_tensor *h = al_gnn_project(c, m->feat, m->xdense, m->w1, 1, 0, cfg->dropout);   /* (N, W) */
        h = al_add_bcast(c, h, m->b1);
        if (m->pe) h = al_add(c, h, al_matmul(c, pe_input(c, m), m->wpe, 0, 0));
        /* normalised: the residual stream starts at the attention outputs' scale (row-normalised
         * bag-of-words features give an embedding ~50x smaller) */
        h = al_layernorm(c, h, m->ln0_w, m->ln0_b, 1e-5f);
        h = al_reshape(c, h, 3, (int[]){1, n, W});                                /* (1, N, W) */
        for (int l = 0; l < cfg->layers; l++)
            h = al__block_forward_drop(c, &m->blocks[l], &d, cfg->heads, h, NULL, cfg->dropout);
        h = al_dropout(c, al_reshape(c, h, 2, (int[]){n, W}), cfg->dropout);      /* (N, W) */
        return al_add_bcast(c, al_matmul(c, h, m->w2, 0, 0), m->b2);              /* (N, C) */
    }
    case AL_GNN_MLP: {
        al_tensor *h = al_gnn_project(c, m->feat, m->xdense, m->w1, 1, 0, cfg->dropout);             /* (N, hidden) */
        h = al_gnn_bias_act_dropout(c, h, m->b1, 1, 0.f, cfg->dropout);
        return al_add_bcast(c, al_matmul(c, h, m->w2, 0, 0), m->b2);
    }
    }
    return al_fail(c, "graph model: unknown kind %d", (int)cfg->kind);
}
