/* train_resume.c — the training-state flags of `attnlab train` (train_resume.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "train_resume.h"
#include "attnlab/io.h"

void app_resume_init(app_resume *r, int every, int resume, const char *path_opt, const char *save)
{
    memset(r, 0, sizeof *r);
    r->every = every; r->resume = resume; r->path_opt = path_opt; r->save = save; r->saved_epoch = -1;
}

/* The value of key in a canonical "k=v;k=v" text as [*v, *v + *n); 0 if absent. */
static int canon_get(const char *canon, const char *key, size_t kl, const char **v, size_t *n)
{
    for (const char *p = canon; p && *p;) {
        const char *end = strchr(p, ';'), *eq = strchr(p, '=');
        if (!end) end = p + strlen(p);
        if (eq && eq < end && (size_t)(eq - p) == kl && !memcmp(p, key, kl)) { *v = eq + 1; *n = (size_t)(end - eq - 1); return 1; }
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* "lr=0.001 here, lr=0.01 in the state": the first setting in which two canonical texts differ. */
static void canon_diff(const char *mine, const char *theirs, char *out, size_t n)
{
    const char *texts[2] = {mine, theirs};
    for (int side = 0; side < 2; side++)
        for (const char *p = texts[side]; *p;) {
            const char *end = strchr(p, ';'), *eq = strchr(p, '=');
            if (!end) end = p + strlen(p);
            size_t kl = eq && eq < end ? (size_t)(eq - p) : (size_t)(end - p);
            const char *a = NULL, *b = NULL; size_t an = 0, bn = 0;
            int ha = canon_get(mine, p, kl, &a, &an), hb = canon_get(theirs, p, kl, &b, &bn);
            if (!ha || !hb || an != bn || memcmp(a, b, an)) {
                snprintf(out, n, "%.*s=%.*s here, %.*s=%.*s in the state", (int)kl, p, ha ? (int)an : 6, ha ? a : "(none)",
                         (int)kl, p, hb ? (int)bn : 6, hb ? b : "(none)");
                return;
            }
            p = *end ? end + 1 : end;
        }
    snprintf(out, n, "the descriptions differ");
}

static int meta_int(const char *meta, const char *key, int *out)
{
    char *v = al_meta_get(meta, key), *end = NULL;
    long x = v ? strtol(v, &end, 10) : -1;
    int bad = !v || end == v || *end || x < 0 || x > 1000000000L;
    free(v);
    if (!bad) *out = (int)x;
    return bad ? -1 : 0;
}

/* The state at r->path, checked against this run; its weights into p. 0 or an exit status. */
static int read_state(app_resume *r, al_params *p, al_error *err)
{
    if (al_safetensors_read_meta(r->path, &r->meta, err) != AL_OK) return 1;
    char *canon = al_meta_get(r->meta, "run_config");
    if (!canon) { al_seterr(err, "--resume: %s is not an attnlab training state (no run_config)", r->path); return 2; }
    if (strcmp(canon, r->canon)) {
        char diff[512];
        canon_diff(r->canon, canon, diff, sizeof diff);
        free(canon);
        al_seterr(err, "--resume: %s holds another configuration's training (%s); give the same flags, or another "
                  "--checkpoint to start afresh", r->path, diff);
        return 2;
    }
    free(canon);
    if (meta_int(r->meta, "csv_rows_before", &r->rows_before) || meta_int(r->meta, "csv_rows", &r->rows)) {
        al_seterr(err, "--resume: %s: missing or bad csv_rows_before / csv_rows in its metadata", r->path);
        return 1;
    }
    if (al_train_state_load(r->path, p, &r->state, NULL, err) != AL_OK) return 1;
    r->have_state = 1;
    r->saved_epoch = r->state.epoch;
    return 0;
}

/* The CSV's rows of the run: keep the state's, drop the later ones. 0 or 1. */
static int trim_csv(app_resume *r, al_error *err)
{
    int n = 0, n_done = 0, removed = 0;
    if (r->csv && al_csv_run_rows(r->csv, r->run_id, &n, &n_done, err) != AL_OK) return 1;
    if (!r->have_state) {
        r->rows_before = r->resume ? n_done : n;   /* --resume without a state: an unfinished attempt goes */
        r->rows = 0;
    } else if (n < r->rows_before + r->rows) {
        al_seterr(err, "--resume: %s holds %d rows of run %s but the training state %s saw %d; it cannot continue "
                  "without losing rows (move the state away to start afresh)", r->csv, n, r->run_id, r->path,
                  r->rows_before + r->rows);
        return 1;
    }
    if (r->resume && r->csv && al_csv_keep_run_rows(r->csv, r->run_id, r->rows_before + r->rows, &removed, err) != AL_OK) return 1;
    if (r->have_state)
        fprintf(stderr, "attnlab train: resuming run %s from %s after epoch %d%s (%d CSV row%s of this run after it removed)\n",
                r->run_id, r->path, r->state.epoch, r->state.finished ? ", where it had finished" : "", removed,
                removed == 1 ? "" : "s");
    else if (r->resume)
        fprintf(stderr, "attnlab train: --resume: no training state at %s; starting from scratch%s\n", r->path,
                removed ? " (the rows of an unfinished earlier attempt removed from the CSV)" : "");
    return 0;
}

/* The state read is the run's (the training loop checked it against its epochs, data and steps): only
 * now are the CSV rows written after it dropped. 0 or 1. */
static int resumed(void *ud, const al_train_state *s)
{
    (void)s;
    app_resume *r = ud;
    return trim_csv(r, r->err);
}

int app_resume_start(app_resume *r, const char *csv, const char *run_id, const char *canon, al_params *p, al_error *err)
{
    r->csv = csv; r->run_id = run_id; r->canon = canon; r->params = p; r->err = err;
    if (!r->every && !r->resume) {
        if (!r->path_opt) return 0;
        al_seterr(err, "--checkpoint %s: give --checkpoint-every N (write states) and/or --resume (continue from one)", r->path_opt);
        return 2;
    }
    if (r->path_opt) snprintf(r->path, sizeof r->path, "%s", r->path_opt);
    else if (r->save) snprintf(r->path, sizeof r->path, "%s.train", r->save);
    else snprintf(r->path, sizeof r->path, "attnlab-%s.train", run_id);
    if (r->resume && access(r->path, F_OK) == 0) {
        int rc = read_state(r, p, err);
        if (rc) return rc;
    } else if (r->resume && errno != ENOENT) {
        al_seterr(err, "--resume: %s: %s", r->path, strerror(errno));
        return 1;
    }
    if (!r->have_state && trim_csv(r, err)) return 1;
    r->rs.every = r->every; r->rs.ud = r; r->rs.from = r->have_state ? &r->state : NULL; r->rs.from_path = r->path;
    r->rs.resumed = r->have_state ? resumed : NULL;
    return 0;
}

static int save_state(void *ud, const al_train_state *s)
{
    app_resume *r = ud;
    char before[24], rows[24];
    snprintf(before, sizeof before, "%d", r->rows_before); snprintf(rows, sizeof rows, "%d", r->rows);
    const char *kv[2 * (4 + APP_RESUME_NOTES)] = {"run_id", r->run_id, "run_config", r->canon, "csv_rows_before", before,
                                                  "csv_rows", rows};
    int n = 4;
    for (int i = 0; i < r->nnote; i++, n++) { kv[2 * n] = r->note_key[i]; kv[2 * n + 1] = r->note_val[i]; }
    if (al_train_state_save(r->path, r->params, s, kv, n, r->err) != AL_OK) return 1;
    r->saved_epoch = s->epoch;
    return 0;
}

const al_resume *app_resume_loop(app_resume *r)
{
    if (!r->every && !r->resume) return NULL;
    r->rs.save = r->every > 0 ? save_state : NULL;
    return &r->rs;
}

void app_resume_row(app_resume *r) { r->rows++; }

void app_resume_note(app_resume *r, const char *key, double v)
{
    char k[sizeof r->note_key[0]];
    snprintf(k, sizeof k, "note.%s", key);
    int i = 0;
    while (i < r->nnote && strcmp(r->note_key[i], k)) i++;
    if (i == APP_RESUME_NOTES) return;
    if (i == r->nnote) { memcpy(r->note_key[i], k, sizeof k); r->nnote++; }
    snprintf(r->note_val[i], sizeof r->note_val[i], "%a", v);
}

double app_resume_noted(const app_resume *r, const char *key)
{
    char k[32];
    snprintf(k, sizeof k, "note.%s", key);
    char *v = r->meta ? al_meta_get(r->meta, k) : NULL;
    double x = v ? strtod(v, NULL) : NAN;
    free(v);
    return x;
}

void app_resume_fail_note(const app_resume *r, al_error *err)
{
    const char *f = al_path_short(r->path);
    if (r->saved_epoch < 0 || !strncmp(err->msg, f, strlen(f))) return;   /* the message is about the state itself */
    size_t l = strlen(err->msg);
    snprintf(err->msg + l, sizeof err->msg - l, "; the training state of epoch %d in %s is kept", r->saved_epoch, r->path);
}

void app_resume_free(app_resume *r)
{
    if (r->have_state) al_train_state_free(&r->state);
    free(r->meta);
    r->have_state = 0; r->meta = NULL;
}
