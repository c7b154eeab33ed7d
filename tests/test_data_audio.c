/* test_data_audio.c — audio folders: formats (WAV 16-bit and float, FLAC, OGG), mono mix, resampling
 * to 16 kHz (a tone keeps its frequency), pad/cut, the speaker rule and speaker-disjoint splits,
 * train/ + test/, determinism, hostile files skipped with a warning naming them, folder errors. */
#include "testutil.h"
#include "attnlab/audio.h"
#include "attnlab/fbank.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sndfile.h>

static int setup(void **st) { (void)st; return tu_tmpdir_make("audio"); }
static int teardown(void **st) { (void)st; return tu_tmpdir_remove(); }

/* A tone of `hz` (amplitude 0.5, channel c phase-shifted by c) written with libsndfile. */
static void write_tone(const char *path, int format, int rate, int channels, int64_t frames, double hz)
{
    SF_INFO info = {0};
    info.samplerate = rate; info.channels = channels; info.format = format;
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) fail_msg("%s: %s", path, sf_strerror(NULL));
    float *b = malloc((size_t)(frames * channels) * sizeof *b);
    assert_non_null(b);
    for (int64_t t = 0; t < frames; t++)
        for (int c = 0; c < channels; c++) b[t * channels + c] = (float)(0.5 * sin(2 * M_PI * hz * t / rate + c));
    assert_int_equal(sf_writef_float(sf, b, frames), frames);
    sf_close(sf);
    free(b);
}
static void le32(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24); }
static void le16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
/* A PCM-16 WAV written byte by byte: its header says channels, rate and a data chunk of `claimed`
 * bytes; `held` bytes of data follow. */
static void write_raw_wav(const char *path, int channels, uint32_t rate, uint32_t claimed, uint32_t held)
{
    unsigned char *b = calloc(44 + (size_t)held, 1);
    assert_non_null(b);
    memcpy(b, "RIFF", 4); le32(b + 4, 36 + claimed); memcpy(b + 8, "WAVEfmt ", 8); le32(b + 16, 16);
    le16(b + 20, 1); le16(b + 22, (unsigned)channels); le32(b + 24, rate); le32(b + 28, rate * (uint32_t)channels * 2);
    le16(b + 32, (unsigned)channels * 2); le16(b + 34, 16); memcpy(b + 36, "data", 4); le32(b + 40, claimed);
    for (uint32_t i = 0; i < held; i++) b[44 + i] = (unsigned char)(i * 37);
    tu_spit(path, b, 44 + (size_t)held);
    free(b);
}

typedef struct warns { int n; char last[1024]; char all[8192]; } warns;
static void on_warn(void *ud, const char *msg)
{
    warns *w = ud;
    w->n++;
    snprintf(w->last, sizeof w->last, "%s", msg);
    size_t k = strlen(w->all);
    snprintf(w->all + k, sizeof w->all - k, "%s\n", msg);
}

/* The dominant frequency of x by zero crossings. */
static double zc_freq(const float *x, int64_t n, int rate)
{
    int z = 0; int64_t first = -1, last = -1;
    for (int64_t t = 1; t < n; t++)
        if ((x[t - 1] < 0) != (x[t] < 0)) { z++; if (first < 0) first = t; last = t; }
    return z > 1 ? (z - 1) / 2.0 * rate / (double)(last - first) : 0;
}

