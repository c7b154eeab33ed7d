/* genseq.c — generated sequence tasks with unlimited data (text.h): associative recall and selective
 * copy, as treebanks whose tags are the labels (-1 on unlabelled tokens). */
#include "attnlab/text.h"
#include "attnlab/io.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int al_gen_seq_parse(const char *s, al_gen_seq_cfg *cfg, al_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    const char *rest;
    if (!strncmp(s, "recall:", 7)) { cfg->kind = 0; rest = s + 7; }
    else if (!strncmp(s, "copy:", 5)) { cfg->kind = 1; rest = s + 5; }
    else return 1;
    cfg->pairs = 4; cfg->queries = 4; cfg->keys = 32; cfg->values = 10;
    char *end;
    long len = strtol(rest, &end, 10);
    const int min = (cfg->kind == 0 ? 2 * cfg->pairs : cfg->pairs) + cfg->queries;
    if (end == rest || *end || len < min || len > 100000) {
        al_seterr(err, "--data %s: the length must be a number in %d..100000", s, min);
        return -1;
    }
    cfg->len = (int)len;
    return 0;
}

/* Token strings: "k0".."k31", "v0".."v9", "x", "?"; written as offsets into one text buffer. */
al_status al_gen_seq(const al_gen_seq_cfg *g, int n, uint64_t seed, al_conllu *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    const int L = g->len, P = g->pairs, Q = g->queries;
    if (n < 1 || L < 1 || (int64_t)n * L > 200000000 || P < 1 || P > 64 || Q < 1 || Q > P || g->keys < P || g->values < 2 || g->keys > 1000 ||
        g->values > 1000 || (g->kind == 0 ? 2 * P : P) + Q > L)
        return al_seterr(err, "generated sequences: bad sizes (n %d, len %d, pairs %d, queries %d)", n, L, P, Q);
    /* before generating: the tokens' forms and tags, each sentence's start and line */
    if (al_mem_check(al_size_add(al_size_mul((uint64_t)n * (uint64_t)L, sizeof(char *) + sizeof(int)),
                                 al_size_mul((uint64_t)n + 1, sizeof(int) + sizeof(long))),
                     err, "generated sequences: %d sentences of %d tokens", n, L))
        return AL_ERR;
    /* the vocabulary text: keys, values, filler, marker */
    const int nk = g->keys, nv = g->values, nwords = nk + nv + 2;
    char *text = malloc((size_t)nwords * 8);
    int *woff = malloc((size_t)nwords * sizeof(int));
    const int64_t ntok = (int64_t)n * L;
    out->sent_start = malloc((size_t)(n + 1) * sizeof(int));
    out->sent_line = malloc((size_t)n * sizeof(long));
    out->form = malloc((size_t)ntok * sizeof(char *));
    out->tag = malloc((size_t)ntok * sizeof(int));
    int *slot = malloc((size_t)L * sizeof(int)), *pick = malloc((size_t)(nk > nv ? nk : nv) * sizeof(int));
    if (!text || !woff || !out->sent_start || !out->sent_line || !out->form || !out->tag || !slot || !pick) {
        free(text); free(woff); free(slot); free(pick); al_conllu_free(out);
        return al_seterr(err, "generated sequences: out of memory for %d x %d tokens", n, L);
    }
    int o = 0;
    for (int w = 0; w < nwords; w++) {
        woff[w] = o;
        o += 1 + (w < nk ? sprintf(text + o, "k%d", w) : w < nk + nv ? sprintf(text + o, "v%d", w - nk)
                                                       : sprintf(text + o, w == nk + nv ? "x" : "?"));
    }
    out->text = text;
    const int FILL = nk + nv, MARK = nk + nv + 1;
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    for (int s = 0; s < n; s++) {
        const int64_t t0 = (int64_t)s * L;
        int *word = slot;                                    /* reuse: the word of each position */
        for (int i = 0; i < L; i++) { word[i] = FILL; out->tag[t0 + i] = -1; }
        const int ctx = L - Q;
        if (g->kind == 0) {
            /* P distinct keys, each with a random value, at random non-overlapping 2-token places in the context:
             * choose P starts among ctx − P free units (a stars-and-bars placement) */
            for (int k = 0; k < nk; k++) pick[k] = k;
            for (int k = 0; k < P; k++) { int j = k + (int)al_rng_below(&r, (uint32_t)(nk - k)); int t = pick[k]; pick[k] = pick[j]; pick[j] = t; }
            int key[64], val[64], gap[65];
            const int free_units = ctx - 2 * P;
            for (int k = 0; k <= P; k++) gap[k] = 0;
            for (int u = 0; u < free_units; u++) gap[al_rng_below(&r, (uint32_t)(P + 1))]++;
            int pos = gap[0];
            for (int k = 0; k < P; k++) {
                key[k] = pick[k]; val[k] = (int)al_rng_below(&r, (uint32_t)nv);
                word[pos] = key[k]; word[pos + 1] = nk + val[k];
                pos += 2 + gap[k + 1];
            }
            int order[64];                                   /* Q distinct pairs asked, in random order */
            for (int k = 0; k < P; k++) order[k] = k;
            for (int k = 0; k < Q; k++) { int j = k + (int)al_rng_below(&r, (uint32_t)(P - k)); int t = order[k]; order[k] = order[j]; order[j] = t; }
            for (int q = 0; q < Q; q++) { word[ctx + q] = key[order[q]]; out->tag[t0 + ctx + q] = val[order[q]]; }
        } else {
            int val[64], gap[65];
            const int free_units = ctx - P;
            for (int k = 0; k <= P; k++) gap[k] = 0;
            for (int u = 0; u < free_units; u++) gap[al_rng_below(&r, (uint32_t)(P + 1))]++;
            int pos = gap[0];
            for (int k = 0; k < P; k++) {
                val[k] = (int)al_rng_below(&r, (uint32_t)nv);
                word[pos] = nk + val[k];
                pos += 1 + gap[k + 1];
            }
            for (int q = 0; q < Q; q++) { word[ctx + q] = MARK; out->tag[t0 + ctx + q] = val[q]; }
        }
        for (int i = 0; i < L; i++) out->form[t0 + i] = text + woff[word[i]];
        out->sent_start[s] = (int)t0;
        out->sent_line[s] = s + 1;
    }
    out->sent_start[n] = (int)ntok;
    out->nsent = n; out->ntok = (int)ntok; out->max_sent_len = L;
    free(woff); free(slot); free(pick);
    return AL_OK;
}
