/* transformer.c — the sa, local and gpsa image models: patch embedding, positions, pre-LN blocks of
 * multi-head self-attention (full for sa, a window of the token grid for local, gated positional for
 * gpsa) and a GELU MLP; entries of the model table in image.c. Layers, names and initialisation are the PyTorch peer's. */
#include "image_impl.h"
#include "block_impl.h"
#include "attnlab/ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void al__local_defaults(al_model_config *cfg) { cfg->pos = AL_POS_RELATIVE; }

static al_status attn_check(const al_model_config *cfg, int windowed, al_error *err)
{
    if (cfg->dim < 1 || cfg->heads < 1 || cfg->dim % cfg->heads)
        return al_seterr(err, "%s: --dim %d must be a positive multiple of --heads %d", cfg->name, cfg->dim, cfg->heads);
    if (cfg->depth < 1 || cfg->depth > AL_MODEL_MAXDEPTH)
        return al_seterr(err, "%s: --depth must be 1..%d, got %d", cfg->name, AL_MODEL_MAXDEPTH, cfg->depth);
    if (cfg->hidden < 1) return al_seterr(err, "%s: MLP hidden size must be positive", cfg->name);
    if (cfg->patch < 1 || cfg->height % cfg->patch || cfg->width % cfg->patch)
        return al_seterr(err, "%s: --patch %d must divide the image size %dx%d", cfg->name, cfg->patch, cfg->height, cfg->width);
    if (windowed && (cfg->window < 1 || cfg->window % 2 == 0))
        return al_seterr(err, "local: --window must be odd and positive, got %d", cfg->window);
    if (cfg->pos == AL_POS_SINUSOIDAL && cfg->dim % 4)
        return al_seterr(err, "%s: sinusoidal positions need --dim divisible by 4, got %d", cfg->name, cfg->dim);
    if ((int)cfg->score < 0 || cfg->score > AL_SCORE_ADDITIVE || (int)cfg->norm < 0 || cfg->norm > AL_NORM_RELU ||
        (int)cfg->pos < 0 || cfg->pos > AL_POS_RELATIVE)
        return al_seterr(err, "%s: bad score/norm/pos setting", cfg->name);
    return AL_OK;
}
al_status al__sa_check(const al_model_config *cfg, al_error *err) { return attn_check(cfg, 0, err); }
al_status al__local_check(const al_model_config *cfg, al_error *err) { return attn_check(cfg, 1, err); }

/* 2-D sinusoidal positions: the first dim/2 channels encode the row, the rest the column,
 * each as sin/cos pairs with frequencies 10000^(-2i/(dim/2)). */
static void fill_sincos(float *pe /* (gh·gw, D) */, int gh, int gw, int D)
{
    int half = D / 2;
    for (int y = 0; y < gh; y++)
        for (int x = 0; x < gw; x++) {
            float *r = pe + ((size_t)y * gw + x) * D;
            for (int i = 0; i < half / 2; i++) {
                double f = pow(10000.0, -2.0 * i / half);
                r[2 * i] = (float)sin(y * f); r[2 * i + 1] = (float)cos(y * f);
                r[half + 2 * i] = (float)sin(x * f); r[half + 2 * i + 1] = (float)cos(x * f);
            }
        }
}

/* gpsa: the locality strength α of the positional maps and the gate λ at initialisation (why these values:
 * the gpsa section at the end of this file). */
#define GPSA_ALPHA 2.0f
#define GPSA_GATE0 3.0f

/* The parameters of block b (names "blocks.b.*"); offs = relative-bias offsets per head, or 0; gpsa: the
 * block's gate and positional vectors (ConViT's names), set by al__gpsa_post_init. */
