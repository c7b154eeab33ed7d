/* sweep_presets.c — finding and reading the sweep's preset files: results/presets/NAME.preset, one
 * experiment each, as `key = value` lines (`key[model] = value` for one model, `epochs[size>=N] = E` for
 * some sizes), `[stage NAME]` sections and `#` comments, the first of which describes the preset in
 * `sweep --help`. What the keys mean is sweep_args.c's business (docs/experiments.md, "Presets"). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include "cli.h"
#include "attnlab/datadir.h"
#include "attnlab/io.h"
#include "attnlab/results.h"
#include "train_flags.h"
#include "sweep.h"

#ifndef AL_PRESETDIR
#define AL_PRESETDIR "/usr/local/share/attnlab/presets"   /* the Makefile defines it */
#endif
#define PRESET_ENV "ATTNLAB_PRESETS"
#define PRESET_SUBDIR "results/presets"
#define MAXLINES 256

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

static int valid_name(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_')) return 0;
    return 1;
}

/* "[stage NAME]" into pf; 0 or 2. */
static int section(preset_file *pf, char *s, int ln)
{
    size_t n = strlen(s);
    if (s[n - 1] != ']' || strncmp(s, "[stage ", 7)) return bad("%s:%d: a section is [stage NAME]", pf->path, ln);
    s[n - 1] = 0;
    char *name = trim(s + 7);
    if (!valid_name(name)) return bad("%s:%d: stage name '%s' is not of a-z, 0-9, - and _", pf->path, ln, name);
    if (pf->nstages == MAXSTAGES) return bad("%s:%d: more than %d stages", pf->path, ln, MAXSTAGES);
    for (int i = 0; i < pf->nstages; i++)
        if (!strcmp(pf->stage_names[i], name)) return bad("%s:%d: stage '%s' appears twice", pf->path, ln, name);
    pf->stage_names[pf->nstages] = name;
    pf->stage_at[pf->nstages++] = pf->nlines;
    return 0;
}

/* "key = value" or "key[sel] = value" into pf; 0 or 2. */
static int key_line(preset_file *pf, char *s, int ln)
{
    char *eq = strchr(s, '='), *open = strchr(s, '['), *close = open ? strchr(open, ']') : NULL;
    if (open && eq && open < eq && close) eq = strchr(close, '=');   /* key[size>=N] = value */
    if (!eq) return bad("%s:%d: expected 'key = value', [stage NAME] or a # comment", pf->path, ln);
    *eq = 0;
    char *key = trim(s), *val = trim(eq + 1), *sel = NULL, *br = strchr(key, '[');
    if (br) {
        size_t n = strlen(key);
        if (key[n - 1] != ']' || br[1] == ']') return bad("%s:%d: '%s': a selector is key[MODEL] or key[size>=N]", pf->path, ln, key);
        key[n - 1] = 0; *br = 0; sel = trim(br + 1);
    }
    if (!valid_name(key)) return bad("%s:%d: bad key '%s'", pf->path, ln, key);
    if (!*val) return bad("%s:%d: %s has no value", pf->path, ln, key);
    if (pf->nlines == MAXLINES) return bad("%s:%d: more than %d settings", pf->path, ln, MAXLINES);
    pf->lines[pf->nlines++] = (preset_line){key, sel, val, ln};
    return 0;
}

static int parse_text(preset_file *pf)
{
    int ln = 0;
    for (char *p = pf->text; *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        ln++;
        char *s = trim(p);
        int rc = !*s || *s == '#' ? 0 : *s == '[' ? section(pf, s, ln) : key_line(pf, s, ln);
        if (rc) return rc;
        if (!nl) break;
        p = nl + 1;
    }
    pf->stage_at[pf->nstages] = pf->nlines;
    return 0;
}

/* A path (it holds a '/' or ends in .preset) or a name looked up as datasets are. */
static int find_preset(const char *arg, preset_file *pf)
{
    size_t n = strlen(arg);
    const int is_path = strchr(arg, '/') || (n > 7 && !strcmp(arg + n - 7, ".preset"));
    const char *base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
    size_t bl = strlen(base);
    snprintf(pf->name, sizeof pf->name, "%.*s", (int)(bl > 7 && !strcmp(base + bl - 7, ".preset") ? bl - 7 : bl), base);
    if (is_path) { snprintf(pf->path, sizeof pf->path, "%s", arg); return 0; }
    if (!valid_name(arg)) return bad("unknown preset '%s' (see attnlab sweep --help)", arg);
    char file[160];
    al_error e = {{0}};
    snprintf(file, sizeof file, "%s.preset", arg);
    if (al_file_locate(PRESET_ENV, PRESET_SUBDIR, AL_PRESETDIR, file, pf->path, sizeof pf->path, &e) != AL_OK)
        return bad("unknown preset '%s': %s (attnlab sweep --help lists the presets)", arg, e.msg);
    return 0;
}

