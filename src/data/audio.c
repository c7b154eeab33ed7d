/* audio.c — audio folders DIR/CLASS/FILE (or DIR/{train,test}/CLASS/FILE) through libsndfile: every
 * header checked and the whole load budgeted before a sample is decoded, then decoded in parallel
 * (mono mix, libsamplerate to 16 kHz, pad or cut) and split, by speaker when the file names carry one.
 * See audio.h. */
#include "attnlab/audio.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sndfile.h>
#include <samplerate.h>
#include "core/omp_impl.h"
#include "data/folder_impl.h"

#define CHUNK 4096   /* frames read at a time */

void al_audio_free(al_audio *a)
{
    if (!a) return;
    for (int k = 0; a->class_names && k < a->classes; k++) free(a->class_names[k]);
    for (int k = 0; a->speaker_names && k < a->nspeakers; k++) free(a->speaker_names[k]);
    for (int i = 0; a->paths && i < a->n; i++) free(a->paths[i]);
    free(a->class_names); free(a->speaker_names); free(a->paths);
    free(a->off); free(a->x); free(a->nreal); free(a->labels); free(a->speaker);
    memset(a, 0, sizeof *a);
}
void al_audio_split_free(al_audio_split *s)
{
    if (!s) return;
    al_audio_free(&s->train); al_audio_free(&s->test); s->skipped = 0; s->by_speaker = 0;
}

/* ====================================================================================== */
/* one file: probe (header checks), decode                                                */
/* ====================================================================================== */
typedef struct afile {
    char *path;
    int label, split, speaker;
    int rate, channels;
    int64_t frames;         /* the header's claim */
    int64_t need;           /* frames to read (all, or what max_seconds needs) */
    int64_t len, nreal;     /* samples of the clip at 16 kHz; of them from the file */
    int64_t off;            /* where the clip goes in the decoded set */
    int ok;
    char *msg;              /* decode failure */
} afile;

/* Samples at 16 kHz of `frames` at `rate`, rounded. */
static int64_t at_16k(int64_t frames, int rate) { return (frames * AL_AUDIO_RATE + rate / 2) / rate; }

/* libsndfile reads a WAV whose data chunk claims more bytes than the file holds as far as the data
 * goes, and notes "data : CLAIMED (should be HELD)" in its log: such a file was cut short (or its
 * header is wrong), so it is refused rather than read as a shorter clip. 1 with why set, else 0. */
static int data_chunk_short(SNDFILE *sf, char *why, size_t n)
{
    char log[2048];
    log[0] = 0;
    sf_command(sf, SFC_GET_LOG_INFO, log, sizeof log);
    for (const char *l = log; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        long long claimed, held;
        if (sscanf(l, "data : %lld (should be %lld)", &claimed, &held) == 2) {
            snprintf(why, n, "its data chunk claims %lld bytes, the file holds %lld: truncated or a wrong header size", claimed, held);
            return 1;
        }
    }
    return 0;
}

