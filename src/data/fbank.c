/* fbank.c — the speech front end: pre-emphasis, 25 ms Hamming frames every 10 ms, 512-point power
 * spectra by FFTW, 80 HTK mel filters, log; MFCC (DCT-II, 13 coefficients) with Δ and ΔΔ; per-utterance
 * normalisation. al_fbank_power_ref is the direct DFT the FFT is tested against. See fbank.h. */
#include "attnlab/fbank.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <fftw3.h>

/* FFTW's planner (and plan destruction) is not thread-safe; execution is. */
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

al_fbank_cfg al_fbank_defaults(void)
{
    al_fbank_cfg c = {16000, 400, 160, 512, AL_FBANK_MELS, AL_MFCC_CEPS, 0.97f, 0.0f, 8000.0f};
    return c;
}

static double hz_to_mel(double f) { return 2595.0 * log10(1.0 + f / 700.0); }

void al_fbank_free(al_fbank *fb)
{
    if (!fb) return;
    if (fb->plan) {
        pthread_mutex_lock(&plan_lock);
        fftwf_destroy_plan((fftwf_plan)fb->plan);
        pthread_mutex_unlock(&plan_lock);
    }
    free(fb->window); free(fb->lo); free(fb->hi); free(fb->weight); free(fb->dct);
    memset(fb, 0, sizeof *fb);
}

static al_status check_cfg(const al_fbank_cfg *c, al_error *err)
{
    if (c->rate < 1000 || c->rate > 768000) return al_seterr(err, "front end: sample rate %d Hz is out of range", c->rate);
    if (c->win < 2 || c->hop < 1 || c->nfft < c->win || c->nfft > (1 << 16))
        return al_seterr(err, "front end: window %d, hop %d, FFT size %d (need 2 <= window <= FFT size <= 65536, hop >= 1)",
                         c->win, c->hop, c->nfft);
    if (c->nmel < 1 || c->nmel > c->nfft / 2 || c->nceps < 1 || c->nceps > c->nmel)
        return al_seterr(err, "front end: %d mel filters, %d cepstra (need 1 <= cepstra <= filters <= FFT size / 2)", c->nmel, c->nceps);
    if (!(c->fmin >= 0) || !(c->fmax > c->fmin) || c->fmax > c->rate / 2.0f)
        return al_seterr(err, "front end: filter range %g..%g Hz (need 0 <= low < high <= rate / 2)", c->fmin, c->fmax);
    if (!(c->preemph >= 0) || c->preemph >= 1) return al_seterr(err, "front end: pre-emphasis %g is not in [0, 1)", c->preemph);
    return AL_OK;
}

/* The triangular HTK mel filters: centres equally spaced in mel between fmin and fmax, each rising
 * linearly in mel from its left neighbour's centre and falling to its right neighbour's. */
static void mel_filters(al_fbank *fb)
{
    const al_fbank_cfg *c = &fb->cfg;
    const int nb = c->nfft / 2 + 1;
    const double lo = hz_to_mel(c->fmin), hi = hz_to_mel(c->fmax), step = (hi - lo) / (c->nmel + 1);
    for (int m = 0; m < c->nmel; m++) {
        const double left = lo + m * step, centre = left + step, right = centre + step;
        fb->lo[m] = nb; fb->hi[m] = 0;
        for (int k = 0; k < nb; k++) {
            const double mk = hz_to_mel((double)k * c->rate / c->nfft);
            double w = 0;
            if (mk > left && mk <= centre) w = (mk - left) / step;
            else if (mk > centre && mk < right) w = (right - mk) / step;
            fb->weight[(size_t)m * nb + k] = (float)w;
            if (w > 0) { if (k < fb->lo[m]) fb->lo[m] = k; fb->hi[m] = k + 1; }
        }
        if (fb->hi[m] == 0) fb->lo[m] = 0;   /* an empty filter (a range narrower than one bin): energy 0 */
    }
}

