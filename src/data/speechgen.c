/* speechgen.c — the spoken-digit corpus: espeak-ng voices (in-process, synchronous mode), one word at
 * a time, trimmed and resampled to 16 kHz, assembled into isolated digits and digit sequences with
 * known spans, seeded noise, 16-bit WAV files and a manifest, written into OUT.tmp.HOST.PID and renamed
 * to OUT. See speechgen.h. */
#include "attnlab/speechgen.h"
#include "attnlab/audio.h"
#include "attnlab/io.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <espeak-ng/speak_lib.h>
#include <samplerate.h>

static const char *const langs[] = {"en", "en-us", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-029", "en-us-nyc"};
static const char *const variants[] = {"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "f1", "f2", "f3", "f4", "f5",
                                       "klatt", "klatt2", "klatt3", "klatt4", "adam", "belinda", "benjamin", "david",
                                       "john", "linda", "paul"};
#define NLANG ((int)(sizeof langs / sizeof *langs))
#define NVAR ((int)(sizeof variants / sizeof *variants))
static const char *const words[10] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
/* rng streams of the generator (far from AL_RNG_*: independent of every other use of the seed) */
enum { S_VOICES = 0x5700000, S_SPLIT = 0x5700001, S_SPEAKER = 0x5710000, S_UTT = 0x6000000 };

al_digits_opts al_digits_defaults(void)
{
    al_digits_opts o = {NULL, 50, 5, 50, 0.2, 1, 0};
    return o;
}

/* ====================================================================================== */
/* espeak-ng: one word at a time                                                          */
/* ====================================================================================== */
typedef struct pcm { short *s; size_t n, cap; int oom; } pcm;
static pcm *g_pcm;   /* where the callback appends (in a speaker's own process) */

static int on_audio(short *wav, int n, espeak_EVENT *ev)
{
    (void)ev;
    pcm *p = g_pcm;
    if (!wav || n <= 0 || p->oom) return 0;
    if (p->n + (size_t)n > p->cap) {
        size_t cap = p->cap ? p->cap : 1 << 15;
        while (cap < p->n + (size_t)n) cap *= 2;
        short *q = realloc(p->s, cap * sizeof *q);
        if (!q) { p->oom = 1; return 1; }
        p->s = q; p->cap = cap;
    }
    memcpy(p->s + p->n, wav, (size_t)n * sizeof *wav);
    p->n += (size_t)n;
    return 0;
}

typedef struct voice {
    int lang, variant;
    int pitch, range, rate, volume;   /* espeak-ng parameters */
    float pause;                      /* scale of the pauses between digits */
} voice;

/* A word spoken at 16 kHz: w (n samples) is the trimmed span. */
typedef struct wordbuf { float *w; int64_t n, cap; } wordbuf;

/* Synthesise words[d] with the current voice at (rate, pitch), trim it to where its 5-ms RMS is within
 * 40 dB of its peak, and resample to 16 kHz into out. */
static al_status say(int d, int rate, int pitch, int range, int volume, int sr, float *tmp, int64_t tmpcap, wordbuf *out, al_error *err)
{
    espeak_SetParameter(espeakRATE, rate, 0);
    espeak_SetParameter(espeakPITCH, pitch, 0);
    espeak_SetParameter(espeakRANGE, range, 0);
    espeak_SetParameter(espeakVOLUME, volume, 0);
    g_pcm->n = 0;
    if (espeak_Synth(words[d], strlen(words[d]) + 1, 0, POS_CHARACTER, 0, espeakCHARS_AUTO, NULL, NULL) != EE_OK || g_pcm->oom)
        return al_seterr(err, "espeak-ng could not synthesise '%s'", words[d]);
    const int64_t n = (int64_t)g_pcm->n, win = sr / 200;
    if (n < win || n > tmpcap) return al_seterr(err, "espeak-ng gave %lld samples for '%s'", (long long)n, words[d]);
    double peak = 0;
    for (int64_t a = 0; a + win <= n; a += win) {
        double e = 0;
        for (int64_t t = a; t < a + win; t++) e += (double)g_pcm->s[t] * g_pcm->s[t];
        if (e > peak) peak = e;
    }
    int64_t first = -1, last = -1;
    for (int64_t a = 0; a + win <= n; a += win) {
        double e = 0;
        for (int64_t t = a; t < a + win; t++) e += (double)g_pcm->s[t] * g_pcm->s[t];
        if (e >= peak * 1e-4) { if (first < 0) first = a; last = a + win; }
    }
    if (first < 0 || peak == 0) return al_seterr(err, "espeak-ng gave silence for '%s'", words[d]);
    for (int64_t t = first; t < last; t++) tmp[t - first] = g_pcm->s[t] / 32768.0f;
    const int64_t m = last - first, cap = m * AL_AUDIO_RATE / sr + 64;
    if (cap > out->cap) {
        float *q = realloc(out->w, (size_t)cap * sizeof *q);
        if (!q) return al_seterr(err, "out of memory");
        out->w = q; out->cap = cap;
    }
    SRC_DATA s; memset(&s, 0, sizeof s);
    s.data_in = tmp; s.input_frames = (long)m; s.data_out = out->w; s.output_frames = (long)cap;
    s.src_ratio = (double)AL_AUDIO_RATE / sr; s.end_of_input = 1;
    int e = src_simple(&s, SRC_SINC_FASTEST, 1);
    if (e) return al_seterr(err, "resampling '%s' failed: %s", words[d], src_strerror(e));
    out->n = s.output_frames_gen;
    return AL_OK;
}

/* ====================================================================================== */
/* utterances                                                                             */
/* ====================================================================================== */
#define MAXDIG 7
typedef struct utt {
    float *x; int64_t n, cap;          /* samples at 16 kHz */
    int nd, digit[MAXDIG];
    int64_t a[MAXDIG], b[MAXDIG];      /* spans */
    float snr;
} utt;

static int grow(utt *u, int64_t n)
{
    if (n <= u->cap) return 0;
    int64_t cap = u->cap ? u->cap : 1 << 16;
    while (cap < n) cap *= 2;
    float *q = realloc(u->x, (size_t)cap * sizeof *q);
    if (!q) return -1;
    u->x = q; u->cap = cap;
    return 0;
}
static int64_t secs(float s) { return (int64_t)llroundf(s * AL_AUDIO_RATE); }
static float unif(al_rng *r, float lo, float hi) { return lo + (hi - lo) * al_rng_uniform(r); }

/* Silence of n samples appended to u. */
static int put_silence(utt *u, int64_t n)
{
    if (grow(u, u->n + n)) return -1;
    memset(u->x + u->n, 0, (size_t)n * sizeof *u->x);
    u->n += n;
    return 0;
}

/* Noise at u->snr dB below the speech's mean power over its spans: white and low-passed (one-pole,
 * pole 0.98, scaled to unit variance) mixed in a random proportion; then clipped to [-1, 1). */
static void add_noise(utt *u, al_rng *r)
{
    double p = 0; int64_t ns = 0;
    for (int k = 0; k < u->nd; k++) for (int64_t t = u->a[k]; t < u->b[k]; t++) { p += (double)u->x[t] * u->x[t]; ns++; }
    p = ns ? p / ns : 1e-4;
    const double sigma = sqrt(p / pow(10.0, u->snr / 10.0)), mix = al_rng_uniform(r);
    const double ww = sqrt(mix) * sigma, wl = sqrt(1 - mix) * sigma * sqrt(1 - 0.98 * 0.98);
    double lp = 0;
    for (int64_t t = 0; t < u->n; t++) {
        const double w = al_rng_normal(r);
        lp = 0.98 * lp + w;
        double v = u->x[t] + ww * w + wl * lp;
        u->x[t] = (float)(v > 0.99997 ? 0.99997 : v < -1 ? -1 : v);
    }
}

typedef struct gen {
    const al_digits_opts *o;
    char *out;                 /* o->out without trailing slashes */
    char *tmp;                 /* OUT.tmp.HOST.PID (al_tmp_dir) */
    FILE *man;                 /* manifest.tsv (parent), the speaker's part of it (child) */
    int sr;
    float *scratch; int64_t scratch_cap;
    wordbuf word;
    utt u;
    al_digits_stats *st;
} gen;
/* the part of the manifest (and the error) of speaker s, written by its process */
#define PART_FMT "%s/.part.s%03d"
#define ERR_FMT "%s/.error.s%03d"
#define STATS_FMT "#stats\t%09d\t%09d\t%09d\t%020.6f\n"

/* Speaks digits d[0..nd) into g->u with the speaker's voice: lead silence, words with pauses, tail. */
static al_status build(gen *g, const voice *v, const int *d, int nd, int isolated, al_rng *r, al_error *err)
{
    utt *u = &g->u;
    u->n = 0; u->nd = nd;
    const int rate = (int)lroundf(v->rate * unif(r, 0.9f, 1.1f)), pitch = v->pitch + (int)al_rng_below(r, 11) - 5;
    if (put_silence(u, secs(isolated ? unif(r, 0.05f, 0.25f) : unif(r, 0.1f, 0.5f)))) return al_seterr(err, "out of memory");
    for (int k = 0; k < nd; k++) {
        if (k && put_silence(u, secs(v->pause * unif(r, 0.03f, 0.45f)))) return al_seterr(err, "out of memory");
        if (say(d[k], rate, pitch, v->range, v->volume, g->sr, g->scratch, g->scratch_cap, &g->word, err)) return AL_ERR;
        if (grow(u, u->n + g->word.n)) return al_seterr(err, "out of memory");
        memcpy(u->x + u->n, g->word.w, (size_t)g->word.n * sizeof *u->x);
        u->digit[k] = d[k]; u->a[k] = u->n; u->b[k] = u->n + g->word.n;
        u->n += g->word.n;
    }
    int64_t tail = secs(isolated ? 0.05f : unif(r, 0.1f, 0.5f));
    if (isolated && u->n + tail < AL_AUDIO_RATE) tail = AL_AUDIO_RATE - u->n;   /* isolated clips: at least 1 s */
    if (put_silence(u, tail)) return al_seterr(err, "out of memory");
    u->snr = unif(r, 10, 40);
    add_noise(u, r);
    return AL_OK;
}

/* u as a 16-bit mono 16 kHz WAV at path (plain write: the whole tree is renamed into place). */
static al_status write_wav(const char *path, const utt *u, al_error *err)
{
    unsigned char h[44];
    const uint32_t bytes = (uint32_t)(u->n * 2);
    const uint32_t v[] = {36 + bytes, 16, 1 | 1u << 16, AL_AUDIO_RATE, AL_AUDIO_RATE * 2, 2 | 16u << 16, bytes};
    memcpy(h, "RIFF", 4); memcpy(h + 8, "WAVEfmt ", 8); memcpy(h + 36, "data", 4);
    const int at[] = {4, 16, 20, 24, 28, 32, 40};
    for (int i = 0; i < 7; i++) for (int k = 0; k < 4; k++) h[at[i] + k] = (unsigned char)(v[i] >> (8 * k));
    FILE *f = fopen(path, "wb");
    if (!f) return al_seterr(err, "%s: cannot create: %s", al_path_short(path), strerror(errno));
    int ok = fwrite(h, 1, 44, f) == 44;
    unsigned char b[4096];
    for (int64_t t = 0; t < u->n && ok; ) {
        int k = 0;
        for (; k < 2048 && t < u->n; k++, t++) {
            const int s = (int)lrintf(u->x[t] * 32768.0f);
            const int c = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
            b[2 * k] = (unsigned char)(c & 0xff); b[2 * k + 1] = (unsigned char)((c >> 8) & 0xff);
        }
        ok = fwrite(b, 2, (size_t)k, f) == (size_t)k;
    }
    if (fclose(f) != 0) ok = 0;
    return ok ? AL_OK : al_seterr(err, "%s: writing failed: %s", al_path_short(path), strerror(errno));
}

/* One manifest line: path, split, speaker, voice and parameters, SNR, digits, spans, frame labels. */
static void manifest_line(gen *g, const char *rel, int split, int s, const voice *v)
{
    const utt *u = &g->u;
    fprintf(g->man, "%s\t%s\ts%03d\t%s+%s\t%d\t%d\t%d\t%d\t%.1f\t", rel, split ? "test" : "train", s, langs[v->lang],
            variants[v->variant], v->pitch, v->range, v->rate, v->volume, u->snr);
    for (int k = 0; k < u->nd; k++) fputc('0' + u->digit[k], g->man);
    fputc('\t', g->man);
    for (int k = 0; k < u->nd; k++) fprintf(g->man, "%s%lld:%lld", k ? "," : "", (long long)u->a[k], (long long)u->b[k]);
    fputc('\t', g->man);
    const int64_t T = u->n < 400 ? 0 : 1 + (u->n - 400) / 160;
    for (int64_t t = 0; t < T; t++) {
        const int64_t c = 160 * t + 200;
        int lab = '-';
        for (int k = 0; k < u->nd; k++) if (c >= u->a[k] && c < u->b[k]) lab = '0' + u->digit[k];
        fputc(lab, g->man);
    }
    fputc('\n', g->man);
}

/* Every utterance of speaker s: repeats × 10 isolated digits, then the sequences. */
static al_status speaker_utts(gen *g, int s, const voice *v, int split, al_error *err)
{
    char name[96];
    snprintf(name, sizeof name, "%s+%s", langs[v->lang], variants[v->variant]);
    if (espeak_SetVoiceByName(name) != EE_OK) return al_seterr(err, "espeak-ng has no voice %s", name);
    const int total = 10 * g->o->repeats + g->o->sequences;
    for (int i = 0; i < total; i++) {
        al_rng r; al_rng_seed(&r, g->o->seed, S_UTT + (uint64_t)s * 100000 + (uint64_t)i);
        int d[MAXDIG], nd;
        const int iso = i < 10 * g->o->repeats;
        if (iso) { d[0] = i % 10; nd = 1; }
        else { nd = 3 + (int)al_rng_below(&r, 5); for (int k = 0; k < nd; k++) d[k] = (int)al_rng_below(&r, 10); }
        if (build(g, v, d, nd, iso, &r, err)) return AL_ERR;
        char rel[128], path[4200];
        if (iso) snprintf(rel, sizeof rel, "digits/%s/%d/s%03d_%d.wav", split ? "test" : "train", d[0], s, i / 10);
        else snprintf(rel, sizeof rel, "sequences/%s/s%03d_%d.wav", split ? "test" : "train", s, i - 10 * g->o->repeats);
        snprintf(path, sizeof path, "%s/%s", g->tmp, rel);
        if (write_wav(path, &g->u, err)) return AL_ERR;
        manifest_line(g, rel, split, s, v);
        g->st->utterances++; g->st->isolated += iso; g->st->sequences += !iso;
        g->st->audio_seconds += (double)g->u.n / AL_AUDIO_RATE;
    }
    return AL_OK;
}

/* ====================================================================================== */
/* the corpus                                                                             */
/* ====================================================================================== */
static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) { (void)sb; (void)flag; (void)f; return remove(p); }

