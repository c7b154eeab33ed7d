/* train_flags.c — the applicability table of `attnlab train`'s flags (train_flags.h) and its checks. */
#include <stdio.h>
#include <string.h>
#include "train_flags.h"
#include "attnlab/gnn.h"
#include "attnlab/models.h"
#include "attnlab/molnet.h"
#include "attnlab/seq.h"

#define TF_ROW(id, nm, arg, img, gr, sq, sp, mo) [TF_##id] = {nm, arg, {img, gr, sq, sp, mo}},
const train_flag train_flags[TF_NFLAGS] = { TRAIN_FLAGS(TF_ROW) };
#undef TF_ROW

/* Whether flag f is an option of task (image and graph: of either, as they refuse each other's with the reason). */
static int known(int task, int f)
{
    const unsigned *need = train_flags[f].need;
    return (task <= AL_TASK_GRAPH ? need[AL_TASK_IMAGE] | need[AL_TASK_GRAPH] : need[task]) != 0;
}

const struct option *train_flags_options(int task)
{
    static struct option lo[AL_TASK_COUNT][TF_NFLAGS + 1];   /* zeroed: each table ends with {0} */
    if (task < 0 || task >= AL_TASK_COUNT) task = AL_TASK_IMAGE;
    for (int f = 0, k = 0; f < TF_NFLAGS; f++)
        if (known(task, f)) lo[task][k++] = (struct option){train_flags[f].name, train_flags[f].has_arg, 0, TF_BASE + f};
    return lo[task];
}

static unsigned image_props(const al_model_arch *k)
{
    return AP_ANY | (k->trainable ? AP_TRAINABLE : 0u) | (k->attention ? AP_ATTENTION : 0u) |
           (k->windowed ? AP_WINDOWED : 0u);
}
static unsigned graph_props(const al_gnn_arch *k)
{
    return AP_ANY | (k->attention ? AP_ATTENTION : 0u) | (k->capture ? AP_ATTNMAP : 0u);
}

int task_find(const char *name)
{
    const al_task *t = al_task_find(name);
    return t ? (int)t->id : -1;
}

unsigned train_model_props(int task, const char *model)
{
    if (task == AL_TASK_IMAGE) {
        const al_model_arch *k = al_model_arch_find(model);
        return k ? image_props(k) : 0;
    }
    if (task == AL_TASK_SEQUENCE || task == AL_TASK_SPEECH) {
        const al_seq_arch *k = al_seq_arch_find(model);
        return k ? AP_ANY | (k->attention ? AP_ATTENTION : 0u) | (k->windowed ? AP_WINDOWED : 0u) |
                   (k->recurrent ? AP_RECURRENT : 0u) : 0;
    }
    if (task == AL_TASK_MOLECULE) {
        const al_molnet_arch *k = al_molnet_arch_find(model);
        return k ? AP_ANY | (k->attention ? AP_ATTENTION : 0u) | (k->layers ? AP_LAYERS : 0u) : 0;
    }
    const al_gnn_arch *k = al_gnn_arch_find(model);
    return k ? graph_props(k) : 0;
}

/* ---- model flags (what a sweep may set per run) ---- */
/* Flags that are not model flags: the run's own, set by whoever runs it, and those that depend on the data,
 * the split or the seeds rather than the model. */
static int run_level(int f)
{
    static const int own[] = {TF_TASK, TF_MODEL, TF_DATA, TF_TRAIN_SIZE, TF_EPOCHS, TF_SEED, TF_SEEDS, TF_THREADS,
                              TF_MAX_MEMORY, TF_INIT_FROM, TF_SPLIT, TF_EVAL_EVERY, TF_WEIGHT_DECAY, TF_CHECKPOINT_EVERY,
                              TF_CHECKPOINT, TF_CSV, TF_SAVE, TF_HELP};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) if (own[i] == f) return 1;
    const unsigned data = AP_FOLDER | AP_IDX | AP_PERCLASS | AP_FRAC | AP_SEEDS | AP_ATTNMAP;
    unsigned any = 0;
    for (int t = 0; t < AL_TASK_COUNT; t++) any |= train_flags[f].need[t];
    return !train_flags[f].has_arg || (any & data);
}

unsigned train_model_flag_need(int task, const char *flag)
{
    if (task < 0 || task >= AL_TASK_COUNT) return 0;
    for (int f = 0; f < TF_NFLAGS; f++)
        if (!strcmp(train_flags[f].name, flag)) return run_level(f) ? 0 : train_flags[f].need[task];
    return 0;
}

int train_model_flag(int task, const char *flag, const char *model)
{
    unsigned need = train_model_flag_need(task, flag);
    return need ? (need & ~train_model_props(task, model)) == 0 : -1;
}

const char *train_model_flag_name(int i)
{
    for (int f = 0; f < TF_NFLAGS; f++)
        if (!run_level(f) && i-- == 0) return train_flags[f].name;
    return NULL;
}

