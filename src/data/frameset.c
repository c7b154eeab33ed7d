/* frameset.c — the frame-labelled utterances of a speech-digits corpus: its manifest.tsv read line by
 * line, each sequences/ file of a split loaded through al_audio_file_load, its frame labels checked
 * against the clip's frame count. See audio.h. */
#include "attnlab/audio.h"
#include "attnlab/io.h"
#include "attnlab/fbank.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "data/folder_impl.h"

#define NCOL 12   /* path split speaker voice pitch range rate volume snr digits spans labels */

void al_frame_set_free(al_frame_set *f)
{
    if (!f) return;
    for (int i = 0; f->digits && i < f->a.n; i++) free(f->digits[i]);
    free(f->digits); free(f->foff); free(f->flab);
    al_audio_free(&f->a);
    memset(f, 0, sizeof *f);
}

/* Splits line (modified in place) at tabs into at most NCOL columns; returns their count. */
static int columns(char *line, char **col)
{
    int k = 0;
    for (char *p = line; k < NCOL; ) {
        col[k++] = p;
        p = strchr(p, '\t');
        if (!p) break;
        *p++ = 0;
    }
    return k;
}

/* Grows the per-clip arrays of f to hold clip i; -1 when out of memory. */
static int grow_rows(al_frame_set *f, int i, int *cap)
{
    if (i < *cap) return 0;
    int c = *cap ? 2 * *cap : 64;
    al_audio *a = &f->a;
    int64_t *off = realloc(a->off, ((size_t)c + 1) * sizeof *off), *foff = off ? realloc(f->foff, ((size_t)c + 1) * sizeof *foff) : NULL;
    if (off) a->off = off;
    if (foff) f->foff = foff;
    if (!off || !foff) return -1;
    int64_t *nreal = realloc(a->nreal, (size_t)c * sizeof *nreal);
    if (nreal) a->nreal = nreal;
    int *lab = nreal ? realloc(a->labels, (size_t)c * sizeof *lab) : NULL;
    if (lab) a->labels = lab;
    int *spk = lab ? realloc(a->speaker, (size_t)c * sizeof *spk) : NULL;
    if (spk) a->speaker = spk;
    char **paths = spk ? realloc(a->paths, (size_t)c * sizeof *paths) : NULL;
    if (paths) a->paths = paths;
    char **dig = paths ? realloc(f->digits, (size_t)c * sizeof *dig) : NULL;
    if (dig) f->digits = dig;
    if (!dig) return -1;
    *cap = c;
    return 0;
}

/* Appends clip x (n samples, nreal real) with labels lab (T characters) to f, the memory budget checked
 * for the samples so far. */
static al_status append(al_frame_set *f, const char *where, const char *path, const float *x, int64_t n, int64_t nreal,
                        const char *lab, int64_t T, const char *digits, al_error *err)
{
    al_audio *a = &f->a;
    const int i = a->n;
    const int64_t s0 = a->off[i], f0 = f->foff[i];
    if (al_mem_check(al_size_mul((uint64_t)(s0 + n), sizeof(float)), err, "%s: the clips up to %s", where, path)) return AL_ERR;
    float *nx = realloc(a->x, (size_t)(s0 + n) * sizeof *nx);
    if (!nx) return al_seterr(err, "%s: out of memory", where);
    a->x = nx;
    uint8_t *nl = realloc(f->flab, (size_t)(f0 + T + 1));
    if (!nl) return al_seterr(err, "%s: out of memory", where);
    f->flab = nl;
    memcpy(a->x + s0, x, (size_t)n * sizeof *x);
    for (int64_t t = 0; t < T; t++) f->flab[f0 + t] = (uint8_t)(lab[t] == '-' ? AL_FRAME_SILENCE : lab[t] - '0');
    a->off[i + 1] = s0 + n; f->foff[i + 1] = f0 + T;
    a->nreal[i] = nreal; a->labels[i] = 0; a->speaker[i] = -1;
    a->paths[i] = strdup(path); f->digits[i] = strdup(digits);
    a->n++;
    if (!a->paths[i] || !f->digits[i]) return al_seterr(err, "%s: out of memory", where);
    return AL_OK;
}

