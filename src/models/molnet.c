/* molnet.c — graph-level models on molecules (molnet.h): the model table, parameters and forwards.
 * Every attention layer is al_attention with the GRAPH pattern over a block-diagonal CSR of the
 * batch (bonds + self, or every atom of the same molecule from al_csr_segments), so no atom ever
 * sees another molecule; score biases (bond type, shortest-path distance) are an embedding table
 * (kinds, heads) gathered per slot and transposed to al_attention's (heads, slots) bias. */
#include "attnlab/molnet.h"
#include "attnlab/attention.h"
#include "attnlab/ops.h"
#include "models/block_impl.h"
#include "models/budget_impl.h"
#include "models/table_impl.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NBOND_KINDS (AL_MOL_BOND_TYPES + 1)   /* self + 4 bond types */

static const al_init zeros = {AL_INIT_ZEROS, 0.f};

/* Register a PyTorch-style Linear (out, in) weight and bias under "name.weight" / "name.bias". */
static int linear_add(al_params *P, const char *name, int out, int in, al_tensor **w, al_tensor **b)
{
    char nm[96];
    snprintf(nm, sizeof nm, "%s.weight", name);
    *w = al_params_add(P, nm, 2, (int[]){out, in}, al_init_kaiming(in));
    if (b) { snprintf(nm, sizeof nm, "%s.bias", name); *b = al_params_add(P, nm, 1, (int[]){out}, al_init_kaiming(in)); }
    return *w && (!b || *b) ? 0 : -1;
}

/* A parameter named fmt with the layer number l filled in ("layers.%d.att"). */
static al_tensor *layer_param(al_molnet *m, const char *fmt, int l, int ndim, int d0, int d1, al_init ini)
{
    char nm[96];
    snprintf(nm, sizeof nm, fmt, l);
    return al_params_add(&m->params, nm, ndim, (int[]){d0, d1}, ini);
}

/* The readout and the head every graph model ends with: pool (S, dim) → d → 1. */
static int head_add(al_molnet *m)
{
    const int D = m->cfg.dim, H = m->cfg.heads;
    if (m->cfg.readout == AL_MOL_READ_ATTN && !(m->pool_w = al_params_add(&m->params, "pool.query", 2, (int[]){H, D}, al_init_kaiming(D))))
        return -1;
    return linear_add(&m->params, "out.0", m->cfg.hidden, D, &m->h1_w, &m->h1_b) ||
           linear_add(&m->params, "out.2", m->nout, m->cfg.hidden, &m->h2_w, &m->h2_b);
}

static al_tensor *readout(al_ctx *c, al_molnet *m, al_tensor *h /* (N, D) */, const al_mol_batch *b)
{
    if (m->cfg.readout != AL_MOL_READ_ATTN) return al_seg_pool(c, h, b->len, b->nmol, m->cfg.readout == AL_MOL_READ_MEAN);
    /* a learned query per head; its dot with a key projection W_k h is folded into one (H, D) matrix */
    al_tensor *s = al_scale(c, al_linear(c, h, m->pool_w, NULL), 1.0f / sqrtf((float)(m->cfg.dim / m->cfg.heads)));
    return al_seg_attn_pool(c, s, h, b->len, b->nmol, m->capture ? &m->pool_weights : NULL);   /* (S, D) */
}

static al_tensor *head(al_ctx *c, al_molnet *m, al_tensor *g /* (S, D) */)
{
    g = al_dropout(c, al_relu(c, al_linear(c, g, m->h1_w, m->h1_b)), m->cfg.dropout);
    return al_linear(c, g, m->h2_w, m->h2_b);   /* (S, nout) */
}

/* Score bias (H, slots) from a per-layer table (kinds, H) and each slot's kind. */
static al_tensor *slot_bias(al_ctx *c, al_tensor *table, const int *kind, int64_t slots)
{
    if (slots > 0x7fffffff) return al_fail(c, "molecule model: %lld attention slots", (long long)slots);
    return al_permute(c, al_embedding(c, table, kind, (int)slots), (int[]){1, 0});
}

