/* optim.c — SGD (momentum, Nesterov), Adam (L2), AdamW (decoupled) over the flat parameter array,
 * global-norm gradient clipping and learning-rate schedules. The update rules follow
 * torch.optim.SGD / Adam / AdamW step for step (float32 state, bias correction as PyTorch). */
#include "attnlab/optim.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

al_status al_optim_init(al_optim *o, al_optim_kind kind, int64_t n, float lr, al_error *err)
{
    memset(o, 0, sizeof *o);
    if (kind != AL_SGD && kind != AL_ADAM && kind != AL_ADAMW)
        return al_seterr(err, "optimiser: unknown kind %d", (int)kind);
    if (n < 0) return al_seterr(err, "optimiser: negative parameter count %lld", (long long)n);
    if (!(lr >= 0.f)) return al_seterr(err, "optimiser: learning rate must be >= 0, got %g", (double)lr);
    o->kind = kind; o->n = n; o->lr = lr;
    o->momentum = 0.f; o->beta1 = 0.9f; o->beta2 = 0.999f; o->eps = 1e-8f;
    o->weight_decay = kind == AL_ADAMW ? 0.01f : 0.f;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    o->m = calloc(1, bytes);                       /* SGD: momentum buffer; Adam: first moment */
    if (kind != AL_SGD) o->v = calloc(1, bytes);   /* second moment */
    if (!o->m || (kind != AL_SGD && !o->v)) {
        al_optim_free(o);
        return al_seterr(err, "optimiser: out of memory for %lld parameters", (long long)n);
    }
    return AL_OK;
}

void al_optim_free(al_optim *o)
{
    free(o->m); free(o->v);
    o->m = o->v = NULL;
}

/* Is x NaN or infinite (exponent all ones)? Bit arithmetic, so the update loops stay vectorised. */
static inline unsigned nonfinite_bit(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x7f800000u) == 0x7f800000u;
}

/* One tensor's slice [off, off + len) of the flat arrays; wd is 0 when the tensor is not decayed.
 * Returns 1 if an updated weight is not finite. */
static unsigned sgd_slice(al_optim *o, float *w /* (len) */, const float *g /* (len) */, float *buf /* (len) */,
                      int64_t len, float wd)
{
    const float lr = o->lr, mu = o->momentum;
    const int first = o->step == 1, nest = o->nesterov;
    unsigned bad = 0;
    for (int64_t i = 0; i < len; i++) {
        float d = g[i];
        if (wd != 0.f) d += wd * w[i];
        if (mu != 0.f) {
            float b = first ? d : mu * buf[i] + d;   /* torch: buf = g at the first step */
            buf[i] = b;
            d = nest ? d + mu * b : b;
        }
        w[i] -= lr * d;
        bad |= nonfinite_bit(w[i]);
    }
    return bad;
}

static unsigned adam_slice(al_optim *o, float *w /* (len) */, const float *g /* (len) */, float *m /* (len) */,
                       float *v /* (len) */, int64_t len, float wd, int decoupled)
{
    const float lr = o->lr, b1 = o->beta1, b2 = o->beta2, eps = o->eps;
    const double t = (double)o->step;
    const float bc1 = (float)(1.0 - pow((double)b1, t));
    const float bc2_sqrt = (float)sqrt(1.0 - pow((double)b2, t));
    const float step_size = lr / bc1;
    const float shrink = 1.f - lr * wd;
    unsigned bad = 0;
    for (int64_t i = 0; i < len; i++) {
        float d = g[i];
        if (wd != 0.f) {
            if (decoupled) w[i] *= shrink;        /* AdamW: w -= lr·wd·w, before the Adam step */
            else d += wd * w[i];                  /* Adam: L2 term in the gradient */
        }
        m[i] = b1 * m[i] + (1.f - b1) * d;
        v[i] = b2 * v[i] + (1.f - b2) * d * d;
        float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        w[i] -= step_size * (m[i] / denom);
        bad |= nonfinite_bit(w[i]);
    }
    return bad;
}

