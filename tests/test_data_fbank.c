/* test_data_fbank.c — the speech front end against hand-computed values: FFTW's power spectrum vs a
 * direct DFT, frame counts, the filter bank's shape, which mel filter a pure tone lights up, the DCT,
 * deltas of a linear ramp, per-utterance normalisation, determinism and threads. */
#include "testutil.h"
#include "attnlab/fbank.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float *tone(int64_t n, double hz, double amp)
{
    float *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    for (int64_t t = 0; t < n; t++) x[t] = (float)(amp * sin(2 * M_PI * hz * t / 16000.0));
    return x;
}

static void test_power_vs_direct_dft(void **st)
{
    (void)st;
    al_fbank fb; al_error e = {{0}};
    if (al_fbank_init(&fb, NULL, &e)) fail_msg("%s", e.msg);
    float *frame = tu_alloc_rand(400, 3, -1, 1);
    float p[257], r[257];
    al_fbank_power(&fb, frame, p);
    al_fbank_power_ref(&fb.cfg, frame, r);
    double err = tu_max_rel_err(p, r, 257);
    if (!(err < 1e-5)) fail_msg("FFTW vs direct DFT: relative error %.3g", err);
    /* Parseval for the zero-padded frame: Σ_k |X_k|² over the full circle = 512 Σ x² */
    double ex = 0, ep = p[0] + p[256];
    for (int i = 0; i < 400; i++) ex += (double)frame[i] * frame[i];
    for (int k = 1; k < 256; k++) ep += 2.0 * p[k];
    assert_true(fabs(ep - 512 * ex) < 1e-4 * 512 * ex);
    free(frame);
    al_fbank_free(&fb);
}

static void test_frame_counts(void **st)
{
    (void)st;
    al_fbank_cfg c = al_fbank_defaults();
    assert_int_equal(c.win, 400); assert_int_equal(c.hop, 160); assert_int_equal(c.nfft, 512); assert_int_equal(c.nmel, 80);
    /* 1 + (n − 400) / 160 */
    assert_int_equal(al_fbank_frames(&c, 0), 0);
    assert_int_equal(al_fbank_frames(&c, 399), 0);
    assert_int_equal(al_fbank_frames(&c, 400), 1);
    assert_int_equal(al_fbank_frames(&c, 559), 1);
    assert_int_equal(al_fbank_frames(&c, 560), 2);
    assert_int_equal(al_fbank_frames(&c, 16000), 98);     /* 1 s: 1 + 15600 / 160 = 98.5 → 98 */
    assert_int_equal(al_fbank_frames(&c, 256000), 1598);  /* 16 s */
}

static void test_filters_by_hand(void **st)
{
    (void)st;
    al_fbank fb; al_error e = {{0}};
    if (al_fbank_init(&fb, NULL, &e)) fail_msg("%s", e.msg);
    /* mel(8000) = 2595 log10(1 + 8000/700) = 2840.02; 81 steps of 35.062 mel; filter m peaks at
     * (m + 1) · 35.062 mel. Filter 40: 1437.54 mel = 700 (10^(1437.54/2595) − 1) = 1806.5 Hz, between
     * bins 57 (1781.25 Hz) and 58 (1812.5 Hz). */
    assert_true(fb.lo[40] <= 57 && fb.hi[40] > 58);
    int64_t nb = 257;
    for (int m = 0; m < 80; m++) {
        assert_true(fb.hi[m] > fb.lo[m]);   /* every filter catches at least one bin at 512 points */
        for (int k = 0; k < nb; k++) assert_true(fb.weight[m * nb + k] >= 0 && fb.weight[m * nb + k] <= 1);
    }
    /* bin 58 (1812.5 Hz = 1440.25 mel) is 0.0771 of a step past filter 40's peak: weight 1 − 0.0771 */
    assert_true(fabs(fb.weight[40 * nb + 58] - 0.9229) < 1e-3);
    /* the DCT is orthonormal: row 0 is 1/sqrt(80), rows are orthogonal */
    assert_true(fabs(fb.dct[0] - 1 / sqrt(80.0)) < 1e-7);
    for (int i = 0; i < 13; i++)
        for (int j = 0; j < 13; j++) {
            double s = 0;
            for (int k = 0; k < 80; k++) s += (double)fb.dct[i * 80 + k] * fb.dct[j * 80 + k];
            assert_true(fabs(s - (i == j)) < 1e-5);
        }
    al_fbank_free(&fb);
}

static void test_tone_peak_bin(void **st)
{
    (void)st;
    al_fbank fb; al_error e = {{0}};
    if (al_fbank_init(&fb, NULL, &e)) fail_msg("%s", e.msg);
    /* tones on FFT bins near three filter peaks (computed as above): 1812.5 Hz (bin 58, 1440.25 mel,
     * filter 40 at 1437.5); 5687.5 Hz (bin 182, 2490.8 mel, filter 70 at 2489.4); 281.25 Hz (bin 9,
     * 380.3 mel, filter 10 at 385.7) */
    const double hz[3] = {1812.5, 5687.5, 281.25};
    const int want[3] = {40, 70, 10};
    for (int c = 0; c < 3; c++) {
        float *x = tone(16000, hz[c], 0.5);
        float *mel = malloc(98 * 80 * sizeof *mel);
        if (al_fbank_logmel(&fb, x, 16000, mel, &e)) fail_msg("%s", e.msg);
        for (int t = 0; t < 98; t++) {
            int best = 0;
            for (int m = 1; m < 80; m++) if (mel[t * 80 + m] > mel[t * 80 + best]) best = m;
            if (best != want[c]) fail_msg("%.2f Hz, frame %d: filter %d peaks, want %d", hz[c], t, best, want[c]);
        }
        free(x); free(mel);
    }
    /* silence: every log energy is the floor, log(1e-10) */
    float z[800] = {0}, mel[3 * 80];
    if (al_fbank_logmel(&fb, z, 800, mel, &e)) fail_msg("%s", e.msg);
    for (int i = 0; i < 3 * 80; i++) assert_true(fabsf(mel[i] - logf(1e-10f)) < 1e-4f);
    al_fbank_free(&fb);
}