static void test_formats_mono_resample(void **st)
{
    (void)st;
    tu_mkdirs(tu_tpath("fmt/a")); tu_mkdirs(tu_tpath("fmt/b"));
    write_tone(tu_tpath("fmt/a/w16.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 16000, 440);
    write_tone(tu_tpath("fmt/a/w8k.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 1, 4000, 440);      /* 0.5 s */
    write_tone(tu_tpath("fmt/a/f44.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, 2, 44100 * 2, 440);   /* 2 s stereo */
    write_tone(tu_tpath("fmt/b/x.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 22050, 1, 22050, 440);
    write_tone(tu_tpath("fmt/b/y.ogg"), SF_FORMAT_OGG | SF_FORMAT_VORBIS, 48000, 1, 48000, 440);
    al_audio_opts o = {0};
    o.max_seconds = 1.0; o.test_frac = 0.01;   /* 0.01 of 2-3 files: nothing held out */
    warns w = {0}; o.warn = on_warn; o.warn_ud = &w;
    al_audio_split d; al_error e = {{0}};
    if (al_audio_folder_load(tu_tpath("fmt"), &o, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(w.n, 0);
    assert_int_equal(d.train.n, 5); assert_int_equal(d.test.n, 0);
    assert_int_equal(d.train.classes, 2); assert_string_equal(d.train.class_names[1], "b");
    assert_int_equal(d.by_speaker, 0);
    const char *order[5] = {"f44.wav", "w16.wav", "w8k.wav", "x.flac", "y.ogg"};   /* class-major, names sorted */
    for (int i = 0; i < 5; i++) {
        assert_non_null(strstr(d.train.paths[i], order[i]));
        assert_int_equal(al_audio_len(&d.train, i), 16000);
        assert_int_equal(d.train.speaker[i], -1);
        /* the tone keeps its frequency through the resampler (zero crossings over the real part) */
        double f = zc_freq(al_audio_clip(&d.train, i), d.train.nreal[i], 16000);
        if (fabs(f - 440) > 2) fail_msg("%s: %.2f Hz after resampling, want 440", order[i], f);
    }
    assert_int_equal(d.train.nreal[2], 8000);   /* 0.5 s at 8 kHz: 8000 samples, then zeros */
    for (int64_t t = 8000; t < 16000; t++) assert_true(al_audio_clip(&d.train, 2)[t] == 0.0f);
    /* 16 kHz PCM is copied exactly: sample 100 of w16 is 0.5 sin(2π 440 · 100 / 16000) to 16-bit precision */
    assert_true(fabs(al_audio_clip(&d.train, 1)[100] - 0.5 * sin(2 * M_PI * 440 * 100 / 16000.0)) < 1e-4);
    /* the stereo mix: the mean of sin(φ) and sin(φ + 1) has amplitude 0.5 · |cos(0.5)| · ... a tone of 440 Hz */
    float peak = 0;
    for (int64_t t = 1000; t < 16000; t++) peak = fmaxf(peak, fabsf(al_audio_clip(&d.train, 0)[t]));
    assert_true(fabs(peak - 0.5 * cos(0.5)) < 0.01);
    al_audio_split_free(&d);

    /* own lengths (max_seconds 0), and one file alone */
    o.max_seconds = 0;
    if (al_audio_folder_load(tu_tpath("fmt"), &o, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(al_audio_len(&d.train, 0), 32000); assert_int_equal(al_audio_len(&d.train, 2), 8000);
    al_audio_split_free(&d);
    float *x; int64_t n, nreal;
    if (al_audio_file_load(tu_tpath("fmt/b/x.flac"), 0.25, &x, &n, &nreal, &e)) fail_msg("%s", e.msg);
    assert_int_equal(n, 4000); assert_int_equal(nreal, 4000);
    free(x);
}

/* A float file written at 16-bit scale (+-32768, as some tools do) and one exactly at the amplitude
 * limit load unchanged, and the front end's features of the loudest are finite; one just past the
 * limit is refused (the hostile-files test covers the message). */
static void write_raw_float(const char *path, const float *v, int n)
{
    SF_INFO info = {0}; info.samplerate = 16000; info.channels = 1; info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    assert_non_null(sf);
    sf_command(sf, SFC_SET_NORM_FLOAT, NULL, SF_FALSE);
    assert_int_equal(sf_writef_float(sf, v, n), n);
    sf_close(sf);
}
static void test_loud_float_files(void **st)
{
    (void)st;
    enum { N = 4000 };
    static float v[N];
    const float amp[3] = {32768.0f, (float)AL_AUDIO_MAX_AMPLITUDE, nextafterf((float)AL_AUDIO_MAX_AMPLITUDE, INFINITY)};
    for (int k = 0; k < 3; k++) {
        for (int t = 0; t < N; t++) v[t] = (float)(sin(2 * M_PI * 440 * t / 16000.0) * 0.999);
        v[123] = amp[k];   /* the peak: exactly amp */
        write_raw_float(tu_tpath("loud%d.wav", k), v, N);
        float *x; int64_t n, nreal; al_error e = {{0}};
        al_status s = al_audio_file_load(tu_tpath("loud%d.wav", k), 0, &x, &n, &nreal, &e);
        if (k == 2) {
            assert_int_equal(s, AL_ERR);
            if (!strstr(e.msg, "loud2.wav: holds a sample of") || !strstr(e.msg, "at frame 123")) fail_msg("%s", e.msg);
            continue;
        }
        if (s) fail_msg("%s", e.msg);
        assert_int_equal(n, N);
        for (int t = 0; t < N; t++) assert_true(x[t] == v[t]);   /* 16 kHz mono: copied exactly */
        al_fbank fb;
        if (al_fbank_init(&fb, NULL, &e)) fail_msg("%s", e.msg);
        int64_t T = al_fbank_frames(&fb.cfg, n);
        float *m = malloc((size_t)T * AL_MFCC_DIM * sizeof *m);
        assert_non_null(m);
        if (al_fbank_mfcc(&fb, x, n, m, &e)) fail_msg("%s", e.msg);
        for (int64_t i = 0; i < T * AL_MFCC_DIM; i++) if (!isfinite(m[i])) fail_msg("amplitude %g: feature %lld is %g", (double)amp[k], (long long)i, (double)m[i]);
        free(m); al_fbank_free(&fb); free(x);
    }
}

static void test_speaker_split(void **st)
{
    (void)st;
    /* 10 speakers × 3 classes × 2 takes, named SPEAKER_TAKE.wav: the held-out split takes 2 whole speakers */
    for (int c = 0; c < 3; c++) {
        tu_mkdirs(tu_tpath("spk/c%d", c));
        for (int s = 0; s < 10; s++)
            for (int k = 0; k < 2; k++)
                write_tone(tu_tpath("spk/c%d/s%02d_%d.wav", c, s, k), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 800, 200 + 50 * c + s);
    }
    al_audio_opts o = {0};
    o.split_seed = 7;
    al_audio_split d, d2; al_error e = {{0}};
    if (al_audio_folder_load(tu_tpath("spk"), &o, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.by_speaker, 1);
    assert_int_equal(d.train.nspeakers, 10); assert_string_equal(d.train.speaker_names[3], "s03");
    assert_int_equal(d.test.n, 2 * 3 * 2); assert_int_equal(d.train.n, 8 * 3 * 2);
    int in_test[10] = {0};
    for (int i = 0; i < d.test.n; i++) in_test[d.test.speaker[i]] = 1;
    for (int i = 0; i < d.train.n; i++) assert_int_equal(in_test[d.train.speaker[i]], 0);
    /* the same seed: the same split and the same samples */
    if (al_audio_folder_load(tu_tpath("spk"), &o, &d2, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d2.test.n, d.test.n);
    for (int i = 0; i < d.test.n; i++) assert_int_equal(d2.test.speaker[i], d.test.speaker[i]);
    assert_memory_equal(d.train.x, d2.train.x, (size_t)d.train.off[d.train.n] * sizeof(float));
    al_audio_split_free(&d2);
    /* another seed holds out other speakers */
    o.split_seed = 8;
    if (al_audio_folder_load(tu_tpath("spk"), &o, &d2, &e)) fail_msg("%s", e.msg);
    int same = 1;
    for (int i = 0; i < d.test.n; i++) same &= d2.test.speaker[i] == d.test.speaker[i];
    assert_false(same);
    al_audio_split_free(&d2); al_audio_split_free(&d);

    /* one file without a speaker in its name: split per class by file instead */
    write_tone(tu_tpath("spk/c1/nospeaker.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 800, 300);
    if (al_audio_folder_load(tu_tpath("spk"), &o, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.by_speaker, 0);
    assert_int_equal(d.test.n, 4 + 4 + 4);   /* round(0.2 · 20) = 4, round(0.2 · 21) = 4 */
    al_audio_split_free(&d);
}

static void test_train_test_dirs(void **st)
{
    (void)st;
    const char *cls[2] = {"no", "yes"};
    for (int k = 0; k < 2; k++) {
        tu_mkdirs(tu_tpath("tt/train/%s", cls[k])); tu_mkdirs(tu_tpath("tt/test/%s", cls[k]));
        for (int j = 0; j < 3; j++) write_tone(tu_tpath("tt/train/%s/a%d_x.wav", cls[k], j), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 500, 100);
        write_tone(tu_tpath("tt/test/%s/b_x.wav", cls[k]), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 500, 100);
    }
    al_audio_split d; al_error e = {{0}};
    if (al_audio_folder_load(tu_tpath("tt"), NULL, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.train.n, 6); assert_int_equal(d.test.n, 2); assert_int_equal(d.by_speaker, 0);
    assert_int_equal(d.train.nspeakers, 4);   /* a0 a1 a2 b */
    assert_string_equal(d.test.speaker_names[d.test.speaker[1]], "b");
    assert_int_equal(d.test.labels[1], 1);
    al_audio_split_free(&d);
}

/* A folder of one good class and one file under test in class "bad": the file is skipped with a
 * warning that names it and says `why`, and the load then fails on the empty class. */
static void expect_skipped(const char *name, const char *why)
{
    al_audio_opts o = {0};
    warns w = {0}; o.warn = on_warn; o.warn_ud = &w;
    al_audio_split d; al_error e = {{0}};
    assert_int_equal(al_audio_folder_load(tu_tpath("bad"), &o, &d, &e), AL_ERR);
    if (w.n != 1 || !strstr(w.last, name) || !strstr(w.last, why))
        fail_msg("%s: %d warnings, the last '%s' (want one naming it with '%s')", name, w.n, w.last, why);
    if (!strstr(e.msg, "bad: the class has no usable audio files")) fail_msg("%s: error '%s'", name, e.msg);
}

static void test_hostile_files_skipped(void **st)
{
    (void)st;
    tu_mkdirs(tu_tpath("bad/ok")); tu_mkdirs(tu_tpath("bad/bad"));
    write_tone(tu_tpath("bad/ok/a.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 1600, 300);
    write_tone(tu_tpath("bad/ok/b.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 1600, 300);
    struct { const char *file, *why; } c[] = {
        {"truncated.wav", "truncated or a wrong header size"},
        {"huge-data.wav", "its data chunk claims 4294967280 bytes"},
        {"zero-channels.wav", "not a readable audio file"},
        {"rate-0.wav", "not a readable audio file"},
        {"rate-2e9.wav", "sample rate of 2000000000 Hz"},
        {"rate-100.wav", "sample rate of 100 Hz"},
        {"ch-1000.wav", "1000 channels"},
        {"text.wav", "not a readable audio file"},
        {"empty.wav", "not a readable audio file"},
        {"hours.flac", "header claims 18000 s of audio"},
        {"forged.flac", "truncated or forged"},
        {"nan.wav", "NaN or infinite sample at frame 3"},
        {"loud.wav", "holds a sample of 1e+18 at frame 2 (beyond +-1e+06"},
        {"dir.wav", "not a regular file"},
    };
    char p[512];
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        snprintf(p, sizeof p, "%s", tu_tpath("bad/bad/%s", c[i].file));
        const char *f = c[i].file;
        if (!strcmp(f, "truncated.wav")) write_raw_wav(p, 1, 16000, 32000, 1000);
        else if (!strcmp(f, "huge-data.wav")) write_raw_wav(p, 1, 16000, 0xfffffff0u, 1000);
        else if (!strcmp(f, "zero-channels.wav")) write_raw_wav(p, 0, 16000, 2000, 2000);
        else if (!strcmp(f, "rate-0.wav")) write_raw_wav(p, 1, 0, 2000, 2000);
        else if (!strcmp(f, "rate-2e9.wav")) write_raw_wav(p, 1, 2000000000u, 2000, 2000);
        else if (!strcmp(f, "rate-100.wav")) write_raw_wav(p, 1, 100, 2000, 2000);
        else if (!strcmp(f, "ch-1000.wav")) write_raw_wav(p, 1000, 16000, 4000, 4000);
        else if (!strcmp(f, "text.wav")) tu_spit(p, "just some text, not audio\n", 26);
        else if (!strcmp(f, "empty.wav")) tu_spit(p, "", 0);
        else if (!strcmp(f, "dir.wav")) tu_mkdirs(p);
        else if (!strcmp(f, "nan.wav")) {
            SF_INFO info = {0}; info.samplerate = 16000; info.channels = 1; info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
            SNDFILE *sf = sf_open(p, SFM_WRITE, &info); assert_non_null(sf);
            float v[8] = {0, 0.1f, 0.2f, NAN, 0, 0, 0, 0};
            sf_writef_float(sf, v, 8); sf_close(sf);
        } else if (!strcmp(f, "loud.wav")) {   /* finite, but its spectrum overflows float: the fuzzer's find */
            SF_INFO info = {0}; info.samplerate = 16000; info.channels = 1; info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
            SNDFILE *sf = sf_open(p, SFM_WRITE, &info); assert_non_null(sf);
            sf_command(sf, SFC_SET_NORM_FLOAT, NULL, SF_FALSE);   /* write the values as they are */
            float v[8] = {0, 0.5f, 1e18f, 0, 0, 0, 0, 0};
            sf_writef_float(sf, v, 8); sf_close(sf);
        } else {   /* FLAC: a STREAMINFO block only, claiming 5 hours (hours) or 20 min of 8 channels (forged) */
            int forged = !strcmp(f, "forged.flac");
            uint64_t total = forged ? 16000ull * 300 : 16000ull * 3600 * 5, ch = forged ? 8 : 1;
            unsigned char b[42] = {'f', 'L', 'a', 'C', 0x80, 0, 0, 34, 0x10, 0, 0x10, 0};
            uint64_t v = (16000ull << 44) | ((ch - 1) << 41) | (15ull << 36) | total;
            for (int k = 0; k < 8; k++) b[18 + k] = (unsigned char)(v >> (56 - 8 * k));
            tu_spit(p, b, sizeof b);
        }
        expect_skipped(c[i].file, c[i].why);
        if (!strcmp(f, "dir.wav")) rmdir(p); else remove(p);
    }
}

static void test_folder_errors(void **st)
{
    (void)st;
    al_audio_split d; al_error e = {{0}};
    tu_mkdirs(tu_tpath("none"));
    e.msg[0] = 0;
    assert_int_equal(al_audio_folder_load(tu_tpath("none"), NULL, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no class directories (expected"));
    assert_non_null(strstr(e.msg, "/CLASS/AUDIO"));
    tu_mkdirs(tu_tpath("emptyclass/a"));
    e.msg[0] = 0;
    assert_int_equal(al_audio_folder_load(tu_tpath("emptyclass"), NULL, &d, &e), AL_ERR);
    if (!strstr(e.msg, "no readable audio in any class directory")) fail_msg("%s", e.msg);
    tu_mkdirs(tu_tpath("emptyclass/b"));
    write_tone(tu_tpath("emptyclass/b/x.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 500, 100);
    e.msg[0] = 0;
    assert_int_equal(al_audio_folder_load(tu_tpath("emptyclass"), NULL, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "emptyclass/a: the class has no usable audio files"));
    tu_mkdirs(tu_tpath("half/train/a"));
    e.msg[0] = 0;
    assert_int_equal(al_audio_folder_load(tu_tpath("half"), NULL, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "has train/ but no test/"));
    al_audio_opts o = {0};
    o.max_seconds = -1;
    e.msg[0] = 0;
    assert_int_equal(al_audio_folder_load(tu_tpath("emptyclass"), &o, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "max seconds -1"));
    /* the memory budget is checked before decoding */
    tu_mkdirs(tu_tpath("big/a"));
    write_tone(tu_tpath("big/a/x.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 16000, 100);
    al_mem_budget_set(64 << 10);
    e.msg[0] = 0;
    al_status s = al_audio_folder_load(tu_tpath("big"), NULL, &d, &e);
    al_mem_budget_set(0);
    assert_int_equal(s, AL_ERR);
    assert_non_null(strstr(e.msg, "more than the memory budget"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats_mono_resample),
        cmocka_unit_test(test_loud_float_files),
        cmocka_unit_test(test_speaker_split),
        cmocka_unit_test(test_train_test_dirs),
        cmocka_unit_test(test_hostile_files_skipped),
        cmocka_unit_test(test_folder_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