/* One manifest line of the split: its file loaded, its labels checked, appended. */
static al_status load_line(al_frame_set *f, const char *dir, const char *man, int ln, char **col, al_error *err)
{
    char where[AL_PATH_SHORT + 16];
    snprintf(where, sizeof where, "%s:%d", al_path_short(man), ln);
    const char *lab = col[11];
    for (const char *p = lab; *p; p++)
        if (*p != '-' && (*p < '0' || *p > '9')) return al_seterr(err, "%s: frame label '%c' (expected 0-9 or -)", where, *p);
    size_t pl = strlen(dir) + strlen(col[0]) + 2;
    char *path = malloc(pl);
    if (!path) return al_seterr(err, "%s: out of memory", where);
    snprintf(path, pl, "%s/%s", dir, col[0]);
    float *x = NULL; int64_t n, nreal;
    al_error e = {{0}};
    al_status st = AL_OK;
    if (al_audio_file_load(path, 0, &x, &n, &nreal, &e)) st = al_seterr(err, "%s: %s", where, e.msg);
    else {
        const al_fbank_cfg fc = al_fbank_defaults();
        const int64_t T = al_fbank_frames(&fc, n);   /* the labels are per front-end frame */
        if ((int64_t)strlen(lab) != T)
            st = al_seterr(err, "%s: %zu frame labels for %s, whose %lld samples make %lld frames", where, strlen(lab), col[0],
                           (long long)n, (long long)T);
        else st = append(f, where, path, x, n, nreal, lab, T, col[9], err);
    }
    free(x); free(path);
    return st;
}

al_status al_frame_set_load(const char *dir, const char *split, al_frame_set *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    size_t ml = strlen(dir) + 16;
    char *man = malloc(ml), *text = NULL;
    if (!man) return al_seterr(err, "out of memory");
    snprintf(man, ml, "%s/manifest.tsv", dir);
    struct stat sb;
    size_t len;
    al_status st = AL_ERR;
    int cap = 0, ln = 1;
    const char **spk = NULL;
    al__strlist names = {0};
    if (stat(man, &sb) != 0) { al_seterr(err, "%s: no manifest.tsv (a corpus of attnlab data speech-digits)", al_path_short(dir)); goto out; }
    if (al_mem_check((uint64_t)sb.st_size, err, "%s", man) || al_read_file(man, &text, &len, err)) goto out;
    if (strncmp(text, "path\tsplit\tspeaker\t", 19)) { al_seterr(err, "%s:1: not a speech-digits manifest (its header)", al_path_short(man)); goto out; }
    if (grow_rows(out, 0, &cap)) { al_seterr(err, "out of memory"); goto out; }
    out->a.off[0] = 0; out->foff[0] = 0; out->a.rate = AL_AUDIO_RATE;
    for (char *line = strchr(text, '\n'); line && line[1]; ) {
        line++; ln++;
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        char *col[NCOL];
        if (columns(line, col) != NCOL) { al_seterr(err, "%s:%d: fewer than %d tab-separated columns", al_path_short(man), ln, NCOL); goto out; }
        if (!strncmp(col[0], "sequences/", 10) && !strcmp(col[1], split)) {
            if (grow_rows(out, out->a.n, &cap)) { al_seterr(err, "out of memory"); goto out; }
            if (load_line(out, dir, man, ln, col, err)) goto out;
        }
        line = end;
    }
    if (out->a.n == 0) { al_seterr(err, "%s: no sequences/ line of split '%s'", al_path_short(man), split); goto out; }
    /* speakers from the file names (audio.h's rule), indexed in sorted order */
    if (!(spk = calloc((size_t)out->a.n, sizeof *spk))) { al_seterr(err, "out of memory"); goto out; }
    char (*buf)[64] = calloc((size_t)out->a.n, sizeof *buf);
    if (!buf) { al_seterr(err, "out of memory"); goto out; }
    for (int i = 0; i < out->a.n; i++) {
        const char *b = strrchr(out->a.paths[i], '/');
        if (al__speaker_of(b ? b + 1 : out->a.paths[i], buf[i], sizeof buf[i])) spk[i] = buf[i];
    }
    int bad = al__name_index(spk, out->a.n, &names, out->a.speaker);
    free(buf);
    if (bad) { al_seterr(err, "out of memory"); goto out; }
    out->a.nspeakers = names.n; out->a.speaker_names = names.s; names.s = NULL; names.n = 0;
    st = AL_OK;
out:
    free(man); free(text); free(spk);
    al__sl_free(&names);
    if (st != AL_OK) al_frame_set_free(out);
    return st;
}