/* One parallel region over the whole flat array: thread t updates elements [lo, hi) (whole 16-float
 * groups), tensor slice by tensor slice. Every element's update is independent, so the split changes
 * nothing but speed. */
void al_optim_step(al_optim *o, al_params *p)
{
    if (!p->data || !p->grad || !o->m) return;
    o->step++;
    int64_t n = 0;                                 /* the tensors the optimiser was sized for */
    int nt = 0;
    while (nt < p->n && n + p->t[nt]->numel <= o->n) n += p->t[nt++]->numel;
    unsigned bad = 0;
    AL_OMP("omp parallel reduction(|:bad) if (n > 65536)")
    {
        const int t = al__thread_id(), T = al__num_threads();
        const int64_t lo = n / 16 * t / T * 16, hi = t == T - 1 ? n : n / 16 * (t + 1) / T * 16;
        int64_t off = 0;
        for (int ti = 0; ti < nt && off < hi; ti++) {
            const int64_t len = p->t[ti]->numel, a = off > lo ? off : lo, e = off + len < hi ? off + len : hi;
            if (a < e) {
                float wd = p->decay && p->decay[ti] ? o->weight_decay : 0.f;
                float *w = p->data + a, *g = p->grad + a;
                if (o->kind == AL_SGD) bad |= sgd_slice(o, w, g, o->m + a, e - a, wd);
                else bad |= adam_slice(o, w, g, o->m + a, o->v + a, e - a, wd, o->kind == AL_ADAMW);
            }
            off += len;
        }
    }
    o->nonfinite = bad != 0;
}

float al_clip_grad_norm(al_params *p, float max_norm)
{
    if (!p->grad || p->total <= 0) return 0.f;
    /* fixed chunks summed in order: the same norm for any thread count */
    enum { CHUNK = 1 << 14 };
    int64_t nch = (p->total + CHUNK - 1) / CHUNK;
    double total = 0;
    double stackpart[64], *part = nch <= 64 ? stackpart : malloc((size_t)nch * sizeof(double));
    if (part) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (nch > 8)
#endif
        for (int64_t c = 0; c < nch; c++) {
            int64_t e = (c + 1) * CHUNK < p->total ? (c + 1) * CHUNK : p->total;
            double s = 0;
            for (int64_t i = c * CHUNK; i < e; i++) s += (double)p->grad[i] * p->grad[i];
            part[c] = s;
        }
        for (int64_t c = 0; c < nch; c++) total += part[c];
        if (part != stackpart) free(part);
    } else {
        for (int64_t i = 0; i < p->total; i++) total += (double)p->grad[i] * p->grad[i];
    }
    float norm = (float)sqrt(total);
    if (max_norm > 0.f) {
        double coef = (double)max_norm / ((double)norm + 1e-6);   /* as torch.nn.utils.clip_grad_norm_ */
        if (coef < 1.0) {
            float cf = (float)coef;
            for (int64_t i = 0; i < p->total; i++) p->grad[i] *= cf;
        }
    }
    return norm;
}

float al_lr_at(const al_lr_schedule *s, int64_t step)
{
    if (step < 0) step = 0;
    if (s->warmup_steps > 0 && step < s->warmup_steps)      /* linear from 0: base · step / warmup */
        return (float)((double)s->base_lr * (double)step / (double)s->warmup_steps);
    int64_t t = step - (s->warmup_steps > 0 ? s->warmup_steps : 0);   /* steps after the warm-up */
    switch (s->kind) {
    case AL_LR_STEP:
        if (s->step_size <= 0) return s->base_lr;
        return (float)((double)s->base_lr * pow((double)s->gamma, (double)(t / s->step_size)));
    case AL_LR_COSINE: {
        int64_t span = s->total_steps - (s->warmup_steps > 0 ? s->warmup_steps : 0);
        double prog = span > 0 ? (double)t / (double)span : 1.0;
        if (prog > 1.0) prog = 1.0;
        return (float)(s->min_lr + ((double)s->base_lr - s->min_lr) * 0.5 * (1.0 + cos(3.14159265358979323846 * prog)));
    }
    case AL_LR_CONSTANT:
    default:
        return s->base_lr;
    }
}
