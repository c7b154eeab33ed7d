/* cmd_tag.c — attnlab tag: POS-tag tokenised text with a sequence-model checkpoint and print CoNLL-U.
 * Input (files or stdin): one sentence per line, tokens separated by whitespace, or CoNLL-U (plain or
 * gzip) when the first non-blank line is a comment or a word line ("1<TAB>…"). Output: one CoNLL-U
 * sentence per input sentence, ID/FORM/UPOS filled, every other field '_'; al_conllu_read reads it.
 * Every input goes through al_input_open (a file, stdin or an inherited pipe, read within the memory
 * budget) and the memory its tokens need is checked (tag_fits) before the arrays are allocated. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <unistd.h>
#include "cli.h"
#include "attnlab/train.h"
#include "attnlab/io.h"
#include "attnlab/seq.h"

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab tag --load MODEL.safetensors [--threads N] [--max-memory SIZE] [FILE ...]\n\n"
        "Tags tokenised sentences with a model saved by `attnlab train --task sequence --save`. Each FILE (or\n"
        "stdin when none is given, or for '-') holds one sentence per line with whitespace-separated tokens,\n"
        "or CoNLL-U (.conllu / .conllu.gz: comments and multi-word token lines are dropped). Prints CoNLL-U on\n"
        "stdout: ID, FORM and the predicted UPOS, '_' elsewhere; a blank line after each sentence.\n"
        "Each input is read whole within the memory budget (a pipe stops once it passes it) and is refused\n"
        "before tagging when its tokens need more; a named FIFO or a device is refused.\n\n"
        "  --load FILE          sequence checkpoint (attnlab train --task sequence --save)\n"
        "  --threads N          OpenMP threads\n"
        CLI_MAX_MEMORY_HELP);
}

/* What tagging ntok tokens in nsent sentences holds at once besides the model: the text (bytes), per
 * token its form and tag (al_conllu), its features (al_seq_data: word, suffix and tag ids, 4 shape
 * values, unseen and ambiguous flags) and the predicted tag, per sentence its starts and line. */
static uint64_t tag_need(uint64_t bytes, int64_t ntok, int64_t nsent)
{
    const uint64_t per_tok = sizeof(char *) + sizeof(int) + 3 * sizeof(int) + 4 * sizeof(float) + 2 + sizeof(int);
    const uint64_t per_sent = 2 * sizeof(int) + sizeof(long);
    return al_size_add(al_size_add(bytes, 1), al_size_add(al_size_mul((uint64_t)ntok, per_tok), al_size_mul((uint64_t)nsent + 1, per_sent)));
}

/* ntok tokens in nsent sentences fit the model's int counts and the memory budget. */
static int tag_fits(const char *name, uint64_t bytes, int64_t ntok, int64_t nsent, al_error *err)
{
    if (ntok > INT_MAX - 1 || nsent > INT_MAX - 1) { al_seterr(err, "%s: %lld tokens in %lld sentences, more than %d", name, (long long)ntok, (long long)nsent, INT_MAX - 1); return -1; }
    return al_mem_check(tag_need(bytes, ntok, nsent), err, "%s: %lld tokens in %lld sentences", name, (long long)ntok, (long long)nsent) ? -1 : 0;
}

/* CoNLL-U (or gzip, which only CoNLL-U input can be): first non-blank line starts with '#' or digits + tab. */
static int looks_conllu(const char *s, size_t n)
{
    if (n >= 2 && (unsigned char)s[0] == 0x1f && (unsigned char)s[1] == 0x8b) return 1;
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    if (i < n && s[i] == '#') return 1;
    size_t j = i;
    while (j < n && (isdigit((unsigned char)s[j]) || s[j] == '-' || s[j] == '.')) j++;
    return j > i && j < n && s[j] == '\t';
}

