/* sweep_adopt.c — a preset that replaces a script (adopt-rows = yes) takes the rows that script wrote as
 * its own runs. The scripts ran `attnlab train` straight into the CSV, so their rows carry the trainer's
 * run ids, which hash the data's own figures (the clips' count and length, the checkpoint's path) and
 * cannot be computed before a run. Such a row answers a run of the plan when it is complete and:
 *   - its task, model and seed are the run's, and its dataset the run's (speech: any corpus; the
 *     trainer writes the folder's name, not its path);
 *   - its train_size is the run's size (--train-size N; --train-frac F of a molecule set: round(F x the
 *     set's training molecules); all: the whole training set when the sweep knows it);
 *   - it was started from a checkpoint (init_from in its config) exactly when the run is, and with
 *     adopt-init-from PATTERN that checkpoint's file name is PATTERN with {size} and {seed} filled in
 *     (then a model built from the checkpoint, not trained, matches whatever its seed column says: the
 *     script passed none);
 *   - every model flag the run sets that its config records (the flag's name with '_' for '-') has the
 *     run's value there (numbers compared as numbers: lr=9.99999975e-05 is 1e-4).
 * A row answers one run at most, the first in plan order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/results.h"
#include "sweep.h"
#include "train_flags.h"

/* The value of key in a "k=v;k=v" config into out, or 0 if absent. */
static int config_value(const char *config, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = config; p && *p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
        if (strncmp(p, key, kl) || p[kl] != '=') continue;
        const char *v = p + kl + 1, *e = strchr(v, ';');
        size_t l = e ? (size_t)(e - v) : strlen(v);
        snprintf(out, n, "%.*s", (int)l, v);
        return 1;
    }
    return 0;
}

static int same_value(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (*a && *b && !*ea && !*eb) return fabs(x - y) <= 1e-6 * fmax(fabs(x), fabs(y));
    return !strcmp(a, b);
}

/* The row's init_from file name is the preset's pattern for run r (no pattern: any name). */
static int init_matches(const sweep_cfg *c, const plan_run *r, const char *config)
{
    char have[512], want[512];
    if (!config_value(config, "init_from", have, sizeof have)) return 0;
    if (!c->adopt_init) return 1;
    size_t o = 0;
    for (const char *p = c->adopt_init; *p && o < sizeof want - 24; p++) {
        if (!strncmp(p, "{size}", 6)) { o += (size_t)snprintf(want + o, sizeof want - o, "%ld", r->sp.n); p += 5; }
        else if (!strncmp(p, "{seed}", 6)) { o += (size_t)snprintf(want + o, sizeof want - o, "%ld", r->seed); p += 5; }
        else want[o++] = *p;
    }
    want[o] = 0;
    const char *base = strrchr(have, '/') ? strrchr(have, '/') + 1 : have;
    return !strcmp(base, want);
}

static int flags_match(const plan_run *r, const char *config)
{
    const stage *s = r->st;
    for (int i = 0; i < s->naxes; i++) {
        if (r->val[i] < 0) continue;
        char key[64], have[128];
        snprintf(key, sizeof key, "%s", s->axes[i].flag);
        for (char *p = key; *p; p++) if (*p == '-') *p = '_';
        if (config_value(config, key, have, sizeof have) && !same_value(have, s->axes[i].vals[r->val[i]])) return 0;
    }
    return 1;
}

/* Does the final row w of a run answer plan run r? */
static int answers(const sweep_cfg *c, const plan_run *r, const al_result_row *w)
{
    const int any_seed = r->init_from && c->adopt_init && !r->sized;
    if (strcmp(w->task, c->task) || strcmp(w->model, r->model) || (w->seed != r->seed && !any_seed)) return 0;
    if (c->taskid != AL_TASK_SPEECH && strcmp(w->dataset, r->data)) return 0;
    const long full = c->full_size[r->d];
    if (r->sized && r->sp.kind == SPLIT_SIZE && w->train_size != r->sp.n) return 0;
    if (r->sp.kind == SPLIT_FRAC && full > 0 && w->train_size != lround(r->sp.frac * (double)full)) return 0;
    if (r->sp.kind == SPLIT_ALL && full > 0 && w->train_size != full) return 0;
    char v[8];
    if (r->init_from ? !init_matches(c, r, w->config) : config_value(w->config, "init_from", v, sizeof v)) return 0;
    return flags_match(r, w->config);
}

int adopt_rows(const sweep_cfg *c, plan_run *plan, int np, const al_results *have)
{
    unsigned char *taken = calloc((size_t)have->nrun + 1, 1);
    if (!taken) return 0;
    for (int i = 0; i < np; i++)              /* a run the sweep wrote is its own */
        if (plan[i].state == RUN_SKIP) {
            int k = al_results_find_run(have, plan[i].run_id);
            if (k >= 0) taken[k] = 1;
        }
    int n = 0;
    for (int i = 0; i < np; i++) {
        if (plan[i].state != RUN_TODO) continue;
        for (int k = 0; k < have->nrun; k++) {
            if (taken[k] || !have->run[k].complete || !answers(c, &plan[i], &have->row[have->run[k].last])) continue;
            taken[k] = 1; plan[i].state = RUN_SKIP; n++;
            break;
        }
    }
    free(taken);
    return n;
}