static void test_deltas_on_a_ramp(void **st)
{
    (void)st;
    /* in_t = 3t + 1 (two columns: 3t + 1 and −t): Δ = Σ k (in_{t+k} − in_{t−k}) / (2 Σ k²) = slope
     * inside; edges repeat the edge row: at t = 0, Σ k · (k · 3) / 10 = 15/10 = 1.5; at t = 1,
     * (1·(2·3) + 2·(3·3)) / 10 = 24/10 = 2.4 */
    enum { T = 10 };
    float in[T * 2], d[T * 2], dd[T * 2];
    for (int t = 0; t < T; t++) { in[2 * t] = 3.0f * t + 1; in[2 * t + 1] = -(float)t; }
    al_feat_deltas(in, T, 2, 2, 2, d, 2);
    for (int t = 2; t < T - 2; t++) { assert_true(fabsf(d[2 * t] - 3) < 1e-6f); assert_true(fabsf(d[2 * t + 1] + 1) < 1e-6f); }
    assert_true(fabsf(d[0] - 1.5f) < 1e-6f); assert_true(fabsf(d[2] - 2.4f) < 1e-6f);
    assert_true(fabsf(d[2 * (T - 1)] - 1.5f) < 1e-6f);
    al_feat_deltas(d, T, 2, 2, 2, dd, 2);
    for (int t = 4; t < T - 4; t++) assert_true(fabsf(dd[2 * t]) < 1e-6f);   /* ΔΔ of a ramp: 0 inside */
}

static void test_mfcc_layout_cmvn_determinism(void **st)
{
    (void)st;
    al_fbank fb; al_error e = {{0}};
    if (al_fbank_init(&fb, NULL, &e)) fail_msg("%s", e.msg);
    float *x = tu_alloc_rand(8000, 5, -0.3f, 0.3f);
    int64_t T = al_fbank_frames(&fb.cfg, 8000);
    float *m1 = malloc((size_t)T * 39 * sizeof *m1), *m2 = malloc((size_t)T * 39 * sizeof *m2), *mel = malloc((size_t)T * 80 * sizeof *mel);
    if (al_fbank_mfcc(&fb, x, 8000, m1, &e) || al_fbank_logmel(&fb, x, 8000, mel, &e)) fail_msg("%s", e.msg);
    /* c0..c12 are the DCT of the log filter bank; 13..25 their deltas; 26..38 the deltas of those */
    for (int64_t t = 0; t < T; t++)
        for (int i = 0; i < 13; i++) {
            double s = 0;
            for (int j = 0; j < 80; j++) s += sqrt((i ? 2.0 : 1.0) / 80) * cos(M_PI * i * (j + 0.5) / 80) * mel[t * 80 + j];
            assert_true(fabs(m1[t * 39 + i] - s) < 1e-3 * (1 + fabs(s)));
        }
    float *d = malloc((size_t)T * 13 * sizeof *d);
    al_feat_deltas(m1, T, 13, 39, 2, d, 13);   /* Δ of the cepstra, on its own */
    for (int64_t t = 0; t < T; t++) for (int i = 0; i < 13; i++) assert_true(m1[t * 39 + 13 + i] == d[t * 13 + i]);
    free(d);
    /* two threads, one al_fbank: the same bits */
    float *mt[2] = {m2, NULL};
    mt[1] = malloc((size_t)T * 39 * sizeof *mt[1]);
#pragma omp parallel for num_threads(2)
    for (int k = 0; k < 2; k++) { al_error e2 = {{0}}; al_fbank_mfcc(&fb, x, 8000, mt[k], &e2); }
    assert_memory_equal(m1, mt[0], (size_t)T * 39 * sizeof *m1);
    assert_memory_equal(m1, mt[1], (size_t)T * 39 * sizeof *m1);
    al_feat_cmvn(m1, T, 39);
    for (int j = 0; j < 39; j++) {
        double s = 0, ss = 0;
        for (int64_t t = 0; t < T; t++) { s += m1[t * 39 + j]; ss += (double)m1[t * 39 + j] * m1[t * 39 + j]; }
        assert_true(fabs(s / T) < 1e-4); assert_true(fabs(ss / T - 1) < 1e-3);
    }
    /* a bad configuration is refused */
    al_fbank_cfg c = al_fbank_defaults();
    c.win = 600; al_fbank bad; e.msg[0] = 0;
    assert_int_equal(al_fbank_init(&bad, &c, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "window 600"));
    free(x); free(m1); free(m2); free(mt[1]); free(mel);
    al_fbank_free(&fb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_power_vs_direct_dft),
        cmocka_unit_test(test_frame_counts),
        cmocka_unit_test(test_filters_by_hand),
        cmocka_unit_test(test_tone_peak_bin),
        cmocka_unit_test(test_deltas_on_a_ramp),
        cmocka_unit_test(test_mfcc_layout_cmvn_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