/* Plain text: one sentence per non-blank line. Builds d (tags −1) in s, which d then owns (also on error). */
static int parse_plain(const char *name, char *s, size_t n, int max_len, al_conllu *d, al_error *err)
{
    memset(d, 0, sizeof *d);
    int64_t ntok = 0, nsent = 0;
    for (size_t i = 0; i < n;) {   /* count */
        int in = 0; int64_t w = 0;
        for (; i < n && s[i] != '\n'; i++) {
            int sp = s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f';
            if (!sp && !in) w++;
            in = !sp;
        }
        i++;
        if (w) { nsent++; ntok += w; }
    }
    d->text = s;
    if (!nsent) { al_conllu_free(d); al_seterr(err, "%s: no sentence (no non-blank line)", name); return -1; }
    if (tag_fits(name, n, ntok, nsent, err)) { al_conllu_free(d); return -1; }   /* before the arrays */
    d->sent_start = malloc((size_t)(nsent + 1) * sizeof(int));
    d->sent_line = malloc((size_t)nsent * sizeof(long));
    d->form = malloc((size_t)ntok * sizeof(char *));
    d->tag = malloc((size_t)ntok * sizeof(int));
    if (!d->sent_start || !d->sent_line || !d->form || !d->tag) { al_conllu_free(d); al_seterr(err, "%s: out of memory", name); return -1; }
    char *t = d->text;
    int k = 0, t_i = 0; long line = 0;
    d->sent_start[0] = 0;
    for (size_t i = 0; i < n;) {
        line++;
        int w = 0;
        while (i < n && t[i] != '\n') {
            while (i < n && t[i] != '\n' && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\v' || t[i] == '\f')) t[i++] = 0;
            if (i >= n || t[i] == '\n') break;
            d->form[t_i] = t + i; d->tag[t_i] = -1; t_i++; w++;
            while (i < n && t[i] != '\n' && !(t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\v' || t[i] == '\f')) i++;
        }
        if (i < n) t[i++] = 0;
        if (w) {
            if (w > max_len) { al_conllu_free(d); al_seterr(err, "%s:%ld: sentence of %d tokens, more than the model's max_len %d", name, line, w, max_len); return -1; }
            d->sent_line[k] = line; d->sent_start[k + 1] = t_i;
            if (w > d->max_sent_len) d->max_sent_len = w;
            k++;
        }
    }
    d->nsent = (int)nsent; d->ntok = (int)ntok;
    return 0;
}

/* CoNLL-U: the file itself when it can be read again (reread), else (stdin, a pipe: data holds what
 * was read) a temporary copy. Frees data. */
static int read_conllu(const char *path, const char *name, int reread, char *data, size_t n, int max_len, al_conllu *d,
                       al_error *err)
{
    al_conllu_opts co = {max_len, 1};
    int rc = -1;
    if (reread) {
        free(data);   /* read again by the CoNLL-U reader */
        rc = al_conllu_read(path, &co, d, err) == AL_OK ? 0 : -1;
    } else {
        const char *tmp = getenv("TMPDIR");
        char tpl[4096];
        snprintf(tpl, sizeof tpl, "%s/attnlab-tag-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        int fd = mkstemp(tpl);
        size_t off = 0;
        if (fd < 0) al_seterr(err, "%s: cannot create a temporary file in %s", name, tmp && *tmp ? tmp : "/tmp");
        else {
            while (off < n) { ssize_t w = write(fd, data + off, n - off); if (w <= 0) break; off += (size_t)w; }
            close(fd);
            free(data); data = NULL;
            if (off != n) al_seterr(err, "%s: cannot write the temporary file %s", name, tpl);
            else rc = al_conllu_read(tpl, &co, d, err) == AL_OK ? 0 : -1;
            unlink(tpl);
        }
        free(data);
    }
    if (rc) return rc;
    uint64_t bytes = 0;
    for (int i = 0; i < d->ntok; i++) bytes += strlen(d->form[i]) + 1;
    if (tag_fits(name, bytes, d->ntok, d->nsent, err)) { al_conllu_free(d); return -1; }
    return 0;
}

static int tag_one(const char *path, al_seq_model *m, const al_featurizer *fz, al_error *err)
{
    char *data = NULL; size_t n = 0;
    al_input in;   /* a file, stdin or a pipe, read within the memory budget; never a FIFO or device */
    if (al_input_open(&in, path, AL_IN_STREAM, NULL, err) != AL_OK) return 1;
    al_status rs = al_input_read_all(&in, &data, &n, err);
    al_input_close(&in);
    if (rs != AL_OK) return 1;
    al_conllu d;   /* messages name in.name: "stdin" for "-" */
    int bad = looks_conllu(data, n) ? read_conllu(path, in.name, !in.stream && strcmp(path, "-"), data, n, m->cfg.max_len, &d, err)
                                    : parse_plain(in.name, data, n, m->cfg.max_len, &d, err);
    if (bad) return 1;
    al_seq_data sd;
    int *pred = malloc((size_t)(d.ntok > 0 ? d.ntok : 1) * sizeof(int));
    int rc = 1;
    if (!pred) { al_seterr(err, "out of memory"); al_conllu_free(&d); return 1; }
    if (al_seq_data_encode(fz, &d, &sd, err) != AL_OK) goto done;
    if (al_seq_evaluate(m, &sd, 256, NULL, NULL, pred, err) != AL_OK) { al_seq_data_free(&sd); goto done; }
    al_seq_data_free(&sd);
    for (int s = 0; s < d.nsent; s++) {
        char *txt; size_t len;
        int a = d.sent_start[s];
        if (al_conllu_format(d.sent_start[s + 1] - a, d.form + a, pred + a, &txt, &len, err) != AL_OK) goto done;
        fwrite(txt, 1, len, stdout);
        free(txt);
    }
    rc = ferror(stdout) ? (al_seterr(err, "write error on stdout"), 1) : 0;
done:
    free(pred);
    al_conllu_free(&d);
    return rc;
}

int cmd_tag(int argc, char **argv)
{
    const char *load = NULL;
    int threads = 0;
    enum { O_LOAD = 256, O_THREADS, O_MAXMEM, O_HELP };
    static const struct option lo[] = {{"load", 1, 0, O_LOAD}, {"threads", 1, 0, O_THREADS}, {"max-memory", 1, 0, O_MAXMEM},
                                       {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case O_LOAD: load = optarg; break;
        case O_THREADS: if (cli_threads("tag", optarg, &threads)) return 2; break;
        case O_MAXMEM: if (cli_max_memory("tag", optarg)) return 2; break;
        case 'h': case O_HELP: usage(stdout); return 0;
        default: return cli_bad_option("tag", argv);
        }
    }
    if (!load) { fprintf(stderr, "attnlab tag: --load MODEL.safetensors is required\n"); return 2; }
    if (threads > 0) al_set_threads(threads);
    al_error err = {{0}};
    al_seq_model m; al_featurizer fz;
    if (al_seq_load(load, &m, &fz, NULL, &err) != AL_OK) { fprintf(stderr, "attnlab tag: %s\n", err.msg); return 1; }
    int rc = 0;
    if (optind >= argc) rc = tag_one("-", &m, &fz, &err);
    for (int i = optind; i < argc && !rc; i++) rc = tag_one(argv[i], &m, &fz, &err);
    fflush(stdout);
    if (rc) fprintf(stderr, "attnlab tag: %s\n", err.msg[0] ? err.msg : "failed");
    al_seq_free(&m);
    al_feat_free(&fz);
    return rc;
}