int preset_load(const char *arg, preset_file *pf)
{
    memset(pf, 0, sizeof *pf);
    if (find_preset(arg, pf)) return 2;
    size_t len;
    al_error e = {{0}};
    if (al_read_file(pf->path, &pf->text, &len, &e) != AL_OK) return bad("--preset: %s", e.msg);
    if (strlen(pf->text) != len) return bad("%s: a NUL byte: not a text file", pf->path);
    pf->lines = calloc(MAXLINES, sizeof *pf->lines);
    if (!pf->lines) return bad("out of memory");
    return parse_text(pf);
}

void preset_free(preset_file *pf)
{
    free(pf->lines);
    free(pf->text);
    memset(pf, 0, sizeof *pf);
}

/* ---------------- presets ---------------- */
static preset_file g_pf;       /* the preset read: the configuration points into its text */

static stage g_global;          /* its settings before the first [stage]: the stages' defaults */

/* One line "attnlab sweep: FILE:LINE: what" on stderr; returns 2. */
static int pbad(const preset_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pbad(const preset_line *l, const char *fmt, ...)
{
    char msg[1024];
    va_list ap; va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bad("%s:%d: %s", g_pf.path, l->line, msg);
}
#define PBAD pbad
/* "FILE:LINE: key" for the messages of the list parsers */
static const char *where(const preset_line *l)
{
    static char w[4400];
    snprintf(w, sizeof w, "%s:%d: %s", g_pf.path, l->line, l->key);
    return w;
}

/* epochs / epochs[MODEL] / epochs[size>=N] of stage s; 0 or 2. */
static int preset_epochs(stage *s, const preset_line *l)
{
    epoch_rule r;
    if (parse_epochs(l->val, &r)) return PBAD(l, "epochs: '%s' is not default, N or steps N [min M] (N, M in 1..%d; a step budget N in 1..%ld)",
                                              l->val, MAXEPOCHS, MAXSTEPS);
    if (!l->sel) { s->epochs = r; return 0; }
    if (s->nover == MAXOVER) return PBAD(l, "more than %d epoch rules in one stage", MAXOVER);
    epoch_override *o = &s->over[s->nover++];
    o->rule = r;
    long from;
    if (!strncmp(l->sel, "size>=", 6)) {
        if (parse_int(l->sel + 6, 1, LONG_MAX, &from)) return PBAD(l, "epochs[%s]: want size>=N", l->sel);
        o->from_size = from;
    } else if (!known_model(s->task, l->sel)) return PBAD(l, "epochs[%s]: not a %s model", l->sel, al_task_at(s->task)->name);
    else snprintf(o->model, sizeof o->model, "%s", l->sel);
    return 0;
}

/* A setting any stage may have (models, epochs, evals, init-from, model flags) into s; 0, 1 (not such a key) or 2. */
static int stage_key(sweep_cfg *c, stage *s, const preset_line *l, int *from_line)
{
    long v;
    if (!strcmp(l->key, "epochs")) return preset_epochs(s, l);
    if (l->sel && train_model_flag_need(c->taskid, l->key)) {
        if (!known_model(c->taskid, l->sel)) return PBAD(l, "%s[%s]: not a %s model", l->key, l->sel, al_task_at(c->taskid)->name);
        return add_axis(s, l->key, l->val, l->sel, where(l));
    }
    if (l->sel) return PBAD(l, "%s[%s]: only epochs and model flags take a [selector]", l->key, l->sel);
    if (!strcmp(l->key, "models")) {
        if (s->nmodels) return PBAD(l, "models given twice");
        s->nmodels = split_list(where(l), l->val, s->models, MAXLIST, &s->models_buf);
        if (s->nmodels < 0) return 2;
        for (int i = 0; i < s->nmodels; i++)
            if (!known_model(c->taskid, s->models[i])) return PBAD(l, "models: unknown %s model '%s'", al_task_at(c->taskid)->name, s->models[i]);
        return 0;
    }
    if (!strcmp(l->key, "evals")) {
        if (parse_int(l->val, 1, 100000, &v)) return PBAD(l, "evals: '%s' is not a positive integer", l->val);
        s->evals = (int)v;
        return 0;
    }
    if (!strcmp(l->key, "init-from")) { *from_line = (int)(l - g_pf.lines); return 0; }
    if (train_model_flag_need(c->taskid, l->key)) return add_axis(s, l->key, l->val, NULL, where(l));
    return 1;
}

static int yes_no(const preset_line *l, int *out)
{
    if (!strcmp(l->val, "yes") || !strcmp(l->val, "no")) { *out = l->val[0] == 'y'; return 0; }
    return PBAD(l, "%s: want yes or no, got '%s'", l->key, l->val);
}

/* train-sizes, labels-per-class, train-frac, planetoid: the splits of the preset or of a stage (use); 0, 1 (not
 * such a key) or 2. */
static int split_key(sweep_cfg *c, const preset_line *l, unsigned char *use)
{
    static const char *const split_keys[] = {"train-sizes", "labels-per-class", "train-frac"};
    static const int split_kinds[] = {SPLIT_SIZE, SPLIT_LPC, SPLIT_FRAC};
    if (l->sel) return 1;
    for (int k = 0; k < 3; k++)
        if (!strcmp(l->key, split_keys[k])) return add_splits(where(l), l->val, split_kinds[k], c, use) ? 2 : 0;
    int on = 0;
    if (strcmp(l->key, "planetoid")) return 1;
    if (yes_no(l, &on)) return 2;
    split p = {SPLIT_PLANETOID, 0, 0};
    int j = find_split(c, &p);
    if (on && j < 0) { j = c->nsplits; c->splits[c->nsplits++] = p; }
    if (on) use[j] = 1;
    return 0;
}

static int is_global_key(const char *k)
{
    static const char *const keys[] = {"task", "data", "seeds", "csv", "summarize", "adopt-rows", "adopt-init-from", "plot"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) if (!strcmp(k, keys[i])) return 1;
    return 0;
}

/* A setting of the whole preset (before its first stage); 0, 1 (not such a key) or 2. */
static int global_key(sweep_cfg *c, const preset_line *l)
{
    if (l->sel) return 1;
    if (!strcmp(l->key, "task")) return 0;                     /* read first */
    if (!strcmp(l->key, "data")) { c->data = l->val; return 0; }
    if (!strcmp(l->key, "seeds")) return parse_seeds(where(l), l->val, c) ? 2 : 0;
    if (!strcmp(l->key, "csv")) { c->csv = l->val; return 0; }
    if (!strcmp(l->key, "summarize")) return yes_no(l, &c->summarize);
    if (!strcmp(l->key, "adopt-rows")) return yes_no(l, &c->adopt);
    if (!strcmp(l->key, "adopt-init-from")) { c->adopt_init = l->val; return 0; }
    if (!strcmp(l->key, "plot")) {
        c->nplots = split_list(where(l), l->val, c->plots, 4, &c->plots_buf);
        for (int i = 0; i < c->nplots; i++)
            if (al_metric_find(c->plots[i]) < 0) return PBAD(l, "plot: '%s' is not test_acc, unseen_acc or ambig_acc", c->plots[i]);
        return c->nplots < 0 ? 2 : 0;
    }
    return 1;
}

/* Lines [a, b) of the preset into stage s (and, when global, into c); 0 or 2. */
static int preset_block(sweep_cfg *c, stage *s, int a, int b, int global, unsigned char *use, int *from_line)
{
    for (int i = a; i < b; i++) {
        const preset_line *l = &g_pf.lines[i];
        int rc = global ? global_key(c, l) : 1;
        if (rc == 1) rc = split_key(c, l, use);
        if (rc == 1) rc = stage_key(c, s, l, from_line);
        if (rc == 1) {
            if (!global && is_global_key(l->key)) return PBAD(l, "%s is a setting of the whole preset (put it before the first [stage])", l->key);
            for (int t = 0; t < AL_TASK_COUNT; t++)                /* a flag of another task */
                if (train_model_flag_need(t, l->key)) return PBAD(l, "%s is not a model flag of task %s", l->key, al_task_at(c->taskid)->name);
            return PBAD(l, "unknown key '%s' (docs/experiments.md lists the keys)", l->key);
        }
        if (rc) return 2;
    }
    return 0;
}

/* The stage's epochs, evals and model flags from the preset's global part, where it sets none. */
static int inherit(stage *s, const stage *g)
{
    if (!s->nmodels) {
        if (!g->nmodels) return -1;
        for (int i = 0; i < g->nmodels; i++) s->models[i] = g->models[i];
        s->nmodels = g->nmodels;
    }
    if (s->epochs.kind == ER_DEFAULT && !s->nover) { s->epochs = g->epochs; memcpy(s->over, g->over, sizeof s->over); s->nover = g->nover; }
    if (!s->evals) s->evals = g->evals;
    for (int i = 0; i < g->naxes; i++) {
        int have = 0;
        for (int j = 0; j < s->naxes; j++) have |= !strcmp(s->axes[j].flag, g->axes[i].flag);
        if (have || s->naxes == MAXAXES) continue;
        axis *a = &s->axes[s->naxes++];
        *a = g->axes[i];
        a->buf = NULL;                                        /* the global stage owns the values */
    }
    return 0;
}

/* Stage i's init-from (the preset line at index fl, or -1): an earlier stage with one run per dataset, split
 * and seed, at every split of stage i; 0 or 2. */
static int stage_from(sweep_cfg *c, int i, int fl)
{
    stage *s = &c->stages[i];
    s->from = -1;
    if (fl < 0) return 0;
    const preset_line *l = &g_pf.lines[fl];
    int j = 0;
    while (j < i && strcmp(c->stages[j].name, l->val)) j++;
    if (j == i) return PBAD(l, "init-from: '%s' is not an earlier stage", l->val);
    stage *a = &c->stages[j];
    int one = a->nmodels == 1;
    for (int k = 0; k < a->naxes; k++) one &= a->axes[k].nvals == 1;
    if (!one) return PBAD(l, "init-from: stage %s has more than one run per dataset, split and seed (one model, one value per flag)", a->name);
    for (int k = 0; k < c->nsplits; k++)
        if (s->use[k] && !a->use[k]) {
            char sp[48]; split_str(&c->splits[k], sp, sizeof sp);
            return PBAD(l, "init-from: stage %s has no run at %s", a->name, sp);
        }
    s->from = j; a->saved = 1;
    return 0;
}

/* The preset's stages: one from the settings before any [stage] line, or one per [stage]; 0 or 2. */
static int preset_stages(sweep_cfg *c)
{
    unsigned char guse[MAXLIST] = {0};
    int fl = -1, end0 = g_pf.nstages ? g_pf.stage_at[0] : g_pf.nlines;
    g_global.task = c->taskid; g_global.name = ""; g_global.from = -1;
    if (preset_block(c, &g_global, 0, end0, 1, guse, &fl)) return 2;
    if (fl >= 0) return PBAD(&g_pf.lines[fl], "init-from belongs to a [stage]");
    if (c->nsplits == 0 && (c->taskid == AL_TASK_SPEECH || c->taskid == AL_TASK_MOLECULE)) {
        c->splits[c->nsplits++] = (split){SPLIT_ALL, 0, 0};   /* every training example */
        guse[0] = 1;
    }
    if (!g_pf.nstages) {
        c->stages[0] = g_global;
        memset(&g_global, 0, sizeof g_global);
        memcpy(c->stages[0].use, guse, sizeof guse);
        c->nstages = 1;
        return c->stages[0].nmodels ? 0 : bad("%s: no models", g_pf.path);
    }
    for (int i = 0; i < g_pf.nstages; i++) {
        stage *s = &c->stages[i];
        s->task = c->taskid; s->name = g_pf.stage_names[i];
        fl = -1;
        c->nstages = i + 1;
        if (preset_block(c, s, g_pf.stage_at[i], g_pf.stage_at[i + 1], 0, s->use, &fl)) return 2;
        int any = 0;
        for (int k = 0; k < c->nsplits; k++) any |= s->use[k];
        if (!any) memcpy(s->use, guse, sizeof guse);
        if (inherit(s, &g_global)) return bad("%s: stage %s has no models", g_pf.path, s->name);
        if (stage_from(c, i, fl)) return 2;
    }
    return 0;
}

/* Read preset `name` into c; 0 or 2. */
int preset_apply(sweep_cfg *c, const char *name)
{
    if (preset_load(name, &g_pf)) return 2;
    const preset_line *task = NULL;
    const int end0 = g_pf.nstages ? g_pf.stage_at[0] : g_pf.nlines;
    for (int i = 0; i < end0; i++) if (!strcmp(g_pf.lines[i].key, "task")) task = &g_pf.lines[i];
    if (!task) return bad("%s: no 'task = image|graph|sequence|speech|molecule' line", g_pf.path);
    c->task = task->val; c->taskid = task_find(c->task);
    if (c->taskid < 0) return PBAD(task, "task: unknown task '%s' (expected image, graph, sequence, speech or molecule)", c->task);
    c->preset = g_pf.name;
    if (preset_stages(c)) return 2;
    if (!c->nseeds) return bad("%s: no seeds", g_pf.path);
    if (!c->nsplits)
        return bad("%s: no %s", g_pf.path, c->taskid == AL_TASK_GRAPH ? "labels-per-class, train-frac or planetoid" : "train-sizes");
    return 0;
}

/* A graph preset restricted to some of its splits (--labels-per-class / --train-frac with --preset):
 * the same runs, the same run ids, fewer of them; 0 or 2. */
int preset_subset(sweep_cfg *c, const char *lpc, const char *frac)
{
    if (c->taskid != AL_TASK_GRAPH) return bad("--labels-per-class and --train-frac restrict the graph presets only");
    split all[MAXLIST];
    unsigned char use[MAXSTAGES][MAXLIST];
    const int nall = c->nsplits;
    memcpy(all, c->splits, (size_t)nall * sizeof *all);
    for (int s = 0; s < c->nstages; s++) memcpy(use[s], c->stages[s].use, sizeof use[s]);
    c->nsplits = 0;
    if ((lpc && add_splits("--labels-per-class", lpc, SPLIT_LPC, c, NULL)) || (frac && add_splits("--train-frac", frac, SPLIT_FRAC, c, NULL)))
        return 2;
    for (int i = 0; i < c->nsplits; i++) {
        int j = 0;
        while (j < nall && !same_split(&all[j], &c->splits[i])) j++;
        if (j == nall) {
            char sp[48];
            split_str(&c->splits[i], sp, sizeof sp);
            return bad("--preset %s has no split %s (a preset's splits can be restricted, not extended)", c->preset, sp);
        }
        for (int s = 0; s < c->nstages; s++) c->stages[s].use[i] = use[s][j];
    }
    return 0;
}

void preset_release(void)
{
    free(g_global.models_buf);
    for (int i = 0; i < g_global.naxes; i++) free(g_global.axes[i].buf);
    memset(&g_global, 0, sizeof g_global);
    preset_free(&g_pf);
}

/* The first comment line of a preset file (its description), or "". */
static void describe(const char *path, char *out, size_t n)
{
    al_input in;   /* never a FIFO or device: listing the presets must not block */
    al_error e = {{0}};
    FILE *f = al_input_open(&in, path, 0, NULL, &e) == AL_OK ? fdopen(in.fd, "r") : NULL;
    if (!f && in.fd >= 0) al_input_close(&in);
    char line[512];
    out[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *s = trim(line);
        size_t l = strlen(s);
        if (l && s[l - 1] == '\n') s[--l] = 0;
        if (*s != '#') continue;
        for (s++; *s == ' ' || *s == '#'; s++) {}
        snprintf(out, n, "%s", s);
        break;
    }
    if (f) fclose(f);
}

typedef struct found { char name[128], path[AL_LOCATE_LEN + 256]; } found;
static int cmp_found(const void *a, const void *b) { return strcmp(((const found *)a)->name, ((const found *)b)->name); }

void preset_list(FILE *f)
{
    char dirs[6][AL_LOCATE_LEN], desc[256];
    int nd = al_locate_dirs(PRESET_ENV, PRESET_SUBDIR, AL_PRESETDIR, dirs, 6), n = 0;
    found *fs = calloc(MAXLINES, sizeof *fs);
    for (int i = 0; fs && i < nd; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *e;
        while (d && (e = readdir(d)) && n < MAXLINES) {
            size_t l = strlen(e->d_name);
            if (l <= 7 || l - 7 >= sizeof fs->name || strcmp(e->d_name + l - 7, ".preset")) continue;
            snprintf(fs[n].name, sizeof fs->name, "%.*s", (int)(l - 7), e->d_name);
            int seen = 0;
            for (int j = 0; j < n; j++) seen |= !strcmp(fs[j].name, fs[n].name);
            if (seen) continue;                           /* an earlier folder's preset of that name wins */
            snprintf(fs[n++].path, sizeof fs->path, "%.4199s/%.200s", dirs[i], e->d_name);
        }
        if (d) closedir(d);
    }
    if (fs) qsort(fs, (size_t)n, sizeof *fs, cmp_found);
    for (int i = 0; i < n; i++) {
        describe(fs[i].path, desc, sizeof desc);
        cli_usage(f, "  %-18s %s\n", fs[i].name, desc);
    }
    if (n == 0) fprintf(f, "  (none found: set $%s to the folder of the .preset files)\n", PRESET_ENV);
    free(fs);
}