/* Header checks of path (audio.h); fills rate, channels, frames, need, len, nreal. 0, or -1 with why. */
static int probe(const char *path, double max_seconds, afile *f, char *why, size_t n)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) { snprintf(why, n, "not a regular file"); return -1; }
    SF_INFO info; memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    if (!sf) { snprintf(why, n, "not a readable audio file (%s)", sf_strerror(NULL)); return -1; }
    int cut = data_chunk_short(sf, why, n);
    sf_close(sf);
    if (cut) return -1;
    if (info.channels < 1 || info.channels > AL_AUDIO_MAX_CHANNELS) {
        snprintf(why, n, "header claims %d channels (1 to %d)", info.channels, AL_AUDIO_MAX_CHANNELS); return -1;
    }
    if (info.samplerate < AL_AUDIO_MIN_RATE || info.samplerate > AL_AUDIO_MAX_RATE) {
        snprintf(why, n, "header claims a sample rate of %d Hz (%d to %d)", info.samplerate, AL_AUDIO_MIN_RATE, AL_AUDIO_MAX_RATE); return -1;
    }
    if (info.frames < 1) { snprintf(why, n, "holds no audio (0 frames)"); return -1; }
    if ((double)info.frames / info.samplerate > AL_AUDIO_MAX_SECONDS) {
        snprintf(why, n, "header claims %.0f s of audio (limit %d s)", (double)info.frames / info.samplerate, AL_AUDIO_MAX_SECONDS); return -1;
    }
    uint64_t claim = al_size_mul(al_size_mul((uint64_t)info.frames, (uint64_t)info.channels), 2);
    if (claim > AL_AUDIO_FREE_BYTES && claim / AL_AUDIO_MAX_RATIO > (uint64_t)sb.st_size) {
        char a[32];
        snprintf(why, n, "header claims %lld frames of %d channels (%s as 16-bit samples) in a %lld-byte file, more than %d "
                 "decoded bytes per file byte: truncated or forged", (long long)info.frames, info.channels, al_bytes_str(claim, a),
                 (long long)sb.st_size, AL_AUDIO_MAX_RATIO);
        return -1;
    }
    f->rate = info.samplerate; f->channels = info.channels; f->frames = info.frames;
    int64_t own = at_16k(info.frames, info.samplerate);
    if (own < 1) own = 1;
    if (max_seconds > 0) {
        f->len = (int64_t)llround(max_seconds * AL_AUDIO_RATE);
        /* the input frames the clip needs, plus a margin for the resampling filter's look-ahead */
        int64_t want = (int64_t)ceil((double)f->len * info.samplerate / AL_AUDIO_RATE) + 256;
        f->need = want < info.frames ? want : info.frames;
    } else {
        f->len = own; f->need = info.frames;
    }
    f->nreal = own < f->len ? own : f->len;
    return 0;
}

/* The mono mix of f->need frames of f into mono (f->need). 0, or -1 with why. */
static int read_mono(const afile *f, float *mono, float *chunk /* (CHUNK, channels) */, char *why, size_t n)
{
    SF_INFO info; memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(f->path, SFM_READ, &info);
    if (!sf) { snprintf(why, n, "could not be reopened"); return -1; }
    if (info.channels != f->channels || info.samplerate != f->rate || info.frames != f->frames) {
        sf_close(sf); snprintf(why, n, "changed while it was read"); return -1;
    }
    const int C = f->channels;
    int64_t got = 0;
    while (got < f->need) {
        sf_count_t want = f->need - got < CHUNK ? (sf_count_t)(f->need - got) : CHUNK;
        sf_count_t k = sf_readf_float(sf, chunk, want);
        if (k <= 0) break;
        for (sf_count_t t = 0; t < k; t++) {
            float s = 0;
            for (int c = 0; c < C; c++) s += chunk[t * C + c];
            s /= (float)C;
            if (!isfinite(s)) {
                sf_close(sf);
                snprintf(why, n, "holds a NaN or infinite sample at frame %lld", (long long)(got + t)); return -1;
            }
            if (fabsf(s) > AL_AUDIO_MAX_AMPLITUDE) {   /* finite, but its spectrum would overflow float */
                sf_close(sf);
                snprintf(why, n, "holds a sample of %g at frame %lld (beyond +-%g: not audio, or a wrong scale)", (double)s,
                         (long long)(got + t), (double)AL_AUDIO_MAX_AMPLITUDE);
                return -1;
            }
            mono[got + t] = s;
        }
        got += k;
    }
    sf_close(sf);
    if (got < f->need) {
        snprintf(why, n, "could not be decoded: the header claims %lld frames, the data ends after %lld (truncated?)",
                 (long long)f->frames, (long long)got);
        return -1;
    }
    return 0;
}