/* The voices of the speakers: distinct (language, variant) pairs in a seeded order, own parameters. */
static void make_voices(const al_digits_opts *o, voice *v)
{
    int pairs[NLANG * NVAR];
    for (int i = 0; i < NLANG * NVAR; i++) pairs[i] = i;
    al_rng r; al_rng_seed(&r, o->seed, S_VOICES);
    al_rng_shuffle(&r, pairs, NLANG * NVAR);
    for (int s = 0; s < o->speakers; s++) {
        al_rng q; al_rng_seed(&q, o->seed, S_SPEAKER + (uint64_t)s);
        const int p = pairs[s % (NLANG * NVAR)];
        v[s].lang = p / NVAR; v[s].variant = p % NVAR;
        v[s].pitch = 25 + (int)al_rng_below(&q, 51);
        v[s].range = 20 + (int)al_rng_below(&q, 71);
        v[s].rate = 130 + (int)al_rng_below(&q, 81);
        v[s].volume = 70 + (int)al_rng_below(&q, 61);
        v[s].pause = unif(&q, 0.5f, 1.5f);
    }
}

/* OUT must not exist or be an empty directory; its temporary directory OUT.tmp.HOST.PID gets the tree. */
static al_status make_tree(gen *g, al_error *err)
{
    const char *out = g->out;
    struct stat sb;
    if (stat(out, &sb) == 0) {   /* rename(2) replaces an empty directory, nothing else */
        if (!S_ISDIR(sb.st_mode)) return al_seterr(err, "%s: exists and is not a directory", al_path_short(out));
        DIR *d = opendir(out);
        if (!d) return al_seterr(err, "%s: cannot open directory: %s", al_path_short(out), strerror(errno));
        struct dirent *e;
        int empty = 1;
        while (empty && (e = readdir(d))) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        closedir(d);
        if (!empty) return al_seterr(err, "%s: exists and is not empty (the corpus goes into a new directory)", al_path_short(out));
    }
    if (al_tmp_dir(out, &g->tmp, err) != AL_OK) return AL_ERR;   /* made exclusively: nothing planted is followed */
    char p[4300];
    const char *sub[] = {"", "/digits", "/digits/train", "/digits/test", "/sequences", "/sequences/train", "/sequences/test"};
    for (int i = 1; i < 7; i++) {
        snprintf(p, sizeof p, "%s%s", g->tmp, sub[i]);
        if (mkdir(p, 0755) != 0) return al_seterr(err, "%s: cannot create %s: %s", al_path_short(out), p, strerror(errno));
    }
    for (int sp = 0; sp < 2; sp++)
        for (int d = 0; d < 10; d++) {
            snprintf(p, sizeof p, "%s/digits/%s/%d", g->tmp, sp ? "test" : "train", d);
            if (mkdir(p, 0755) != 0) return al_seterr(err, "%s: cannot create %s: %s", al_path_short(out), p, strerror(errno));
        }
    snprintf(p, sizeof p, "%s/manifest.tsv", g->tmp);
    if (!(g->man = fopen(p, "w"))) return al_seterr(err, "%s: cannot create %s: %s", al_path_short(out), p, strerror(errno));
    fprintf(g->man, "path\tsplit\tspeaker\tvoice\tpitch\trange\trate_wpm\tvolume\tsnr_db\tdigits\tspans_16k\tframe_labels\n");
    return AL_OK;
}

