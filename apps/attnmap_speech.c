/* attnmap_speech.c — attnlab attnmap on a speech checkpoint: one test utterance of a speech-digits
 * corpus (--data, --index) as its log-mel spectrogram, its reference and predicted labels per frame, and
 * one block's attention over frames (averaged over heads), as a PNG. cmd_attnmap.c hands over here
 * when the checkpoint's metadata format is attnlab-speech. load → the utterance → compute → render. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attnlab/train.h"
#include "attnlab/attnmap.h"
#include "attnlab/fbank.h"
#include "attnlab/io.h"
#include "attnlab/speech.h"

typedef struct sp_run {
    al_seq_model m; int loaded;
    al_speech_opts fe;
    int framewise;
    double max_seconds;
    char **names; int nnames;
    al_frame_set fs; al_audio_split as; int have_fs, have_as;
    al_speech_data all, one;
    float *logmel, *maps, *attn;
    uint8_t *allowed, *truth, *pred;
    int *p;
    uint8_t *rgb;
} sp_run;

static int load_model(const attnmap_speech_opts *o, sp_run *R)
{
    al_error err = {{0}};
    char *meta = NULL;
    if (al_speech_load(o->load, &R->m, &R->fe, &meta, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    R->loaded = 1;
    char *fw = al_meta_get(meta, "framewise"), *names = al_meta_get(meta, "class_names"), *ms = al_meta_get(meta, "max_seconds");
    int rc = 0;
    R->framewise = fw && !strcmp(fw, "1");
    R->max_seconds = ms ? atof(ms) : (R->framewise ? 0 : 1);
    if (!names || !(R->max_seconds >= 0 && R->max_seconds <= AL_AUDIO_MAX_SECONDS)) {
        fprintf(stderr, "attnlab attnmap: %s: no class names or a bad max_seconds in the metadata\n", o->load); rc = 1;
    } else {
        R->names = calloc((size_t)R->m.cfg.tags, sizeof(char *));
        char *s = names;
        for (int k = 0; R->names && k < R->m.cfg.tags && s; k++) {
            char *nl = strchr(s, '\n');
            if (nl) *nl = 0;
            R->names[k] = strdup(s); R->nnames = k + 1;
            s = nl ? nl + 1 : NULL;
        }
        if (!R->names || R->nnames != R->m.cfg.tags) {
            fprintf(stderr, "attnlab attnmap: %s: %d class names for %d classes\n", o->load, R->nnames, R->m.cfg.tags); rc = 1;
        }
    }
    free(fw); free(names); free(ms); free(meta);
    return rc;
}

/* The test split as the model saw its data; the utterance --index of it alone. */
static int load_data(const attnmap_speech_opts *o, sp_run *R)
{
    al_error err = {{0}};
    al_status st;
    const al_audio *a;
    if (R->framewise) {
        st = al_frame_set_load(o->data, "test", &R->fs, &err);
        R->have_fs = st == AL_OK;
        if (st == AL_OK && R->max_seconds > 0) st = al_frame_set_fit(&R->fs, R->max_seconds, &err);
        if (st == AL_OK) st = al_speech_from_frames(&R->fs, &R->fe, &R->all, &err);
        a = &R->fs.a;
    } else {
        char sub[4096];
        al_audio_opts ao = {0};
        ao.max_seconds = R->max_seconds > 0 ? R->max_seconds : 1.0;
        st = al_audio_folder_load(al_speech_clip_dir(o->data, sub, sizeof sub), &ao, &R->as, &err);
        R->have_as = st == AL_OK;
        if (st == AL_OK) st = al_speech_from_audio(&R->as.test, &R->fe, AL_SPEECH_BY_CLASS, &R->all, &err);
        a = &R->as.test;
    }
    if (st != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    if (o->index < 0 || o->index >= R->all.n) {
        fprintf(stderr, "attnlab attnmap: --index %d: the test split of %s has utterances 0..%d\n", o->index, o->data, R->all.n - 1);
        return 2;
    }
    if (R->all.dim != R->m.cfg.feat_dim || R->all.classes != R->m.cfg.tags) {
        fprintf(stderr, "attnlab attnmap: %s reads %d features into %d classes; %s gives %d and %d (another target?)\n", o->load,
                R->m.cfg.feat_dim, R->m.cfg.tags, o->data, R->all.dim, R->all.classes);
        return 2;
    }
    if (al_speech_subset(&R->all, &o->index, 1, &R->one, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    /* the spectrogram drawn: log-mel of the clip, whatever features the model reads */
    al_fbank fb; al_fbank_cfg fc = al_fbank_defaults();
    const int T = R->one.max_frames;
    if (!(R->logmel = malloc((size_t)T * AL_FBANK_MELS * sizeof(float)))) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    if (al_fbank_init(&fb, &fc, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    st = al_fbank_logmel(&fb, al_audio_clip(a, o->index), al_audio_len(a, o->index), R->logmel, &err);
    al_fbank_free(&fb);
    if (st != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    return 0;
}

static int compute(const attnmap_speech_opts *o, sp_run *R)
{
    al_error err = {{0}};
    const al_seq_config *g = &R->m.cfg;
    const int T = R->one.max_frames, n = al_seq_out_len(g, T);
    R->truth = malloc((size_t)T); R->pred = malloc((size_t)T); R->p = malloc((size_t)T * sizeof(int));
    if (!R->truth || !R->pred || !R->p) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    al_speech_scores sc;
    if (al_speech_evaluate(&R->m, &R->one, 1, &sc, R->p, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    for (int t = 0; t < T; t++) {
        R->truth[t] = R->framewise ? R->one.flab[t] : (uint8_t)R->one.label[0];
        R->pred[t] = (uint8_t)(R->framewise ? R->p[t] : R->p[0]);
    }
    if (!R->m.kind->attention) return 0;
    if (o->block > g->depth) { fprintf(stderr, "attnlab attnmap: --layer %d: the model has %d blocks\n", o->block, g->depth); return 2; }
    const int blk = o->block > 0 ? o->block - 1 : g->depth - 1, H = g->heads;
    R->maps = malloc((size_t)g->depth * H * n * n * sizeof(float));
    R->attn = calloc((size_t)n * n, sizeof(float));
    R->allowed = malloc((size_t)n * n);
    if (!R->maps || !R->attn || !R->allowed) { fprintf(stderr, "attnlab attnmap: out of memory (%d frames)\n", n); return 1; }
    al_seq_batch b; memset(&b, 0, sizeof b);
    b.nseg = 1; b.ntok = T; b.len = &T; b.feat = R->one.x;
    if (al_seq_attnmap(&R->m, &b, R->maps, R->allowed, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    for (int h = 0; h < H; h++)
        for (int64_t k = 0; k < (int64_t)n * n; k++) R->attn[k] += R->maps[((int64_t)blk * H + h) * n * n + k] / H;
    return 0;
}

static int render(const attnmap_speech_opts *o, sp_run *R)
{
    const al_seq_config *g = &R->m.cfg;
    const int T = R->one.max_frames, n = al_seq_out_len(g, T);
    char title[256], note[256], ref[64], hyp[64];
    int ok = 0;
    for (int t = 0; t < T; t++) ok += R->truth[t] == R->pred[t];
    if (R->framewise) {
        char *full = malloc((size_t)T + 1);
        if (!full) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
        al_speech_decode(R->truth, T, full); snprintf(ref, sizeof ref, "%.20s%s", full, strlen(full) > 20 ? "..." : "");
        al_speech_decode(R->pred, T, full); snprintf(hyp, sizeof hyp, "%.20s%s", full, strlen(full) > 20 ? "..." : "");
        free(full);
        char who[64];
        if (!strcmp(g->name, "trunc")) snprintf(who, sizeof who, "trunc (window %d frames each side)", g->window);
        else snprintf(who, sizeof who, "%s", g->name);
        snprintf(title, sizeof title, "%s: \"%s\" heard as \"%s\"", who, ref, hyp);
        snprintf(note, sizeof note, "test utterance %d, %d frames (%.2f s); frame accuracy %.3f; attention of block %d, mean of %d heads",
                 o->index, T, 0.01 * T + 0.015, (double)ok / T, o->block > 0 ? o->block : g->depth, g->heads);
    } else {
        snprintf(title, sizeof title, "%s: class %s, predicted %s", g->name, R->names[R->truth[0]], R->names[R->pred[0]]);
        snprintf(note, sizeof note, "test clip %d, %d frames; attention of block %d, mean of %d heads", o->index, T,
                 o->block > 0 ? o->block : g->depth, g->heads);
    }
    al_attnmap_speech_fig f = {T, R->logmel, R->truth, R->pred, (const char *const *)R->names, g->tags, n,
                               g->subsample > 1 ? g->subsample : 1, R->attn, R->attn ? R->allowed : NULL, title,
                               R->m.kind->attention ? note : NULL, o->cell > 0 ? o->cell : 2};
    int W, H;
    al_error err = {{0}};
    if (al_attnmap_speech_render(&f, &R->rgb, &W, &H, &err) != AL_OK || al_png_write(o->out, R->rgb, W, H, 3, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1;
    }
    printf("attnmap %s: %dx%d pixels, model %s, test utterance %d, %d frames, frame agreement %.3f\n", o->out, W, H, g->name,
           o->index, T, (double)ok / T);
    return 0;
}

int attnmap_speech_run(const attnmap_speech_opts *o)
{
    static sp_run R;
    memset(&R, 0, sizeof R);
    int rc = load_model(o, &R);
    if (!rc) rc = load_data(o, &R);
    if (!rc) rc = compute(o, &R);
    if (!rc) rc = render(o, &R);
    if (R.loaded) al_seq_free(&R.m);
    for (int k = 0; k < R.nnames; k++) free(R.names[k]);
    free(R.names);
    if (R.have_fs) al_frame_set_free(&R.fs);
    if (R.have_as) al_audio_split_free(&R.as);
    al_speech_data_free(&R.all); al_speech_data_free(&R.one);
    free(R.logmel); free(R.maps); free(R.attn); free(R.allowed); free(R.truth); free(R.pred); free(R.p); free(R.rgb);
    return rc;
}