al_status al_fbank_init(al_fbank *fb, const al_fbank_cfg *cfg, al_error *err)
{
    memset(fb, 0, sizeof *fb);
    fb->cfg = cfg ? *cfg : al_fbank_defaults();
    const al_fbank_cfg *c = &fb->cfg;
    if (check_cfg(c, err)) return AL_ERR;
    const int nb = c->nfft / 2 + 1;
    fb->window = malloc((size_t)c->win * sizeof *fb->window);
    fb->lo = malloc((size_t)c->nmel * sizeof *fb->lo); fb->hi = malloc((size_t)c->nmel * sizeof *fb->hi);
    fb->weight = malloc((size_t)c->nmel * nb * sizeof *fb->weight);
    fb->dct = malloc((size_t)c->nceps * c->nmel * sizeof *fb->dct);
    float *in = fftwf_malloc((size_t)c->nfft * sizeof *in);
    fftwf_complex *out = fftwf_malloc((size_t)nb * sizeof *out);
    if (!fb->window || !fb->lo || !fb->hi || !fb->weight || !fb->dct || !in || !out) {
        fftwf_free(in); fftwf_free(out); al_fbank_free(fb);
        return al_seterr(err, "front end: out of memory");
    }
    for (int i = 0; i < c->win; i++) fb->window[i] = (float)(0.54 - 0.46 * cos(2.0 * M_PI * i / (c->win - 1)));
    mel_filters(fb);
    for (int i = 0; i < c->nceps; i++)
        for (int j = 0; j < c->nmel; j++)
            fb->dct[(size_t)i * c->nmel + j] = (float)(sqrt((i ? 2.0 : 1.0) / c->nmel) * cos(M_PI * i * (j + 0.5) / c->nmel));
    /* FFTW_ESTIMATE: the plan is chosen without timing anything, so it (and every result) is the same on
     * every run; buffers from fftwf_malloc have the alignment the per-call buffers will have. */
    pthread_mutex_lock(&plan_lock);
    fb->plan = fftwf_plan_dft_r2c_1d(c->nfft, in, out, FFTW_ESTIMATE);
    pthread_mutex_unlock(&plan_lock);
    fftwf_free(in); fftwf_free(out);
    if (!fb->plan) { al_fbank_free(fb); return al_seterr(err, "front end: FFTW could not plan a %d-point transform", c->nfft); }
    return AL_OK;
}

int64_t al_fbank_frames(const al_fbank_cfg *cfg, int64_t n)
{
    return n < cfg->win ? 0 : 1 + (n - cfg->win) / cfg->hop;
}

/* power (nb) from FFTW's output. */
static void power_of(const fftwf_complex *X, int nb, float *power)
{
    for (int k = 0; k < nb; k++) power[k] = X[k][0] * X[k][0] + X[k][1] * X[k][1];
}

void al_fbank_power(const al_fbank *fb, const float *frame, float *power)
{
    const al_fbank_cfg *c = &fb->cfg;
    const int nb = c->nfft / 2 + 1;
    float *in = fftwf_malloc((size_t)c->nfft * sizeof *in);
    fftwf_complex *X = fftwf_malloc((size_t)nb * sizeof *X);
    if (!in || !X) { memset(power, 0, (size_t)nb * sizeof *power); fftwf_free(in); fftwf_free(X); return; }
    memcpy(in, frame, (size_t)c->win * sizeof *in);
    memset(in + c->win, 0, (size_t)(c->nfft - c->win) * sizeof *in);
    fftwf_execute_dft_r2c((fftwf_plan)fb->plan, in, X);
    power_of(X, nb, power);
    fftwf_free(in); fftwf_free(X);
}

void al_fbank_power_ref(const al_fbank_cfg *c, const float *frame, float *power)
{
    for (int k = 0; k <= c->nfft / 2; k++) {
        double re = 0, im = 0;
        for (int i = 0; i < c->win; i++) {
            const double a = -2.0 * M_PI * (double)((int64_t)k * i % c->nfft) / c->nfft;
            re += frame[i] * cos(a); im += frame[i] * sin(a);
        }
        power[k] = (float)(re * re + im * im);
    }
}

