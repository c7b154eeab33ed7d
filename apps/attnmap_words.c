/* attnmap_words.c — attnlab attnmap on a sequence checkpoint (sa, trunc): the attention of every head
 * over the words of one sentence (--sentence TEXT, or sentence --index of a --conllu FILE), words on
 * both axes, one row of panels per block (or --block L), as a PNG. cmd_attnmap.c hands over here when
 * the checkpoint's metadata says "attnlab-sequence". load → sentence → compute → render. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attnlab/attnmap.h"
#include "attnlab/io.h"
#include "attnlab/seq.h"

typedef struct words_run {
    al_seq_model m; al_featurizer fz; int loaded;
    al_conllu d;                  /* the sentence (the whole file for --conllu) */
    char *text;                   /* --sentence's copy, split in place */
    al_seq_data sd;
    float *maps; uint8_t *allowed; int *pred;
    uint8_t *rgb;
} words_run;

/* The checkpoint, which must hold an attention model with --block blocks. Returns an exit status. */
static int load_words_model(const attnmap_words_opts *o, words_run *R)
{
    al_error err = {{0}};
    if (al_seq_load(o->load, &R->m, &R->fz, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    R->loaded = 1;
    const al_seq_config *g = &R->m.cfg;
    if (!R->m.kind->attention) {
        char names[64] = "";
        size_t n = 0;
        for (int i = 0; i < al_seq_arch_count(); i++)
            if (al_seq_arch_at(i)->attention) n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? " or " : "", al_seq_arch_at(i)->name);
        fprintf(stderr, "attnlab attnmap: %s holds a '%s' model, which has no attention to draw (use an %s checkpoint)\n",
                o->load, g->name, names);
        return 1;
    }
    if (o->block > g->depth) {
        fprintf(stderr, "attnlab attnmap: --block %d: %s has %d blocks (1..%d)\n", o->block, o->load, g->depth, g->depth);
        return 2;
    }
    return 0;
}

/* --sentence: whitespace-separated words as a one-sentence treebank (tags -1). Returns an exit status. */
static int sentence_from_text(const char *s, int max_len, words_run *R)
{
    size_t len = strlen(s);
    int n = 0;
    if (!(R->text = malloc(len + 1))) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    memcpy(R->text, s, len + 1);
    for (char *p = R->text, *save = NULL, *t = strtok_r(p, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) n++;
    if (n == 0) { fprintf(stderr, "attnlab attnmap: --sentence: no words\n"); return 2; }
    if (n > max_len || n > AL_ATTNMAP_MAXWORDS) {
        fprintf(stderr, "attnlab attnmap: --sentence: %d words; at most %d are drawn\n", n,
                max_len < AL_ATTNMAP_MAXWORDS ? max_len : AL_ATTNMAP_MAXWORDS);
        return 2;
    }
    memcpy(R->text, s, len + 1);   /* strtok_r cut the first copy; cut this one for keeps */
    al_conllu *d = &R->d;
    d->sent_start = malloc(2 * sizeof(int)); d->sent_line = malloc(sizeof(long));
    d->form = malloc((size_t)n * sizeof(char *)); d->tag = malloc((size_t)n * sizeof(int));
    if (!d->sent_start || !d->sent_line || !d->form || !d->tag) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    int k = 0;
    for (char *save = NULL, *t = strtok_r(R->text, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        d->form[k] = t; d->tag[k++] = -1;
    }
    d->nsent = 1; d->ntok = n; d->max_sent_len = n;
    d->sent_start[0] = 0; d->sent_start[1] = n; d->sent_line[0] = 1;
    d->text = R->text; R->text = NULL;   /* the forms point into it: the treebank owns it now */
    return 0;
}

/* --conllu FILE --index I: sentence I of the file (tagged or not) as the only sentence. */
static int sentence_from_conllu(const attnmap_words_opts *o, words_run *R)
{
    al_error err = {{0}};
    al_conllu_opts co = {R->m.cfg.max_len, 1};
    al_conllu all;
    if (al_conllu_read(o->conllu, &co, &all, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    int rc = 0;
    if (o->index >= all.nsent) {
        fprintf(stderr, "attnlab attnmap: --index %d is out of range: %s has %d sentences (0..%d)\n", o->index, o->conllu,
                all.nsent, all.nsent - 1);
        rc = 2;
    } else if (all.sent_start[o->index + 1] - all.sent_start[o->index] > AL_ATTNMAP_MAXWORDS) {
        fprintf(stderr, "attnlab attnmap: --index %d: sentence of %d words (line %ld of %s); at most %d are drawn\n", o->index,
                all.sent_start[o->index + 1] - all.sent_start[o->index], all.sent_line[o->index], o->conllu, AL_ATTNMAP_MAXWORDS);
        rc = 2;
    } else if (al_conllu_subset(&all, &o->index, 1, &R->d, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg);
        rc = 1;
    }
    al_conllu_free(&all);
    return rc;
}

/* Every block's maps of the sentence and the predicted tags. Returns an exit status. */
static int compute_words(const attnmap_words_opts *o, words_run *R)
{
    al_error err = {{0}};
    const al_seq_config *g = &R->m.cfg;
    const int n = R->d.ntok;
    if (al_seq_data_encode(&R->fz, &R->d, &R->sd, &err) != AL_OK) { fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1; }
    R->maps = malloc((size_t)g->depth * g->heads * n * n * sizeof *R->maps);
    R->allowed = malloc((size_t)n * n); R->pred = malloc((size_t)n * sizeof *R->pred);
    if (!R->maps || !R->allowed || !R->pred) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    al_seq_batch b = {1, n, &n, R->sd.word, R->sd.suffix, R->sd.shape, NULL, 0};
    if (al_seq_attnmap(&R->m, &b, R->maps, R->allowed, R->pred, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s: %s\n", o->load, err.msg); return 1;
    }
    if (!o->quiet) {
        fprintf(stderr, "attnlab attnmap: %s: %s, %d blocks, %d heads; tags:", o->load, g->name, g->depth, g->heads);
        for (int i = 0; i < n; i++) fprintf(stderr, " %s/%s", R->d.form[i], al_upos_name(R->pred[i]));
        fprintf(stderr, "\n");
    }
    return 0;
}

static int render_words(const attnmap_words_opts *o, words_run *R)
{
    const al_seq_config *g = &R->m.cfg;
    const char *tags[AL_ATTNMAP_MAXWORDS];
    for (int i = 0; i < R->d.ntok; i++) tags[i] = al_upos_name(R->pred[i]);
    int blocks[AL_MODEL_MAXDEPTH], nb = 0;
    if (o->block) blocks[nb++] = o->block - 1;
    else for (int L = 0; L < g->depth; L++) blocks[nb++] = L;
    char title[160];
    if (R->m.kind->windowed) snprintf(title, sizeof title, "%s: each word attends within %d words of itself (%d tokens); predicted tags",
                                      g->name, g->window, 2 * g->window + 1);
    else snprintf(title, sizeof title, "%s: each word attends to the whole sentence; predicted tags", g->name);
    al_attnmap_words_fig f = {R->d.ntok, (const char *const *)R->d.form, tags, g->heads, g->depth, nb, blocks, R->maps,
                              R->allowed, title, o->cell};
    int W, H;
    al_error err = {{0}};
    if (al_attnmap_words_render(&f, &R->rgb, &W, &H, &err) != AL_OK || al_png_write(o->out, R->rgb, W, H, 3, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1;
    }
    printf("attnmap %s: %dx%d pixels, model %s, %d words, %d block%s, %d heads\n", o->out, W, H, g->name, R->d.ntok, nb,
           nb == 1 ? "" : "s", g->heads);
    return 0;
}

int attnmap_words_run(const attnmap_words_opts *o)
{
    static words_run R;
    memset(&R, 0, sizeof R);
    int rc = load_words_model(o, &R);
    if (!rc) rc = o->sentence ? sentence_from_text(o->sentence, R.m.cfg.max_len, &R) : sentence_from_conllu(o, &R);
    if (!rc) rc = compute_words(o, &R);
    if (!rc) rc = render_words(o, &R);
    if (R.loaded) { al_seq_free(&R.m); al_feat_free(&R.fz); }
    al_seq_data_free(&R.sd);
    al_conllu_free(&R.d);
    free(R.text); free(R.maps); free(R.allowed); free(R.pred); free(R.rgb);
    return rc;
}