/* Frames of scratch space decode() needs for f: the mono mix, the resampled signal, one chunk. */
static uint64_t scratch_floats(const afile *f)
{
    uint64_t res = f->rate == AL_AUDIO_RATE ? 0 : (uint64_t)at_16k(f->need, f->rate) + 64;
    return al_size_add(al_size_add((uint64_t)f->need, res), al_size_mul(CHUNK, (uint64_t)f->channels));
}

/* Decode f into dst (f->len): read, mix, resample, pad or cut. Thread-safe. 0, or -1 with why. */
static int decode(const afile *f, float *dst, char *why, size_t n)
{
    float *buf = malloc((size_t)scratch_floats(f) * sizeof *buf);
    if (!buf) { snprintf(why, n, "out of memory"); return -1; }
    float *mono = buf, *chunk = buf + f->need, *res = chunk + (size_t)CHUNK * f->channels;
    if (read_mono(f, mono, chunk, why, n)) { free(buf); return -1; }
    const float *sig = mono;
    int64_t m = f->need;
    if (f->rate != AL_AUDIO_RATE) {
        SRC_DATA d; memset(&d, 0, sizeof d);
        d.data_in = mono; d.input_frames = (long)f->need;
        d.data_out = res; d.output_frames = (long)(at_16k(f->need, f->rate) + 64);
        d.src_ratio = (double)AL_AUDIO_RATE / f->rate;
        d.end_of_input = 1;
        int e = src_simple(&d, SRC_SINC_MEDIUM_QUALITY, 1);
        if (e) { snprintf(why, n, "resampling from %d Hz failed (%s)", f->rate, src_strerror(e)); free(buf); return -1; }
        sig = res; m = d.output_frames_gen;
    }
    int64_t k = m < f->nreal ? m : f->nreal;
    memcpy(dst, sig, (size_t)k * sizeof *dst);
    memset(dst + k, 0, (size_t)(f->len - k) * sizeof *dst);
    free(buf);
    return 0;
}

al_status al_audio_file_load(const char *path, double max_seconds, float **x, int64_t *n, int64_t *nreal, al_error *err)
{
    *x = NULL; *n = 0; *nreal = 0;
    if (!(max_seconds >= 0) || max_seconds > AL_AUDIO_MAX_SECONDS)
        return al_seterr(err, "%s: max seconds %g is not in [0, %d]", al_path_short(path), max_seconds, AL_AUDIO_MAX_SECONDS);
    afile f; memset(&f, 0, sizeof f);
    f.path = (char *)path;
    char why[512];
    if (probe(path, max_seconds, &f, why, sizeof why)) return al_seterr(err, "%s: %s", al_path_short(path), why);
    uint64_t need = al_size_mul(al_size_add((uint64_t)f.len, scratch_floats(&f)), sizeof(float));
    if (al_mem_check(need, err, "%s: %lld frames of %d channels at %d Hz", path, (long long)f.frames, f.channels, f.rate)) return AL_ERR;
    float *dst = malloc((size_t)f.len * sizeof *dst);
    if (!dst) return al_seterr(err, "%s: out of memory", al_path_short(path));
    if (decode(&f, dst, why, sizeof why)) { free(dst); return al_seterr(err, "%s: %s", al_path_short(path), why); }
    *x = dst; *n = f.len; *nreal = f.nreal;
    return AL_OK;
}

/* ====================================================================================== */
/* folders                                                                                */
/* ====================================================================================== */
typedef struct aload {
    afile *f; int n, cap;
    const al_audio_opts *o;
    al__skips sk;            /* the files skipped */
} aload;

int al__speaker_of(const char *name, char *out, size_t n)
{
    const char *u = strchr(name, '_');
    if (!u || u == name || !u[1] || (size_t)(u - name) >= n) return 0;
    memcpy(out, name, (size_t)(u - name)); out[u - name] = 0;
    return 1;
}