/* ---------------- gt, gt-full ---------------- */
static int gt_init(al_molnet *m)
{
    const int D = m->cfg.dim, H = m->cfg.heads, kinds = m->kind->full ? AL_MOL_SPD_BUCKETS : NBOND_KINDS;
    if (linear_add(&m->params, "emb", D, m->nfeat, &m->emb_w, &m->emb_b)) return -1;
    for (int l = 0; l < m->cfg.depth; l++) {
        if (al__block_params_add(&m->params, &m->blocks[l], l, "", D, H, 2 * D, 0, AL_SCORE_DOT) ||
            !(m->bias[l] = layer_param(m, m->kind->full ? "blocks.%d.dist_bias" : "blocks.%d.bond_bias", l, 2, kinds, H, zeros)))
            return -1;
    }
    return 0;
}

static al_tensor *gt_forward(al_ctx *c, al_molnet *m, const al_mol_batch *b)
{
    const int N = b->natoms, D = m->cfg.dim;
    const al_csr *pat = m->kind->full ? b->full : &b->bonds;
    const int *kind = m->kind->full ? b->full_dist : b->bond_kind;
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = al_pattern_graph(pat);
    d.score = AL_SCORE_DOT; d.norm = AL_NORM_SOFTMAX;
    al_tensor *h = al_linear(c, al_wrap(c, b->x, 2, (int[]){N, b->nfeat}), m->emb_w, m->emb_b);
    h = al_reshape(c, h, 3, (int[]){1, N, D});
    for (int l = 0; l < m->cfg.depth; l++)
        h = al__block_forward_bias(c, &m->blocks[l], &d, m->cfg.heads, h, slot_bias(c, m->bias[l], kind, pat->nnz));
    return head(c, m, readout(c, m, al_reshape(c, h, 2, (int[]){N, D}), b));
}

/* ---------------- gat ---------------- */
static int gat_init(al_molnet *m)
{
    const int D = m->cfg.dim, H = m->cfg.heads, Dh = D / H;
    if (linear_add(&m->params, "emb", D, m->nfeat, &m->emb_w, &m->emb_b)) return -1;
    for (int l = 0; l < m->cfg.depth; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "layers.%d", l);
        if (linear_add(&m->params, nm, D, D, &m->lw[l], &m->lb[l])) return -1;
        if (!(m->lq[l] = layer_param(m, "layers.%d.att_dst", l, 2, H, Dh, al_init_kaiming(Dh))) ||
            !(m->lk[l] = layer_param(m, "layers.%d.att_src", l, 2, H, Dh, al_init_kaiming(Dh))) ||
            !(m->bias[l] = layer_param(m, "layers.%d.bond_bias", l, 2, NBOND_KINDS, H, zeros)))
            return -1;
    }
    return 0;
}

/* h += ELU(attention over bonds + self of (h W), additive score + bond bias) + b, per layer. */
static al_tensor *gat_forward(al_ctx *c, al_molnet *m, const al_mol_batch *b)
{
    const int N = b->natoms, D = m->cfg.dim, H = m->cfg.heads;
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = al_pattern_graph(&b->bonds);
    d.score = AL_SCORE_ADDITIVE; d.norm = AL_NORM_SOFTMAX; d.slope = 0.2f;
    al_tensor *h = al_linear(c, al_wrap(c, b->x, 2, (int[]){N, b->nfeat}), m->emb_w, m->emb_b);   /* (N, D) */
    for (int l = 0; l < m->cfg.depth; l++) {
        al_tensor *z = al_split_heads(c, al_reshape(c, al_linear(c, h, m->lw[l], NULL), 3, (int[]){1, N, D}), H);
        z = al_attention(c, &d, z, z, z, m->lq[l], m->lk[l], NULL, slot_bias(c, m->bias[l], b->bond_kind, b->bonds.nnz));
        z = al_reshape(c, al_merge_heads(c, z), 2, (int[]){N, D});
        h = al_add(c, h, al_elu(c, al_add_bcast(c, z, m->lb[l]), 1.0f));
    }
    return head(c, m, readout(c, m, h, b));
}