/* Flush the tree to disk, then rename the temporary directory over OUT (and make the rename durable). */
static al_status commit_tree(gen *g, al_error *err)
{
    int ok = fflush(g->man) == 0 && fclose(g->man) == 0;
    g->man = NULL;
    if (!ok) return al_seterr(err, "%s: writing the manifest failed: %s", al_path_short(g->out), strerror(errno));
    int fd = open(g->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) { (void)syncfs(fd); close(fd); }
    if (rename(g->tmp, g->out) != 0) return al_seterr(err, "%s: rename from %s failed: %s", al_path_short(g->out), g->tmp, strerror(errno));
    al_fsync_parent(g->out);
    return AL_OK;
}

static al_status check_opts(const al_digits_opts *o, al_error *err)
{
    if (!o->out || !o->out[0]) return al_seterr(err, "speech digits: no output directory");
    if (o->speakers < 2 || o->speakers > AL_DIGITS_MAX_SPEAKERS)
        return al_seterr(err, "speech digits: %d speakers (2 to %d: both splits need one)", o->speakers, AL_DIGITS_MAX_SPEAKERS);
    if (o->repeats < 0 || o->repeats > 1000 || o->sequences < 0 || o->sequences > 100000 || o->repeats + o->sequences == 0)
        return al_seterr(err, "speech digits: %d repeats and %d sequences per speaker (0-1000, 0-100000, not both 0)", o->repeats, o->sequences);
    if (o->jobs < 0 || o->jobs > 64) return al_seterr(err, "speech digits: %d jobs (1 to 64, or 0 for the CPUs)", o->jobs);
    if (!(o->test_frac > 0 && o->test_frac < 1)) return al_seterr(err, "speech digits: test fraction %g is not in (0, 1)", o->test_frac);
    return AL_OK;
}