static al_status block_init(al_model *m, int b, int offs, int gpsa)
{
    const al_model_config *cfg = &m->cfg;
    al_block_params *p = &m->blocks[b];
    if (al__block_params_add(&m->params, p, b, "attn.", cfg->dim, cfg->heads, cfg->hidden, offs, cfg->score) != AL_OK) return AL_ERR;
    if (!gpsa) return AL_OK;
    char nm[2][64];
    snprintf(nm[0], sizeof nm[0], "blocks.%d.attn.pos_proj.weight", b);
    snprintf(nm[1], sizeof nm[1], "blocks.%d.attn.gating_param", b);
    AL__ADD(m, p->gpsa_pos, nm[0], 2, AL__S2(cfg->heads, 3), ((al_init){AL_INIT_ZEROS, 0.f}));
    AL__ADD(m, p->gpsa_gate, nm[1], 1, AL__S1(cfg->heads), ((al_init){AL_INIT_CONST, GPSA_GATE0}));
    return AL_OK;
oom:
    return AL_ERR;
}

/* The token model over a gh × gw grid of pin-value tokens: embedding, positions, blocks (gpsa: gated
 * positional self-attention in each), head. */
static al_status tokens_init(al_model *m, int pin, int gh, int gw, int gpsa)
{
    const al_model_config *cfg = &m->cfg;
    const al_init zeros = {AL_INIT_ZEROS, 0}, ones = {AL_INIT_ONES, 0};
    int D = cfg->dim;
    m->grid_h = gh; m->grid_w = gw;
    int N = m->grid_h * m->grid_w;
    int offs = 0;
    if (cfg->pos == AL_POS_RELATIVE) {
        int wh = m->kind->windowed ? cfg->window : 2 * m->grid_h - 1;
        int ww = m->kind->windowed ? cfg->window : 2 * m->grid_w - 1;
        offs = wh * ww;
    }
    AL__ADD(m, m->embed_w, "embed.weight", 2, AL__S2(D, pin), al_init_kaiming(pin));
    AL__ADD(m, m->embed_b, "embed.bias", 1, AL__S1(D), al_init_kaiming(pin));
    if (cfg->pos == AL_POS_LEARNED) AL__ADD(m, m->pos, "pos", 2, AL__S2(N, D), ((al_init){AL_INIT_NORMAL, 0.02f}));
    for (int b = 0; b < cfg->depth; b++)
        if (block_init(m, b, offs, gpsa) != AL_OK) return AL_ERR;
    AL__ADD(m, m->ln_w, "ln.weight", 1, AL__S1(D), ones);
    AL__ADD(m, m->ln_b, "ln.bias", 1, AL__S1(D), zeros);
    AL__ADD(m, m->head_w, "head.weight", 2, AL__S2(cfg->classes, D), al_init_kaiming(D));
    AL__ADD(m, m->head_b, "head.bias", 1, AL__S1(cfg->classes), al_init_kaiming(D));
    if (cfg->pos == AL_POS_SINUSOIDAL) {
        m->sincos = malloc((size_t)N * D * sizeof(float));
        if (!m->sincos) goto oom;
        fill_sincos(m->sincos, m->grid_h, m->grid_w, D);
    }
    return AL_OK;
oom:
    return AL_ERR;
}

al_status al__transformer_init(al_model *m)
{
    const al_model_config *cfg = &m->cfg;
    return tokens_init(m, cfg->channels * cfg->patch * cfg->patch, cfg->height / cfg->patch, cfg->width / cfg->patch, 0);
}

static al_pattern model_pattern(const al_model *m)
{
    const al_model_config *cfg = &m->cfg;
    if (m->blocks[0].gpsa_gate) {   /* full attention; the grid is where gpsa's positional maps take their offsets */
        al_pattern p = al_pattern_full();
        p.grid_h = m->grid_h; p.grid_w = m->grid_w;
        return p;
    }
    if (m->kind->windowed) return al_pattern_window2d(m->grid_h, m->grid_w, cfg->window, cfg->window);
    if (cfg->pos == AL_POS_RELATIVE) /* full attention written as a window that covers the whole grid */
        return al_pattern_window2d(m->grid_h, m->grid_w, 2 * m->grid_h - 1, 2 * m->grid_w - 1);
    return al_pattern_full();
}

