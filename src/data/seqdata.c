/* seqdata.c — a treebank's sentences encoded once as token features and tags (text.h), and subsets
 * of a treebank. */
#include "attnlab/text.h"
#include <stdlib.h>
#include <string.h>

void al_seq_data_free(al_seq_data *d)
{
    free(d->start); free(d->word); free(d->suffix); free(d->tag); free(d->shape); free(d->unseen); free(d->ambiguous);
    memset(d, 0, sizeof *d);
}

al_status al_seq_data_encode(const al_featurizer *fz, const al_conllu *d, al_seq_data *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    size_t n = (size_t)(d->ntok > 0 ? d->ntok : 1);
    out->nsent = d->nsent; out->ntok = d->ntok; out->max_len = d->max_sent_len;
    out->start = malloc((size_t)(d->nsent + 1) * sizeof(int));
    out->word = malloc(n * sizeof(int)); out->suffix = malloc(n * sizeof(int)); out->tag = malloc(n * sizeof(int));
    out->shape = malloc(n * 4 * sizeof(float)); out->unseen = malloc(n); out->ambiguous = malloc(n);
    if (!out->start || !out->word || !out->suffix || !out->tag || !out->shape || !out->unseen || !out->ambiguous) {
        al_seq_data_free(out);
        return al_seterr(err, "features: out of memory for %d tokens", d->ntok);
    }
    memcpy(out->start, d->sent_start, (size_t)(d->nsent + 1) * sizeof(int));
    memcpy(out->tag, d->tag, (size_t)d->ntok * sizeof(int));
    if (al_feat_encode(fz, d, out->word, out->suffix, out->shape, out->unseen, out->ambiguous, err) != AL_OK) {
        al_seq_data_free(out);
        return AL_ERR;
    }
    return AL_OK;
}

al_status al_conllu_subset(const al_conllu *d, const int *idx, int n, al_conllu *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    int64_t ntok = 0; size_t bytes = 0;
    for (int k = 0; k < n; k++) {
        if (idx[k] < 0 || idx[k] >= d->nsent) return al_seterr(err, "subset: sentence %d outside [0, %d)", idx[k], d->nsent);
        for (int i = d->sent_start[idx[k]]; i < d->sent_start[idx[k] + 1]; i++) bytes += strlen(d->form[i]) + 1;
        ntok += d->sent_start[idx[k] + 1] - d->sent_start[idx[k]];
    }
    out->sent_start = malloc((size_t)(n + 1) * sizeof(int));
    out->sent_line = malloc((size_t)(n > 0 ? n : 1) * sizeof(long));
    out->form = malloc((size_t)(ntok > 0 ? ntok : 1) * sizeof(char *));
    out->tag = malloc((size_t)(ntok > 0 ? ntok : 1) * sizeof(int));
    out->text = malloc(bytes > 0 ? bytes : 1);
    if (!out->sent_start || !out->sent_line || !out->form || !out->tag || !out->text) {
        al_conllu_free(out);
        return al_seterr(err, "subset: out of memory");
    }
    int t = 0; size_t off = 0;
    out->sent_start[0] = 0;
    for (int k = 0; k < n; k++) {
        int s = idx[k], L = d->sent_start[s + 1] - d->sent_start[s];
        for (int i = d->sent_start[s]; i < d->sent_start[s + 1]; i++, t++) {
            size_t l = strlen(d->form[i]) + 1;
            memcpy(out->text + off, d->form[i], l);
            out->form[t] = out->text + off; off += l;
            out->tag[t] = d->tag[i];
        }
        out->sent_start[k + 1] = t;
        out->sent_line[k] = d->sent_line ? d->sent_line[s] : 0;
        if (L > out->max_sent_len) out->max_sent_len = L;
    }
    out->nsent = n; out->ntok = t;
    return AL_OK;
}