/* ---------------------------------------------------------------- one speaker, one process */
/* In the speaker's own process: espeak-ng started afresh (its output depends on what it synthesised
 * before: the same word comes out a few samples longer or shorter), every utterance of speaker s
 * written, its manifest lines into its part file after a "#stats" line. 0, or 1 with the error in its
 * error file. */
static int speaker_process(gen *g, int s, const voice *v, int split)
{
    al_error err = {{0}};
    al_digits_stats st = {0};
    char path[4200];
    pcm buf = {0};
    g_pcm = &buf; g->st = &st;
    g->sr = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL, espeakINITIALIZE_DONT_EXIT);
    g->scratch_cap = (int64_t)(g->sr > 0 ? g->sr : 1) * 10;   /* one word: well under 10 s even at the slowest rate */
    snprintf(path, sizeof path, PART_FMT, g->tmp, s);
    if (g->sr < 8000 || g->sr > 96000) al_seterr(&err, "espeak-ng did not start (its data missing? install espeak-ng-data)");
    else if (!(g->scratch = malloc((size_t)g->scratch_cap * sizeof *g->scratch))) al_seterr(&err, "out of memory");
    else if (!(g->man = fopen(path, "w"))) al_seterr(&err, "%s: cannot create: %s", al_path_short(path), strerror(errno));
    else {
        espeak_SetSynthCallback(on_audio);
        fprintf(g->man, STATS_FMT, 0, 0, 0, 0.0);   /* rewritten in place at the end: fixed widths */
        if (!speaker_utts(g, s, v, split, &err)) {
            rewind(g->man);
            fprintf(g->man, STATS_FMT, st.utterances, st.isolated, st.sequences, st.audio_seconds);
        }
        if (fclose(g->man) != 0) al_seterr(&err, "%s: writing failed: %s", al_path_short(path), strerror(errno));
    }
    if (!err.msg[0]) return 0;
    snprintf(path, sizeof path, ERR_FMT, g->tmp, s);
    FILE *f = fopen(path, "w");
    if (f) { fputs(err.msg, f); fclose(f); }
    return 1;
}

