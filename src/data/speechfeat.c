/* speechfeat.c — utterances as frame features for the speech task (speech.h): the front end of fbank.h
 * over every clip (in parallel: one FFTW plan, per-call buffers), labels per utterance or per frame. */
#include "attnlab/speech.h"
#include "attnlab/fbank.h"
#include "attnlab/io.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

al_status al_speech_features_parse(const char *s, al_speech_features *out, al_error *err)
{
    if (s && !strcmp(s, "mfcc")) { *out = AL_SPEECH_MFCC; return AL_OK; }
    if (s && !strcmp(s, "fbank")) { *out = AL_SPEECH_FBANK; return AL_OK; }
    return al_seterr(err, "--features must be mfcc or fbank, got '%s'", s ? s : "");
}
const char *al_speech_features_name(al_speech_features f) { return f == AL_SPEECH_FBANK ? "fbank" : "mfcc"; }

static void free_names(char **v, int n)
{
    if (!v) return;
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

void al_speech_data_free(al_speech_data *d)
{
    free(d->foff); free(d->x); free(d->label); free(d->flab); free(d->speaker);
    free_names(d->digits, d->n);
    free_names(d->class_names, d->classes);
    memset(d, 0, sizeof *d);
}

static char **copy_names(char *const *v, int n)
{
    char **o = calloc((size_t)(n > 0 ? n : 1), sizeof *o);
    for (int i = 0; o && i < n; i++)
        if (!(o[i] = strdup(v[i]))) { free_names(o, i); return NULL; }
    return o;
}

/* Frames of every clip of a into out->x (foff set by the caller); AL_ERR with the clip's file named. */
static al_status featurize(const al_audio *a, const al_speech_opts *o, al_speech_data *out, al_error *err)
{
    al_fbank fb;
    al_fbank_cfg fc = al_fbank_defaults();
    if (al_fbank_init(&fb, &fc, err) != AL_OK) return AL_ERR;
    const int D = out->dim;
    int bad = -1;
    al_error first = {{0}};
    AL_OMP("omp parallel for schedule(dynamic, 4)")
    for (int i = 0; i < a->n; i++) {
        al_error e = {{0}};
        float *y = out->x + out->foff[i] * D;
        al_status st = o->features == AL_SPEECH_FBANK ? al_fbank_logmel(&fb, al_audio_clip(a, i), al_audio_len(a, i), y, &e)
                                                      : al_fbank_mfcc(&fb, al_audio_clip(a, i), al_audio_len(a, i), y, &e);
        if (st == AL_OK && o->cmvn) al_feat_cmvn(y, out->foff[i + 1] - out->foff[i], D);
        if (st != AL_OK) {
            AL_OMP("omp critical(speech_feat)")
            if (bad < 0 || i < bad) { bad = i; first = e; }
        }
    }
    al_fbank_free(&fb);
    if (bad >= 0) return al_seterr(err, "%s: %s", a->paths ? a->paths[bad] : "clip", first.msg);
    return AL_OK;
}

/* foff and x for the clips of a (whose frame counts are counted here); checks each has a frame. */
static al_status alloc_frames(const al_audio *a, const al_speech_opts *o, al_speech_data *out, al_error *err)
{
    al_fbank_cfg fc = al_fbank_defaults();
    out->n = a->n;
    out->dim = o->features == AL_SPEECH_FBANK ? AL_FBANK_MELS : AL_MFCC_DIM;
    out->foff = malloc((size_t)(a->n + 1) * sizeof(int64_t));
    if (!out->foff) return al_seterr(err, "speech: out of memory");
    out->foff[0] = 0;
    for (int i = 0; i < a->n; i++) {
        int64_t T = al_fbank_frames(&fc, al_audio_len(a, i));
        if (T < 1) return al_seterr(err, "%s: %lld samples, shorter than one 25-ms frame", a->paths ? a->paths[i] : "clip", (long long)al_audio_len(a, i));
        if (T > 1000000) return al_seterr(err, "%s: %lld frames is too long", a->paths ? a->paths[i] : "clip", (long long)T);
        out->foff[i + 1] = out->foff[i] + T;
        if (T > out->max_frames) out->max_frames = (int)T;
    }
    size_t bytes = (size_t)out->foff[a->n] * (size_t)out->dim * sizeof(float);
    if (al_mem_check((uint64_t)bytes, err, "speech features: %lld frames of %d values", (long long)out->foff[a->n], out->dim))
        return AL_ERR;
    if (!(out->x = malloc(bytes > 0 ? bytes : 1))) return al_seterr(err, "speech: out of memory for %lld frames", (long long)out->foff[a->n]);
    out->speaker = malloc((size_t)(a->n > 0 ? a->n : 1) * sizeof(int));
    if (!out->speaker) return al_seterr(err, "speech: out of memory");
    for (int i = 0; i < a->n; i++) out->speaker[i] = a->speaker ? a->speaker[i] : -1;
    return featurize(a, o, out, err);
}

al_status al_speech_from_audio(const al_audio *a, const al_speech_opts *o, al_speech_target target, al_speech_data *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    if (a->n < 1) return al_seterr(err, "speech: no clips");
    if (target == AL_SPEECH_BY_SPEAKER) {
        if (a->nspeakers < 2) return al_seterr(err, "speech: speaker identification needs >= 2 named speakers, the files name %d", a->nspeakers);
        for (int i = 0; i < a->n; i++)
            if (!a->speaker || a->speaker[i] < 0)
                return al_seterr(err, "%s: the file name names no speaker (SPEAKER_REST)", a->paths ? a->paths[i] : "clip");
    }
    al_status st = alloc_frames(a, o, out, err);
    if (st == AL_OK) {
        out->classes = target == AL_SPEECH_BY_SPEAKER ? a->nspeakers : a->classes;
        out->class_names = copy_names(target == AL_SPEECH_BY_SPEAKER ? a->speaker_names : a->class_names, out->classes);
        out->label = malloc((size_t)a->n * sizeof(int));
        if (!out->class_names || !out->label) st = al_seterr(err, "speech: out of memory");
        else for (int i = 0; i < a->n; i++) out->label[i] = target == AL_SPEECH_BY_SPEAKER ? a->speaker[i] : a->labels[i];
    }
    if (st != AL_OK) { int c = out->classes; out->classes = out->class_names ? c : 0; al_speech_data_free(out); }
    return st;
}

al_status al_speech_from_frames(const al_frame_set *f, const al_speech_opts *o, al_speech_data *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    static const char *const names[11] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "-"};
    if (f->a.n < 1) return al_seterr(err, "speech: no utterances");
    al_status st = alloc_frames(&f->a, o, out, err);
    for (int i = 0; st == AL_OK && i < f->a.n; i++)
        if (f->foff[i + 1] - f->foff[i] != out->foff[i + 1] - out->foff[i])
            st = al_seterr(err, "%s: %lld frame labels for %lld frames", f->a.paths ? f->a.paths[i] : "clip",
                           (long long)(f->foff[i + 1] - f->foff[i]), (long long)(out->foff[i + 1] - out->foff[i]));
    if (st == AL_OK) {
        out->framewise = 1;
        out->classes = 11;
        out->class_names = copy_names((char *const *)names, 11);
        out->flab = malloc((size_t)(out->foff[f->a.n] > 0 ? out->foff[f->a.n] : 1));
        out->digits = copy_names(f->digits, f->a.n);
        if (!out->class_names || !out->flab || !out->digits) st = al_seterr(err, "speech: out of memory");
        else memcpy(out->flab, f->flab + f->foff[0], (size_t)out->foff[f->a.n]);
        for (int64_t t = 0; st == AL_OK && t < out->foff[f->a.n]; t++)
            if (out->flab[t] > AL_FRAME_SILENCE) st = al_seterr(err, "speech: frame label %d outside 0..10", out->flab[t]);
    }
    if (st != AL_OK) {
        if (!out->class_names) out->classes = 0;
        al_speech_data_free(out);
    }
    return st;
}

