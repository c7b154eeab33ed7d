/* attnlab/fbank.h — the speech front end of the lectures: log-mel filter banks and MFCCs of 16 kHz audio.
 *
 *   pre-emphasis y[t] = x[t] − 0.97 x[t−1] over the whole clip (y[0] = x[0]);
 *   frames of 400 samples (25 ms) every 160 (10 ms): T = 1 + (n − 400) / 160 frames (0 when n < 400);
 *   a Hamming window 0.54 − 0.46 cos(2π i / 399), zero-padded to 512 points;
 *   the power spectrum |X_k|², k = 0..256, by FFTW (single precision, one r2c plan made at init);
 *   80 triangular filters equally spaced on the HTK mel scale m(f) = 2595 log10(1 + f / 700) from 0 Hz
 *   to 8 kHz (triangles linear in mel, as HTK) → log(max(energy, 1e-10)): the 80-dim filter bank;
 *   MFCC: the orthonormal DCT-II of the 80 log energies, coefficients 0..12, then Δ and ΔΔ (HTK's
 *   regression over ±2 frames, edges repeated) → 39 dims per frame;
 *   optionally per-utterance mean and variance normalisation of each dimension.
 *
 *   al_fbank fb; al_error e = {{0}};
 *   if (al_fbank_init(&fb, NULL, &e)) ...                  // defaults above; plan made here, once
 *   int64_t T = al_fbank_frames(&fb.cfg, n);
 *   float *mfcc = malloc(T * AL_MFCC_DIM * sizeof *mfcc);
 *   al_fbank_mfcc(&fb, x, n, mfcc, &e);                    // thread-safe: one al_fbank for all threads
 *   al_fbank_free(&fb);
 *
 * FFTW's planner is not thread-safe: al_fbank_init and al_fbank_free take a lock of their own around
 * it, so they may run in any thread; the transforms themselves (fftwf_execute_dft_r2c on the caller's
 * buffers) are. Plans are made with FFTW_ESTIMATE, never measured, so results do not depend on timing:
 * the same input gives the same bits on every run.
 */
#ifndef ATTNLAB_FBANK_H
#define ATTNLAB_FBANK_H
#include <stdint.h>
#include "tensor.h"

#define AL_FBANK_MELS 80
#define AL_MFCC_CEPS 13
#define AL_MFCC_DIM (3 * AL_MFCC_CEPS)

typedef struct al_fbank_cfg {
    int rate;          /* 16000 */
    int win, hop;      /* 400, 160 samples */
    int nfft;          /* 512 (>= win) */
    int nmel;          /* 80 */
    int nceps;         /* 13 */
    float preemph;     /* 0.97 (0: none) */
    float fmin, fmax;  /* 0, rate / 2 */
} al_fbank_cfg;
al_fbank_cfg al_fbank_defaults(void);

typedef struct al_fbank {
    al_fbank_cfg cfg;
    void *plan;        /* the fftwf_plan (r2c, nfft points) */
    float *window;     /* (win) Hamming */
    int *lo, *hi;      /* (nmel) filter m covers FFT bins lo[m] .. hi[m]-1 */
    float *weight;     /* (nmel, nfft/2 + 1) triangle weights (zero outside lo..hi) */
    float *dct;        /* (nceps, nmel) orthonormal DCT-II */
} al_fbank;

/* cfg NULL: al_fbank_defaults(). Checks the configuration (win <= nfft, 0 <= fmin < fmax <= rate/2, ...). */
al_status al_fbank_init(al_fbank *fb, const al_fbank_cfg *cfg, al_error *err);
void      al_fbank_free(al_fbank *fb);
/* Frames of n samples: 1 + (n − win) / hop, 0 when n < win. */
int64_t   al_fbank_frames(const al_fbank_cfg *cfg, int64_t n);
/* The power spectrum of one windowed frame: power (nfft/2 + 1) = |FFT(frame zero-padded to nfft)|². */
void      al_fbank_power(const al_fbank *fb, const float *frame /* (win) */, float *power /* (nfft/2+1) */);
/* The same by a direct O(nfft · win) DFT in double precision, the reference the tests compare with. */
void      al_fbank_power_ref(const al_fbank_cfg *cfg, const float *frame /* (win) */, float *power /* (nfft/2+1) */);
/* Log-mel filter bank of x (n samples): out (T, nmel), T = al_fbank_frames. The values are finite
 * when every sample is finite and within +-1e15 (the float spectrum's range; the audio loader refuses
 * samples beyond AL_AUDIO_MAX_AMPLITUDE, far inside it). */
al_status al_fbank_logmel(const al_fbank *fb, const float *x /* (n) */, int64_t n, float *out /* (T, nmel) */, al_error *err);
/* MFCC + Δ + ΔΔ of x: out (T, 3 nceps). */
al_status al_fbank_mfcc(const al_fbank *fb, const float *x /* (n) */, int64_t n, float *out /* (T, 3 nceps) */, al_error *err);
/* HTK deltas of in (T, d) (row stride ld_in) into out (T, d) (row stride ld_out):
 * out_t = Σ_{k=1..K} k (in_{t+k} − in_{t−k}) / (2 Σ k²), rows beyond the edges repeat the edge row. */
void      al_feat_deltas(const float *in, int64_t T, int d, int ld_in, int K, float *out, int ld_out);
/* Per-utterance normalisation of x (T, d) in place: each dimension to mean 0 and (population) variance
 * 1 (a dimension of variance below 1e-10 is only centred). */
void      al_feat_cmvn(float *x /* (T, d) */, int64_t T, int d);
#endif