/* ---------------- gatv2 ---------------- */
static int gatv2_init(al_molnet *m)
{
    const int D = m->cfg.dim, H = m->cfg.heads, Dh = D / H;
    if (linear_add(&m->params, "emb", D, m->nfeat, &m->emb_w, &m->emb_b)) return -1;
    for (int l = 0; l < m->cfg.depth; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "layers.%d.lin_l", l);
        if (linear_add(&m->params, nm, D, D, &m->lw[l], NULL)) return -1;
        snprintf(nm, sizeof nm, "layers.%d.lin_r", l);
        if (linear_add(&m->params, nm, D, D, &m->lk[l], NULL)) return -1;
        if (!(m->lq[l] = layer_param(m, "layers.%d.att", l, 2, H, Dh, al_init_kaiming(Dh))) ||
            !(m->lb[l] = layer_param(m, "layers.%d.bias", l, 1, D, 1, zeros)) ||
            !(m->bias[l] = layer_param(m, "layers.%d.bond_bias", l, 2, NBOND_KINDS, H, zeros)))
            return -1;
    }
    return 0;
}

/* h += ELU(GATv2 over bonds + self (target W_r h, source and value W_l h, bond bias) + b), per layer. */
static al_tensor *gatv2_forward(al_ctx *c, al_molnet *m, const al_mol_batch *b)
{
    const int N = b->natoms;
    al_tensor *h = al_linear(c, al_wrap(c, b->x, 2, (int[]){N, b->nfeat}), m->emb_w, m->emb_b);   /* (N, D) */
    for (int l = 0; l < m->cfg.depth; l++) {
        al_tensor *z = al_gatv2(c, &b->bonds, al_linear(c, h, m->lk[l], NULL), al_linear(c, h, m->lw[l], NULL), m->lq[l],
                                slot_bias(c, m->bias[l], b->bond_kind, b->bonds.nnz), 0.2f);
        h = al_add(c, h, al_elu(c, al_add_bcast(c, z, m->lb[l]), 1.0f));
    }
    return head(c, m, readout(c, m, h, b));
}

/* ---------------- gcn ---------------- */
static int gcn_init(al_molnet *m)
{
    const int D = m->cfg.dim;
    if (linear_add(&m->params, "emb", D, m->nfeat, &m->emb_w, &m->emb_b)) return -1;
    for (int l = 0; l < m->cfg.depth; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "layers.%d", l);
        if (linear_add(&m->params, nm, D, D, &m->lw[l], &m->lb[l])) return -1;
    }
    return 0;
}

/* h = ReLU(Â h W + b), Â = D^-1/2 (A + I) D^-1/2 of each molecule. */
static al_tensor *gcn_forward(al_ctx *c, al_molnet *m, const al_mol_batch *b)
{
    const int N = b->natoms;
    al_tensor *h = al_relu(c, al_linear(c, al_wrap(c, b->x, 2, (int[]){N, b->nfeat}), m->emb_w, m->emb_b));
    for (int l = 0; l < m->cfg.depth; l++)
        h = al_relu(c, al_add_bcast(c, al_spmm(c, &b->gcn, al_linear(c, h, m->lw[l], NULL)), m->lb[l]));
    return head(c, m, readout(c, m, h, b));
}

/* ---------------- mlp, fingerprint ---------------- */
static int mlp_init(al_molnet *m)
{
    const int in = m->kind->fp ? AL_MOL_FP_BITS : m->nfeat, Hd = m->cfg.hidden;
    if (linear_add(&m->params, "mlp.0", Hd, in, &m->h1_w, &m->h1_b) || linear_add(&m->params, "mlp.2", Hd, Hd, &m->h2_w, &m->h2_b) ||
        linear_add(&m->params, "mlp.4", m->nout, Hd, &m->h3_w, &m->h3_b))
        return -1;
    return 0;
}