al_status al_frame_set_fit(al_frame_set *f, double seconds, al_error *err)
{
    al_fbank_cfg fc = al_fbank_defaults();
    const int64_t n = (int64_t)llround(seconds * AL_AUDIO_RATE), T = al_fbank_frames(&fc, n);
    if (T < 1 || seconds > AL_AUDIO_MAX_SECONDS) return al_seterr(err, "--max-seconds %g gives no frame or is over %d s", seconds, AL_AUDIO_MAX_SECONDS);
    const int N = f->a.n;
    if (al_mem_check((uint64_t)N * (uint64_t)n * sizeof(float) + (uint64_t)N * (uint64_t)T, err,
                     "--max-seconds %g: %d utterances of %lld samples", seconds, N, (long long)n))
        return AL_ERR;
    float *x = calloc((size_t)N * (size_t)n, sizeof(float));
    uint8_t *lab = malloc((size_t)N * (size_t)T);
    int64_t *off = malloc((size_t)(N + 1) * sizeof(int64_t)), *foff = malloc((size_t)(N + 1) * sizeof(int64_t));
    char **dg = calloc((size_t)(N > 0 ? N : 1), sizeof(char *));
    int ok = x && lab && off && foff && dg;
    for (int i = 0; ok && i < N; i++) {
        const int64_t len = al_audio_len(&f->a, i), keep = len < n ? len : n;
        memcpy(x + (int64_t)i * n, al_audio_clip(&f->a, i), (size_t)keep * sizeof(float));
        const int64_t T0 = f->foff[i + 1] - f->foff[i];
        for (int64_t t = 0; t < T; t++) lab[i * T + t] = t < T0 ? f->flab[f->foff[i] + t] : AL_FRAME_SILENCE;
        ok = (dg[i] = malloc((size_t)T + 1)) != NULL;
        if (ok) al_speech_decode(lab + i * T, T, dg[i]);
        off[i] = (int64_t)i * n; foff[i] = (int64_t)i * T;
        if (f->a.nreal && f->a.nreal[i] > n) f->a.nreal[i] = n;
    }
    if (!ok) {
        free(x); free(lab); free(off); free(foff);
        if (dg) free_names(dg, N);
        return al_seterr(err, "--max-seconds: out of memory for %d utterances of %g s", N, seconds);
    }
    off[N] = (int64_t)N * n; foff[N] = (int64_t)N * T;
    free(f->a.x); free(f->a.off); free(f->flab); free(f->foff);
    free_names(f->digits, N);
    f->a.x = x; f->a.off = off; f->flab = lab; f->foff = foff; f->digits = dg;
    return AL_OK;
}