/* The error speaker s's process left, into err (or a generic one). */
static al_status speaker_failed(const gen *g, int s, int status, al_error *err)
{
    char path[4200], msg[AL_ERRLEN] = "";
    snprintf(path, sizeof path, ERR_FMT, g->tmp, s);
    FILE *f = fopen(path, "r");
    if (f) { size_t k = fread(msg, 1, sizeof msg - 1, f); msg[k] = 0; fclose(f); }
    if (msg[0]) return al_seterr(err, "%s", msg);
    return al_seterr(err, "speech digits: the process of speaker s%03d ended with status %d", s, status);
}

/* The manifest: its header, then each speaker's part in speaker order; the parts' stats summed. */
static al_status join_parts(gen *g, al_error *err)
{
    char path[4200], line[1 << 16];
    for (int s = 0; s < g->o->speakers; s++) {
        snprintf(path, sizeof path, PART_FMT, g->tmp, s);
        FILE *f = fopen(path, "r");
        if (!f) return al_seterr(err, "%s: cannot open: %s", al_path_short(path), strerror(errno));
        int u = 0, iso = 0, seq = 0; double sec = 0;
        if (!fgets(line, sizeof line, f) || sscanf(line, "#stats %d %d %d %lf", &u, &iso, &seq, &sec) != 4) {
            fclose(f); return al_seterr(err, "%s: no stats line", al_path_short(path));
        }
        g->st->utterances += u; g->st->isolated += iso; g->st->sequences += seq; g->st->audio_seconds += sec;
        size_t k;
        while ((k = fread(line, 1, sizeof line, f)) > 0) fwrite(line, 1, k, g->man);
        fclose(f);
        remove(path);
    }
    return AL_OK;
}