/* mlp: Σ atom features; fingerprint: the bits. → Linear, ReLU, dropout, Linear, ReLU, dropout, Linear. */
static al_tensor *mlp_forward(al_ctx *c, al_molnet *m, const al_mol_batch *b)
{
    al_tensor *x = m->kind->fp ? al_wrap(c, b->fp, 2, (int[]){b->nmol, AL_MOL_FP_BITS})
                               : al_seg_pool(c, al_wrap(c, b->x, 2, (int[]){b->natoms, b->nfeat}), b->len, b->nmol, 0);
    const float p = m->cfg.dropout;
    x = al_dropout(c, al_relu(c, al_linear(c, al_dropout(c, x, m->kind->fp ? p : 0.f), m->h1_w, m->h1_b)), p);
    x = al_dropout(c, al_relu(c, al_linear(c, x, m->h2_w, m->h2_b)), p);
    return al_linear(c, x, m->h3_w, m->h3_b);
}

/* ---------------- the table ---------------- */
static const al_molnet_arch models[] = {
    {"gat", "3 GAT layers (additive score) over bonds + self, bond-type bias, residual, ELU", 1, 0, 0, 1, 0.f, gat_init, gat_forward},
    {"gatv2", "3 GATv2 layers (LeakyReLU inside the score) over bonds + self, bond-type bias, residual, ELU", 1, 0, 0, 1, 0.f, gatv2_init, gatv2_forward},
    {"gt", "3 pre-LN transformer blocks masked by bonds + self, bond type as a per-head score bias", 1, 0, 0, 1, 0.f, gt_init, gt_forward},
    {"gt-full", "gt with every atom attending to its whole molecule, shortest-path distance bias", 1, 1, 0, 1, 0.f, gt_init, gt_forward},
    {"gcn", "3 GCN layers, D^-1/2 (A+I) D^-1/2 per molecule, ReLU", 0, 0, 0, 1, 0.f, gcn_init, gcn_forward},
    {"mlp", "no graph: the summed atom features through 2 ReLU layers", 0, 0, 0, 0, 0.f, mlp_init, mlp_forward},
    {"fingerprint", "Morgan-style bits (radius 2, 2048) computed from the graph, through 2 ReLU layers", 0, 0, 1, 0, 0.2f, mlp_init, mlp_forward},
};

AL__MODEL_TABLE(al_molnet_arch, models, al_molnet_arch_find, al_molnet_arch_count, al_molnet_arch_at, al_molnet_arch_names)

static const char *const readouts[] = {"sum", "mean", "attn"};
const char *al_mol_readout_name(al_mol_readout r) { return (unsigned)r < 3 ? readouts[r] : "?"; }
al_status al_mol_readout_parse(const char *s, al_mol_readout *out, al_error *err)
{
    for (int i = 0; i < 3; i++) if (s && !strcmp(s, readouts[i])) { *out = (al_mol_readout)i; return AL_OK; }
    return al_seterr(err, "unknown readout '%s' (expected sum, mean or attn)", s ? s : "(null)");
}

static void molnet_defaults(al_molnet_config *cfg, const al_molnet_arch *kind)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->model, sizeof cfg->model, "%s", kind ? kind->name : "");
    cfg->dim = 64; cfg->heads = 4; cfg->depth = 3;
    cfg->hidden = kind && kind->fp ? 256 : 64;
    cfg->readout = AL_MOL_READ_SUM;
    cfg->dropout = kind ? kind->dropout : 0.f;
    cfg->lr = 1e-3f; cfg->weight_decay = 0.01f;
    cfg->epochs = 150; cfg->batch = 32;
}

al_status al_molnet_config_default(al_molnet_config *cfg, const char *name, al_error *err)
{
    const al_molnet_arch *kind = al_molnet_arch_find(name);
    if (!kind) return al_seterr(err, "unknown molecule model '%s' (expected %s)", name ? name : "(null)", al_molnet_arch_names());
    molnet_defaults(cfg, kind);
    return AL_OK;
}

/* Standardisation of the target over the training split (NaN targets skipped). */
static al_status target_stats(al_molnet *m, const al_molset *ms, al_error *err)
{
    double s = 0, s2 = 0; int n = 0;
    for (int i = 0; i < ms->ntrain; i++) {
        double y = ms->y[(int64_t)ms->train[i] * ms->ntarget + m->cfg.target];
        if (isnan(y)) continue;
        s += y; s2 += y * y; n++;
    }
    if (n < 1) return al_seterr(err, "molecule model: no training molecule has target '%s'", ms->targets[m->cfg.target]);
    double mean = s / n, var = n > 1 ? (s2 - n * mean * mean) / (n - 1) : 1.0;
    m->y_mean = (float)mean; m->y_std = (float)(var > 1e-12 ? sqrt(var) : 1.0);
    return AL_OK;
}