al_status al_speech_subset(const al_speech_data *d, const int *idx, int k, al_speech_data *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    int64_t frames = 0;
    for (int j = 0; j < k; j++) {
        if (idx[j] < 0 || idx[j] >= d->n) return al_seterr(err, "speech subset: utterance %d outside [0, %d)", idx[j], d->n);
        frames += d->foff[idx[j] + 1] - d->foff[idx[j]];
    }
    out->n = k; out->dim = d->dim; out->classes = d->classes; out->framewise = d->framewise;
    out->foff = malloc((size_t)(k + 1) * sizeof(int64_t));
    out->x = malloc((size_t)(frames > 0 ? frames : 1) * (size_t)d->dim * sizeof(float));
    out->speaker = malloc((size_t)(k > 0 ? k : 1) * sizeof(int));
    out->class_names = copy_names(d->class_names, d->classes);
    if (d->label) out->label = malloc((size_t)(k > 0 ? k : 1) * sizeof(int));
    if (d->flab) out->flab = malloc((size_t)(frames > 0 ? frames : 1));
    if (d->digits) out->digits = calloc((size_t)(k > 0 ? k : 1), sizeof(char *));
    if (!out->foff || !out->x || !out->speaker || !out->class_names || (d->label && !out->label) || (d->flab && !out->flab) ||
        (d->digits && !out->digits)) {
        if (!out->class_names) out->classes = 0;
        al_speech_data_free(out);
        return al_seterr(err, "speech subset: out of memory");
    }
    out->foff[0] = 0;
    for (int j = 0; j < k; j++) {
        const int i = idx[j];
        const int64_t T = d->foff[i + 1] - d->foff[i], o0 = out->foff[j];
        memcpy(out->x + o0 * d->dim, d->x + d->foff[i] * d->dim, (size_t)(T * d->dim) * sizeof(float));
        if (d->flab) memcpy(out->flab + o0, d->flab + d->foff[i], (size_t)T);
        if (d->label) out->label[j] = d->label[i];
        if (d->digits && !(out->digits[j] = strdup(d->digits[i]))) { al_speech_data_free(out); return al_seterr(err, "speech subset: out of memory"); }
        out->speaker[j] = d->speaker[i];
        out->foff[j + 1] = o0 + T;
        if (T > out->max_frames) out->max_frames = (int)T;
    }
    return AL_OK;
}

const char *al_speech_clip_dir(const char *dir, char *buf, size_t n)
{
    struct stat st;
    snprintf(buf, n, "%s/digits", dir);
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) snprintf(buf, n, "%s", dir);
    return buf;
}

void al_speech_decode(const uint8_t *lab, int64_t n, char *out)
{
    int o = 0;
    for (int64_t t = 0; t < n; t++)
        if ((t == 0 || lab[t] != lab[t - 1]) && lab[t] < AL_FRAME_SILENCE) out[o++] = (char)('0' + lab[t]);
    out[o] = 0;
}
