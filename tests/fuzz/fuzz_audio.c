/* fuzz_audio.c — one audio file through the audio-folder loader's path (libsndfile's header, the
 * channel / rate / length / plausibility checks, the truncated-data check, the budget, decode, mono
 * mix, libsamplerate, pad or cut) and through al_audio_file_load, then the front end (log-mel and MFCC)
 * on what loaded. Input: [flags] FILE; the file is written as DIR/a/s1_x.wav, DIR/a/s2_y.wav and
 * DIR/b/s3_x.wav; flags pick max_seconds (0, 0.05, 0.5, 2) and the test fraction. */
#include "fuzz_common.h"
#include "attnlab/audio.h"
#include "attnlab/fbank.h"
#include <math.h>
#include <sys/stat.h>

static void quiet(void *ud, const char *msg) { (void)ud; (void)msg; }

/* Features of clip x (n samples): every value finite, unless the clip is too long to be worth it. */
static void features(const al_fbank *fb, const float *x, int64_t n)
{
    if (n > 4 * AL_AUDIO_RATE) return;
    int64_t T = al_fbank_frames(&fb->cfg, n);
    float *m = malloc((size_t)(T ? T : 1) * AL_MFCC_DIM * sizeof *m);
    if (!m) abort();
    al_error e = {{0}};
    if (al_fbank_mfcc(fb, x, n, m, &e)) abort();
    for (int64_t i = 0; i < T * AL_MFCC_DIM; i++) if (!isfinite(m[i])) abort();
    free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    if (n < 1) return 0;
    static int made;
    static al_fbank fb;
    if (!made) {
        mkdir(fz_path("snd"), 0755); mkdir(fz_path("snd/a"), 0755); mkdir(fz_path("snd/b"), 0755);
        al_error e = {{0}};
        if (al_fbank_init(&fb, NULL, &e)) abort();
        made = 1;
    }
    fz_write(fz_path("snd/a/s1_x.wav"), d + 1, n - 1, 0);
    fz_write(fz_path("snd/a/s2_y.wav"), d + 1, n - 1, 0);
    fz_write(fz_path("snd/b/s3_x.wav"), d + 1, n - 1, 0);
    static const double secs[4] = {0, 0.05, 0.5, 2};
    al_audio_opts o = {0};
    o.max_seconds = secs[d[0] & 3];
    o.test_frac = (d[0] & 4) ? 0.5 : 0.2;
    o.split_seed = d[0] >> 3;
    o.warn = quiet;
    al_audio_split s; al_error e = {{0}};
    if (al_audio_folder_load(fz_path("snd"), &o, &s, &e) == AL_OK) {
        if (s.train.n < 1 || s.train.classes != 2) abort();
        for (int i = 0; i < s.train.n; i++) {
            if (s.train.nreal[i] > al_audio_len(&s.train, i)) abort();
            features(&fb, al_audio_clip(&s.train, i), al_audio_len(&s.train, i));
        }
        al_audio_split_free(&s);
    } else if (!e.msg[0]) abort();
    float *x; int64_t len, nreal; al_error e2 = {{0}};
    if (al_audio_file_load(fz_path("snd/a/s1_x.wav"), o.max_seconds, &x, &len, &nreal, &e2) == AL_OK) {
        if (nreal > len || len < 1) abort();
        free(x);
    } else if (!e2.msg[0]) abort();
    return 0;
}