al_status al_molnet_build(al_molnet *m, const al_molnet_config *cfg, int nfeat, int nout, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    if (!(m->kind = al_molnet_arch_find(cfg->model))) return al_seterr(err, "unknown molecule model '%s' (expected %s)", cfg->model, al_molnet_arch_names());
    if (cfg->dim < 1 || cfg->heads < 1 || cfg->dim % cfg->heads || cfg->dim > 4096)
        return al_seterr(err, "molecule model: dim %d must be a multiple of heads %d (and at most 4096)", cfg->dim, cfg->heads);
    if (cfg->depth < 1 || cfg->depth > AL_MOLNET_MAXDEPTH) return al_seterr(err, "molecule model: depth %d outside [1, %d]", cfg->depth, AL_MOLNET_MAXDEPTH);
    if (cfg->hidden < 1 || cfg->hidden > 65536 || cfg->batch < 1 || cfg->epochs < 1 || !(cfg->dropout >= 0 && cfg->dropout < 1))
        return al_seterr(err, "molecule model: hidden, batch, epochs must be >= 1 and dropout in [0, 1)");
    if (nfeat < 1 || nfeat > AL_MOL_MAX_ELEMENTS + 5 || (nout != 1 && nout != 2))
        return al_seterr(err, "molecule model: %d atom features (1 to %d) and %d outputs (1 or 2)", nfeat, AL_MOL_MAX_ELEMENTS + 5, nout);
    m->nfeat = nfeat;
    m->nout = nout;
    m->y_mean = 0.f; m->y_std = 1.f;
    al_params_init(&m->params);
    if (m->kind->init(m) || (m->kind->layers && head_add(m))) {   /* graph models end in a readout and a head */
        al_molnet_free(m);
        return al_seterr(err, "molecule model: out of memory registering parameters");
    }
    for (int i = 0; i < m->params.n; i++) m->params.decay[i] = 1;   /* AdamW over model.parameters() */
    if (al__params_budget(&m->params, "molecule model", cfg->model, err)) {   /* --hidden up to 65536: hidden² weights */
        al_molnet_free(m);
        return AL_ERR;
    }
    al_rng r; al_rng_seed(&r, seed, AL_RNG_INIT);
    if (al_params_finalize(&m->params, &r, err)) { al_molnet_free(m); return AL_ERR; }
    return AL_OK;
}

al_status al_molnet_init(al_molnet *m, const al_molnet_config *cfg, const al_molset *ms, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (cfg->target < 0 || cfg->target >= ms->ntarget) return al_seterr(err, "molecule model: target %d outside [0, %d)", cfg->target, ms->ntarget);
    const int nout = ms->binary[cfg->target] ? 2 : 1;
    float mean = 0.f, std = 1.f;
    if (nout == 1) {
        m->cfg = *cfg;
        if (target_stats(m, ms, err)) return AL_ERR;
        mean = m->y_mean; std = m->y_std;
    }
    if (al_molnet_build(m, cfg, al_mol_nfeat(ms), nout, seed, err)) return AL_ERR;
    m->y_mean = mean; m->y_std = std;
    return AL_OK;
}

void al_molnet_free(al_molnet *m) { al_params_free(&m->params); }

al_tensor *al_molnet_forward(al_ctx *c, al_molnet *m, const al_mol_batch *b)
{
    if (!al_ok(c)) return NULL;
    if (b->nfeat != m->nfeat) return al_fail(c, "molecule model: batch has %d atom features, the model %d", b->nfeat, m->nfeat);
    if ((m->kind->full && !b->full) || (m->kind->fp && !b->fp)) return al_fail(c, "molecule model %s: the batch lacks its %s", m->kind->name, m->kind->fp ? "fingerprints" : "full pattern");
    m->pool_weights = NULL;
    return m->kind->forward(c, m, b);
}