/* "sa, local": the task's models that have property p. */
static const char *model_at(int task, int i)
{
    if (task == AL_TASK_IMAGE) return al_model_arch_at(i) ? al_model_arch_at(i)->name : NULL;
    if (task == AL_TASK_GRAPH) return al_gnn_arch_at(i) ? al_gnn_arch_at(i)->name : NULL;
    if (task == AL_TASK_MOLECULE) return al_molnet_arch_at(i) ? al_molnet_arch_at(i)->name : NULL;
    return al_seq_arch_at(i) ? al_seq_arch_at(i)->name : NULL;
}
/* "sa, local" (last = ", ") or "sa and trunc" (last = " and "): the task's models that have property p. */
static void models_with_sep(int task, unsigned p, char *buf, size_t n, const char *last)
{
    const char *names[64];
    int k = 0;
    for (int i = 0; model_at(task, i) && k < 64; i++)
        if (train_model_props(task, model_at(task, i)) & p) names[k++] = model_at(task, i);
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < k && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%s", i == 0 ? "" : i == k - 1 ? last : ", ", names[i]);
}
static void models_with(int task, unsigned p, char *buf, size_t n) { models_with_sep(task, p, buf, n, ", "); }

/* Why flag f does not apply given the missing property p (one bit). */
static void why(const flag_ctx *fc, int f, unsigned p)
{
    const char *flag = train_flags[f].name, *task = fc->task == AL_TASK_IMAGE ? "image" : "graph";
    char models[128];
    models_with(fc->task, p, models, sizeof models);
    switch (p) {
    case AP_TRAINABLE: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: it is not trained (it is built "
                               "from the --init-from checkpoint)\n", flag, fc->model); break;
    case AP_ATTENTION: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: it has no attention (only to %s)\n",
                               flag, fc->model, models); break;
    case AP_ATTNMAP: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: %s (only to %s)\n", flag, fc->model,
                             train_model_props(fc->task, fc->model) & AP_ATTENTION ? "its attention weights are not written"
                                                                                    : "it has no attention", models); break;
    case AP_WINDOWED: fprintf(stderr, "attnlab train: --%s does not apply to --model %s: its attention is not windowed "
                              "(only to %s)\n", flag, fc->model, models); break;
    case AP_FOLDER: fprintf(stderr, "attnlab train: --%s applies to image folders only, not to --data fashion-mnist\n", flag); break;
    case AP_IDX: fprintf(stderr, "attnlab train: --%s locates the Fashion-MNIST files; it does not apply to an image "
                         "folder (--data DIR)\n", flag); break;
    case AP_PERCLASS: fprintf(stderr, "attnlab train: --%s applies to --split per-class only\n", flag); break;
    case AP_FRAC: fprintf(stderr, "attnlab train: --%s applies to --split frac only\n", flag); break;
    case AP_SEEDS: fprintf(stderr, "attnlab train: --%s applies only with several --seeds\n", flag); break;
    default: fprintf(stderr, "attnlab train: --%s is not an option of the %s task (it applies to --task %s only)\n",
                     flag, task, fc->task == AL_TASK_IMAGE ? "graph" : "image");
    }
}

int train_flags_check(const flag_ctx *fc, const unsigned char *seen)
{
    for (int f = 0; f < TF_NFLAGS; f++) {
        if (!seen[f]) continue;
        unsigned need = train_flags[f].need[fc->task];
        if (!need) { why(fc, f, 0); return 2; }
        unsigned missing = need & ~fc->props;
        if (missing) { why(fc, f, missing & -missing); return 2; }
    }
    return 0;
}

/* The model flags of sequence, speech and molecule in the order they are checked and named. */
static const int model_order[] = {TF_WINDOW, TF_RNN, TF_POS, TF_SCORE, TF_NORM, TF_HEADS, TF_DEPTH, TF_DIM, TF_READOUT};
#define NORDER (int)(sizeof model_order / sizeof *model_order)

/* Why flag f does not fit --model (missing property p, one bit) for sequence, speech and molecule. */
static void why_model(int task, const char *model, int f, unsigned p)
{
    const char *flag = train_flags[f].name;
    char models[128], flags[128];
    size_t o = 0;
    if (task == AL_TASK_MOLECULE) {
        fprintf(stderr, "attnlab train: --%s does not apply to --model %s (%s)\n", flag, model,
                train_model_props(task, model) & (AP_ATTENTION | AP_LAYERS) ? "it has no attention" : "it has no graph layers");
        return;
    }
    if (p == AP_ATTENTION) {    /* one line for the attention flags together */
        flags[0] = 0;
        for (int i = 0; i < NORDER; i++)
            if ((train_flags[model_order[i]].need[task] & AP_ATTENTION) && o < sizeof flags)
                o += (size_t)snprintf(flags + o, sizeof flags - o, "%s--%s", o ? "/" : "", train_flags[model_order[i]].name);
        models_with_sep(task, p, models, sizeof models, " and ");
        fprintf(stderr, "attnlab train: %s apply to %s only\n", flags, models);
        return;
    }
    models_with(task, p, models, sizeof models);
    fprintf(stderr, "attnlab train: --%s does not apply to --model %s (only %s)\n", flag, model, models);
}

int train_flags_check_model(int task, const char *model, const unsigned char *seen)
{
    const unsigned props = train_model_props(task, model);
    for (int k = 0; k < NORDER + TF_NFLAGS; k++) {   /* model_order first, then every flag */
        const int f = k < NORDER ? model_order[k] : k - NORDER;
        if (!seen[f]) continue;
        const unsigned missing = train_flags[f].need[task] & ~props;
        if (missing) { why_model(task, model, f, missing & -missing); return 2; }
    }
    return 0;
}