static al_tensor *block_forward(al_ctx *c, al_model *m, int bi, al_tensor *x /* (B,N,D) */)
{
    const al_model_config *cfg = &m->cfg;
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = model_pattern(m);
    d.score = cfg->score; d.norm = cfg->norm; d.slope = 0.2f;
    m->attn_weights[bi] = NULL;
    m->attn_pattern[bi] = d.pattern;
    d.weights = m->capture_attn ? &m->attn_weights[bi] : NULL;
    return al__block_forward(c, &m->blocks[bi], &d, cfg->heads, x);            /* (B,N,D) */
}

/* tokens (B, N, pin) → logits (B, classes) */
static al_tensor *tokens_forward(al_ctx *c, al_model *m, al_tensor *tok)
{
    const al_model_config *cfg = &m->cfg;
    al_tensor *h = al_linear(c, tok, m->embed_w, m->embed_b);  /* (B,N,D) */
    if (m->pos) h = al_add_bcast(c, h, m->pos);
    if (m->sincos && h) {
        al_tensor *pe = al_wrap(c, m->sincos, 2, (int[]){m->grid_h * m->grid_w, cfg->dim});
        h = al_add_bcast(c, h, pe);
    }
    for (int b = 0; b < cfg->depth; b++) h = block_forward(c, m, b, h);
    h = al_mean_tokens(c, al_layernorm(c, h, m->ln_w, m->ln_b, 1e-5f));   /* (B,D) */
    return al_linear(c, h, m->head_w, m->head_b);                         /* (B,classes) */
}

al_tensor *al__transformer_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    return tokens_forward(c, m, al_patchify(c, x, m->cfg.patch));       /* (B,N,C·p²) */
}

/* ---------------- hybrid: the cnn's first conv stage, then attention over its map ----------------
 * conv3x3(C→32)·ReLU·maxpool2 (the cnn's "c1", same init), then every position of the H/2 × W/2 map is a
 * token of 32 values: embedding, positions, depth blocks of full self-attention, LN, mean, head — the
 * usual way a vision transformer gets the CNN's small-data prior back (a convolutional stem). The token
 * grid is the image's at patch 2, so attention maps draw as sa's at --patch 2. */
al_status al__hybrid_check(const al_model_config *cfg, al_error *err)
{
    if (cfg->patch != 2) return al_seterr(err, "hybrid: the conv stage's pooling makes 2x2 tokens; --patch must be 2, got %d", cfg->patch);
    if (cfg->height < 2 || cfg->width < 2) return al_seterr(err, "hybrid: images must be at least 2x2");
    return attn_check(cfg, 0, err);
}

al_status al__hybrid_init(al_model *m)
{
    const al_model_config *cfg = &m->cfg;
    const int C = cfg->channels;
    AL__ADD(m, m->c1_w, "c1.weight", 4, AL__S4(32, C, 3, 3), al_init_kaiming(C * 9));
    AL__ADD(m, m->c1_b, "c1.bias", 1, AL__S1(32), al_init_kaiming(C * 9));
    return tokens_init(m, 32, cfg->height / 2, cfg->width / 2, 0);
oom:
    return AL_ERR;
}

al_tensor *al__hybrid_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    al_tensor *h = al_relu(c, al_conv2d_maxpool2(c, x, m->c1_w, m->c1_b, 1));                  /* (B,32,H/2,W/2) */
    return tokens_forward(c, m, al_patchify(c, h, 1));                                            /* (B,N,32) */
}