/* Workers: --jobs, else the online CPUs (at most 64). */
static int workers(const al_digits_opts *o)
{
    if (o->jobs > 0) return o->jobs;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* Every speaker in a process of its own, up to workers() at once; the first failure stops new ones. */
static al_status run_speakers(gen *g, const voice *v, const char *test, al_error *err)
{
    const int J = workers(g->o), N = g->o->speakers;
    pid_t *pid = calloc((size_t)N, sizeof *pid);
    if (!pid) return al_seterr(err, "out of memory");
    fflush(NULL);   /* nothing buffered twice */
    int next = 0, running = 0, failed = 0;
    while (running > 0 || (next < N && !failed)) {
        while (running < J && next < N && !failed) {
            pid_t p = fork();
            if (p < 0) { failed = 1; al_seterr(err, "speech digits: fork failed: %s", strerror(errno)); break; }
            if (p == 0) _exit(speaker_process(g, next, &v[next], test[next]));
            pid[next++] = p; running++;
        }
        if (!running) break;
        int status;
        pid_t p = wait(&status);
        if (p < 0) { if (errno == EINTR) continue; failed = 1; al_seterr(err, "speech digits: wait failed: %s", strerror(errno)); break; }
        running--;
        int s = 0;
        while (s < next && pid[s] != p) s++;
        if (s < next && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !failed) { failed = 1; speaker_failed(g, s, status, err); }
    }
    free(pid);
    return failed ? AL_ERR : AL_OK;
}

/* The voices, the speaker split, every speaker's utterances, the manifest, the rename. */
static al_status run(gen *g, al_error *err)
{
    const al_digits_opts *o = g->o;
    voice *v = malloc((size_t)o->speakers * sizeof *v);
    int *order = malloc((size_t)o->speakers * sizeof *order);
    char *test = calloc((size_t)o->speakers, 1);
    al_status st = AL_ERR;
    if (!v || !order || !test) { al_seterr(err, "out of memory"); goto out; }
    make_voices(o, v);
    for (int s = 0; s < o->speakers; s++) order[s] = s;
    al_rng r; al_rng_seed(&r, o->seed, S_SPLIT);
    al_rng_shuffle(&r, order, o->speakers);
    int nt = (int)floor(o->test_frac * o->speakers + 0.5);
    if (nt < 1) nt = 1;
    if (nt >= o->speakers) nt = o->speakers - 1;
    for (int j = 0; j < nt; j++) test[order[j]] = 1;
    g->st->test_speakers = nt; g->st->train_speakers = o->speakers - nt;
    g->st->voices = o->speakers < NLANG * NVAR ? o->speakers : NLANG * NVAR;
    if (run_speakers(g, v, test, err) || join_parts(g, err)) goto out;
    st = commit_tree(g, err);
out:
    free(v); free(order); free(test);
    return st;
}

al_status al_speech_digits_generate(const al_digits_opts *o, al_digits_stats *st, al_error *err)
{
    memset(st, 0, sizeof *st);
    if (check_opts(o, err)) return AL_ERR;
    gen g; memset(&g, 0, sizeof g);
    g.o = o; g.st = st;
    al_status s = AL_ERR;
    if (!(g.out = strdup(o->out))) return al_seterr(err, "out of memory");
    for (size_t k = strlen(g.out); k > 1 && g.out[k - 1] == '/'; k--) g.out[k - 1] = 0;   /* "speech/" -> "speech" */
    if (!make_tree(&g, err)) s = run(&g, err);
    if (g.man) fclose(g.man);
    if (s != AL_OK && g.tmp) nftw(g.tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    free(g.tmp); free(g.out);
    return s;
}