/* Probe every file of the class folder; what fails is skipped with a warning. */
static al_status probe_files(aload *L, const al__classfolder *cf, al_error *err)
{
    for (int i = 0; i < cf->n; i++) {
        afile f; memset(&f, 0, sizeof f);
        char why[512];
        if (probe(cf->f[i].path, L->o->max_seconds, &f, why, sizeof why)) { al__skipf(&L->sk, "%s: %s, skipped", cf->f[i].path, why); continue; }
        if (L->n == L->cap) {
            int cap = L->cap ? 2 * L->cap : 256;
            afile *q = realloc(L->f, (size_t)cap * sizeof *q);
            if (!q) return al_seterr(err, "out of memory");
            L->f = q; L->cap = cap;
        }
        if (!(f.path = strdup(cf->f[i].path))) return al_seterr(err, "out of memory");
        f.label = cf->f[i].label; f.split = cf->f[i].split; f.speaker = -1;
        L->f[L->n++] = f;
    }
    return AL_OK;
}

/* The decode of L's files, budgeted before any of it: the clips (twice: all + the splits) and, per
 * decoding thread, the scratch space of the largest file. Sets each file's offset; *total = samples. */
static al_status budget(aload *L, const char *dir, int64_t *total, al_error *err)
{
    uint64_t sum = 0, scratch = 0; int bi = 0;
    for (int i = 0; i < L->n; i++) {
        L->f[i].off = (int64_t)sum;
        sum = al_size_add(sum, (uint64_t)L->f[i].len);
        uint64_t s = scratch_floats(&L->f[i]);
        if (s > scratch) { scratch = s; bi = i; }
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    uint64_t need = al_size_mul(al_size_add(al_size_mul(sum, 2), al_size_mul(scratch, (uint64_t)threads)), sizeof(float));
    char pb[200];
    if (al_mem_check(need, err, "%s: %d audio files, %lld samples at 16 kHz (the largest file, %s, %lld frames of %d channel%s)", dir,
                     L->n, (long long)sum, al_path_abbrev(L->f[bi].path, pb, sizeof pb), (long long)L->f[bi].need, L->f[bi].channels,
                     L->f[bi].channels == 1 ? "" : "s"))
        return AL_ERR;
    *total = (int64_t)sum;
    return AL_OK;
}

/* Speakers of the usable files from their names (audio.h's rule): *names (sorted, distinct), each
 * file's index; returns 1 if every usable file names one (and there are two or more). */
static int assign_speakers(aload *L, al__strlist *names, al_error *err, al_status *st)
{
    int all = 1;
    char **sp = calloc((size_t)L->n, sizeof *sp);
    int *idx = malloc((size_t)L->n * sizeof *idx);
    *st = AL_OK;
    if (!sp || !idx) { free(sp); free(idx); *st = al_seterr(err, "out of memory"); return 0; }
    for (int i = 0; i < L->n && *st == AL_OK; i++) {
        char buf[256];
        const char *base = strrchr(L->f[i].path, '/');
        if (!L->f[i].ok) continue;
        if (!al__speaker_of(base ? base + 1 : L->f[i].path, buf, sizeof buf)) all = 0;
        else if (!(sp[i] = strdup(buf))) *st = al_seterr(err, "out of memory");
    }
    if (*st == AL_OK && al__name_index((const char *const *)sp, L->n, names, idx)) *st = al_seterr(err, "out of memory");
    for (int i = 0; i < L->n; i++) { if (*st == AL_OK) L->f[i].speaker = idx[i]; free(sp[i]); }
    free(sp); free(idx);
    return *st == AL_OK && all && names->n >= 2;
}

/* The held-out split: whole speakers (by_speaker) or round(frac · n_k) files of each class, seeded
 * (stream AL_RNG_DATA); file order kept. */
static al_status hold_out(aload *L, int nclass, int nspk, int by_speaker, double frac, uint64_t seed, al_error *err)
{
    al_rng rng; al_rng_seed(&rng, seed, AL_RNG_DATA);
    int m = by_speaker ? nspk : L->n;
    int *members = malloc((size_t)(m > 0 ? m : 1) * sizeof *members);
    if (!members) return al_seterr(err, "out of memory");
    if (by_speaker) {
        for (int s = 0; s < nspk; s++) members[s] = s;
        int nt = al__hold_out_pick(&rng, members, nspk, frac, 1);
        char *test = calloc((size_t)nspk, 1);
        if (!test) { free(members); return al_seterr(err, "out of memory"); }
        for (int j = 0; j < nt; j++) test[members[j]] = 1;
        for (int i = 0; i < L->n; i++) if (L->f[i].ok) L->f[i].split = test[L->f[i].speaker];
        free(test);
    } else {
        for (int k = 0; k < nclass; k++) {
            int c = 0;
            for (int i = 0; i < L->n; i++) if (L->f[i].ok && L->f[i].label == k) members[c++] = i;
            int nt = al__hold_out_pick(&rng, members, c, frac, 0);
            for (int j = 0; j < nt; j++) L->f[members[j]].split = 1;
        }
    }
    free(members);
    return AL_OK;
}

static char **copy_names(const al__strlist *l)
{
    char **c = calloc((size_t)(l->n ? l->n : 1), sizeof *c);
    if (!c) return NULL;
    for (int k = 0; k < l->n; k++)
        if (!(c[k] = strdup(l->s[k]))) { for (int j = 0; j < k; j++) free(c[j]); free(c); return NULL; }
    return c;
}

/* out = the usable files of split `split` (class-major, then by name), copied from all. */
static al_status make_split(const aload *L, int split, const float *all, const al__strlist *classes, const al__strlist *spk,
                            al_audio *a, al_error *err)
{
    memset(a, 0, sizeof *a);
    int n = 0; int64_t samples = 0;
    for (int i = 0; i < L->n; i++) if (L->f[i].ok && L->f[i].split == split) { n++; samples += L->f[i].len; }
    size_t nn = (size_t)(n ? n : 1);
    a->n = n; a->classes = classes->n; a->nspeakers = spk->n; a->rate = AL_AUDIO_RATE;
    a->off = malloc((nn + 1) * sizeof *a->off); a->x = malloc((size_t)(samples ? samples : 1) * sizeof *a->x);
    a->nreal = malloc(nn * sizeof *a->nreal); a->labels = malloc(nn * sizeof *a->labels);
    a->speaker = malloc(nn * sizeof *a->speaker); a->paths = calloc(nn, sizeof *a->paths);
    a->class_names = copy_names(classes); a->speaker_names = copy_names(spk);
    if (!a->off || !a->x || !a->nreal || !a->labels || !a->speaker || !a->paths || !a->class_names || !a->speaker_names)
        return al_seterr(err, "out of memory for %d clips", n);
    int j = 0; a->off[0] = 0;
    for (int k = 0; k < classes->n; k++)
        for (int i = 0; i < L->n; i++) {
            const afile *f = &L->f[i];
            if (!f->ok || f->split != split || f->label != k) continue;
            memcpy(a->x + a->off[j], all + f->off, (size_t)f->len * sizeof *a->x);
            a->off[j + 1] = a->off[j] + f->len;
            a->nreal[j] = f->nreal; a->labels[j] = k; a->speaker[j] = f->speaker;
            if (!(a->paths[j] = strdup(f->path))) { a->n = j; return al_seterr(err, "out of memory"); }
            j++;
        }
    return AL_OK;
}

/* Per class: usable files in train (and test); a class without a training clip is an error. */
static al_status check_classes(const aload *L, const al__classfolder *cf, int stage, al_error *err)
{
    for (int k = 0; k < cf->classes.n; k++) {
        int tr = 0, any = 0;
        for (int i = 0; i < L->n; i++) if (L->f[i].ok && L->f[i].label == k) { any++; tr += L->f[i].split == 0; }
        if (!any) return al_seterr(err, "%s/%s: the class has no usable audio files", al_path_short(cf->cbase), cf->classes.s[k]);
        if (stage && !tr)
            return al_seterr(err, "%s/%s: every file of the class is in the test split (its speakers were all held out)",
                             al_path_short(cf->cbase), cf->classes.s[k]);
    }
    return AL_OK;
}

/* Probe, budget and decode every file of the class folder into *all (offsets in L). */
static al_status load_all(aload *L, const char *dir, al__classfolder *cf, float **all, al_error *err)
{
    if (al__classfolder_list(dir, "AUDIO", al__skip_entry, &L->sk, cf, err)) return AL_ERR;
    if (probe_files(L, cf, err)) return AL_ERR;
    if (L->n == 0) return al__none_usable(&L->sk, dir, "audio", err);
    int64_t total;
    if (budget(L, dir, &total, err)) return AL_ERR;
    if (!(*all = malloc((size_t)(total ? total : 1) * sizeof **all))) return al_seterr(err, "%s: out of memory", al_path_short(dir));
    const int n = L->n;
    AL_OMP("omp parallel for schedule(dynamic, 4)")
    for (int i = 0; i < n; i++) {
        char why[512], msg[AL_ERRLEN + 600];
        L->f[i].ok = decode(&L->f[i], *all + L->f[i].off, why, sizeof why) == 0;
        if (!L->f[i].ok) { snprintf(msg, sizeof msg, "%s: %s, skipped", L->f[i].path, why); L->f[i].msg = strdup(msg); }
    }
    for (int i = 0; i < n; i++)   /* warnings in file order, whatever the schedule */
        if (!L->f[i].ok) al__skipf(&L->sk, "%s", L->f[i].msg ? L->f[i].msg : "an audio file could not be decoded, skipped");
    return AL_OK;
}

al_status al_audio_folder_load(const char *dir, const al_audio_opts *opts, al_audio_split *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    al_audio_opts def = {0};
    if (!opts) opts = &def;
    double frac = opts->test_frac > 0 ? opts->test_frac : 0.2;
    if (frac >= 1.0 || opts->test_frac < 0) return al_seterr(err, "%s: test fraction %g is not in [0, 1)", al_path_short(dir), opts->test_frac);
    if (!(opts->max_seconds >= 0) || opts->max_seconds > AL_AUDIO_MAX_SECONDS)
        return al_seterr(err, "%s: max seconds %g is not in [0, %d]", al_path_short(dir), opts->max_seconds, AL_AUDIO_MAX_SECONDS);
    aload L = {0};
    L.o = opts;
    L.sk.warn = opts->warn; L.sk.ud = opts->warn_ud;
    al__classfolder cf = {0};
    al__strlist spk = {0};
    float *all = NULL;
    al_status st = AL_ERR;
    if (load_all(&L, dir, &cf, &all, err)) goto out;
    if (check_classes(&L, &cf, 0, err)) goto out;
    al_status sst;
    int by_speaker = assign_speakers(&L, &spk, err, &sst);
    if (sst) goto out;
    if (!cf.split_mode) {
        if (hold_out(&L, cf.classes.n, spk.n, by_speaker, frac, opts->split_seed, err)) goto out;
        out->by_speaker = by_speaker;
    }
    if (check_classes(&L, &cf, 1, err)) goto out;
    int ntest = 0;
    for (int i = 0; i < L.n; i++) ntest += L.f[i].ok && L.f[i].split;
    if (cf.split_mode && !ntest) { al_seterr(err, "%s: the test split has no usable audio files", al_path_short(cf.tedir)); goto out; }
    if (make_split(&L, 0, all, &cf.classes, &spk, &out->train, err)) goto out;
    if (make_split(&L, 1, all, &cf.classes, &spk, &out->test, err)) goto out;
    out->skipped = L.sk.n;
    st = AL_OK;
out:
    for (int i = 0; i < L.n; i++) { free(L.f[i].path); free(L.f[i].msg); }
    free(L.f); free(all);
    al__sl_free(&spk);
    al__classfolder_free(&cf);
    if (st != AL_OK) al_audio_split_free(out);
    return st;
}