/* ---------------- gpsa: sa with gated positional self-attention in every block ----------------
 * d'Ascoli et al., "ConViT" (ICML 2021): each head mixes a content map softmax(QKᵀ/√d) and a positional map
 * softmax(v_h·r_ij) through its gate σ(λ_h) (al_gpsa). Head h = ky·k + kx of the k×k heads (k = √heads, 3 for
 * the default 9) starts at the offset Δ_h = (kx − (k−1)/2, ky − (k−1)/2) of the neighbourhood:
 * v_h = α·(2Δx, 2Δy, −1), so v_h·r_ij = α(|Δ|² − |δ − Δ|²) peaks at δ = Δ. α = 2 puts 0.999 of a
 * positional map within one token of Δ_h, 0.62 on Δ_h itself (queries two tokens or more from the border,
 * 14×14 grid); ConViT's α = 1 puts 0.96 there but only 0.32 on Δ_h: a blurred 3×3 convolution, and the gate
 * would have to start at σ(λ) ≥ 0.94 for the mixed map to keep 0.9 near Δ_h. With α = 2, λ = 3 (σ = 0.953;
 * ConViT's λ = 1 gives 0.73) makes the mixed map start local (≥ 0.95 near Δ_h whatever the content map
 * does), a soft convolution that training may open head by head. (On the 16×16 bar images of
 * tests/test_gpsa.c, α = 2, λ = 3 reached 0.90-0.93 test accuracy over three shuffles where α = 1, λ = 4
 * reached 0.82-0.89.) Every block is gpsa, not only the first ones as in
 * ConViT: there is no class token to bring in for the last blocks (the classifier averages the tokens), and
 * a gate that opens gives full self-attention anyway. sa's blocks otherwise: pre-LN, the MLP, the learned
 * absolute positions, one value projection for both maps (ConViT's identity initialisation of it is not
 * taken: V and the rest keep sa's initialisation, so that gpsa differs from sa by the maps alone). Defaults:
 * 9 heads of 7, dim 63: 78 899 parameters against sa's 80 586 on 28×28 images. */
void al__gpsa_defaults(al_model_config *cfg) { cfg->heads = 9; cfg->dim = 63; }

static int isqrt(int n) { int k = 0; while ((k + 1) * (k + 1) <= n) k++; return k; }

al_status al__gpsa_check(const al_model_config *cfg, al_error *err)
{
    const int k = isqrt(cfg->heads);
    if (cfg->heads < 1 || k * k != cfg->heads)
        return al_seterr(err, "%s: --heads must be a square (one head per offset of a k x k neighbourhood), got %d", cfg->name, cfg->heads);
    if (cfg->pos == AL_POS_RELATIVE) return al_seterr(err, "%s: its positional maps are the relative positions; --pos relative does not apply", cfg->name);
    if (cfg->score != AL_SCORE_DOT || cfg->norm != AL_NORM_SOFTMAX)
        return al_seterr(err, "%s: gated positional self-attention has a dot score and softmax maps (no --score additive, --norm relu)", cfg->name);
    return attn_check(cfg, 0, err);
}

al_status al__gpsa_init(al_model *m)
{
    const al_model_config *cfg = &m->cfg;
    return tokens_init(m, cfg->channels * cfg->patch * cfg->patch, cfg->height / cfg->patch, cfg->width / cfg->patch, 1);
}

/* v_h of every block: head h at its offset of the k×k neighbourhood, locality strength α. */
void al__gpsa_post_init(al_model *m)
{
    const int H = m->cfg.heads, k = isqrt(H);
    const float c = 0.5f * (float)(k - 1);
    for (int b = 0; b < m->cfg.depth; b++) {
        float *v = m->blocks[b].gpsa_pos->data;   /* (H,3) */
        for (int h = 0; h < H; h++) {
            const float dx = (float)(h % k) - c, dy = (float)(h / k) - c;
            v[3 * h] = GPSA_ALPHA * 2.0f * dx; v[3 * h + 1] = GPSA_ALPHA * 2.0f * dy; v[3 * h + 2] = -GPSA_ALPHA;
        }
    }
}