al_status al_fbank_logmel(const al_fbank *fb, const float *x, int64_t n, float *out, al_error *err)
{
    const al_fbank_cfg *c = &fb->cfg;
    const int nb = c->nfft / 2 + 1;
    const int64_t T = al_fbank_frames(c, n);
    float *in = fftwf_malloc((size_t)c->nfft * sizeof *in);
    fftwf_complex *X = fftwf_malloc((size_t)nb * sizeof *X);
    float *power = malloc((size_t)nb * sizeof *power);
    if (!in || !X || !power) { fftwf_free(in); fftwf_free(X); free(power); return al_seterr(err, "front end: out of memory"); }
    memset(in + c->win, 0, (size_t)(c->nfft - c->win) * sizeof *in);
    for (int64_t t = 0; t < T; t++) {
        const int64_t t0 = t * c->hop;
        for (int i = 0; i < c->win; i++) {   /* pre-emphasis of the whole clip, seen through this frame */
            const int64_t s = t0 + i;
            const float y = x[s] - (s > 0 ? c->preemph * x[s - 1] : 0.0f);
            in[i] = y * fb->window[i];
        }
        fftwf_execute_dft_r2c((fftwf_plan)fb->plan, in, X);
        power_of(X, nb, power);
        float *o = out + t * c->nmel;
        for (int m = 0; m < c->nmel; m++) {
            const float *w = fb->weight + (size_t)m * nb;
            double e = 0;
            for (int k = fb->lo[m]; k < fb->hi[m]; k++) e += (double)w[k] * power[k];
            o[m] = (float)log(e > 1e-10 ? e : 1e-10);
        }
    }
    fftwf_free(in); fftwf_free(X); free(power);
    return AL_OK;
}

void al_feat_deltas(const float *in, int64_t T, int d, int ld_in, int K, float *out, int ld_out)
{
    double den = 0;
    for (int k = 1; k <= K; k++) den += 2.0 * k * k;
    for (int64_t t = 0; t < T; t++)
        for (int j = 0; j < d; j++) {
            double s = 0;
            for (int k = 1; k <= K; k++) {
                const int64_t a = t + k < T ? t + k : T - 1, b = t - k >= 0 ? t - k : 0;
                s += k * ((double)in[a * ld_in + j] - in[b * ld_in + j]);
            }
            out[t * ld_out + j] = (float)(s / den);
        }
}

al_status al_fbank_mfcc(const al_fbank *fb, const float *x, int64_t n, float *out, al_error *err)
{
    const al_fbank_cfg *c = &fb->cfg;
    const int64_t T = al_fbank_frames(c, n);
    const int D = 3 * c->nceps;
    float *mel = malloc((size_t)(T ? T : 1) * c->nmel * sizeof *mel);
    if (!mel) return al_seterr(err, "front end: out of memory for %lld frames", (long long)T);
    if (al_fbank_logmel(fb, x, n, mel, err)) { free(mel); return AL_ERR; }
    for (int64_t t = 0; t < T; t++)
        for (int i = 0; i < c->nceps; i++) {
            const float *row = fb->dct + (size_t)i * c->nmel, *m = mel + t * c->nmel;
            double s = 0;
            for (int j = 0; j < c->nmel; j++) s += (double)row[j] * m[j];
            out[t * D + i] = (float)s;
        }
    free(mel);
    al_feat_deltas(out, T, c->nceps, D, 2, out + c->nceps, D);
    al_feat_deltas(out + c->nceps, T, c->nceps, D, 2, out + 2 * c->nceps, D);
    return AL_OK;
}

void al_feat_cmvn(float *x, int64_t T, int d)
{
    if (T < 1) return;
    for (int j = 0; j < d; j++) {
        double s = 0, ss = 0;
        for (int64_t t = 0; t < T; t++) s += x[t * d + j];
        const double mean = s / T;
        for (int64_t t = 0; t < T; t++) { const double v = x[t * d + j] - mean; ss += v * v; }
        const double var = ss / T, inv = var > 1e-10 ? 1.0 / sqrt(var) : 1.0;
        for (int64_t t = 0; t < T; t++) x[t * d + j] = (float)((x[t * d + j] - mean) * inv);
    }
}
