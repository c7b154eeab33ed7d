/* task.c — the task table (attnlab/task.h): each task's names and defaults, and its model family's
 * table seen through one shape (al_task_model). */
#include "attnlab/task.h"
#include "attnlab/models.h"
#include "attnlab/gnn.h"
#include "attnlab/seq.h"
#include "attnlab/molnet.h"
#include "attnlab/io.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static al_status image_at(int i, al_task_model *o)
{
    const al_model_arch *a = al_model_arch_at(i);
    if (!a) return AL_ERR;
    *o = (al_task_model){a->name, a->summary, a->trainable, a->attention};
    return AL_OK;
}
static al_status graph_at(int i, al_task_model *o)
{
    const al_gnn_arch *a = al_gnn_arch_at(i);
    if (!a) return AL_ERR;
    *o = (al_task_model){a->name, a->summary, 1, a->attention};
    return AL_OK;
}
static al_status seq_at(int i, al_task_model *o)
{
    const al_seq_arch *a = al_seq_arch_at(i);
    if (!a) return AL_ERR;
    *o = (al_task_model){a->name, a->summary, 1, a->attention};
    return AL_OK;
}
static al_status mol_at(int i, al_task_model *o)
{
    const al_molnet_arch *a = al_molnet_arch_at(i);
    if (!a) return AL_ERR;
    *o = (al_task_model){a->name, a->summary, 1, a->attention};
    return AL_OK;
}

static const al_task tasks[AL_TASK_COUNT] = {
    {AL_TASK_IMAGE, "image", "model", "attnlab-image", "fashion-mnist", al_model_arch_count, image_at},
    {AL_TASK_GRAPH, "graph", "gnn", "attnlab-graph", "cora", al_gnn_arch_count, graph_at},
    {AL_TASK_SEQUENCE, "sequence", "seq", "attnlab-sequence", "ud-english-ewt", al_seq_arch_count, seq_at},
    {AL_TASK_SPEECH, "speech", "seq", "attnlab-speech", NULL, al_seq_arch_count, seq_at},
    {AL_TASK_MOLECULE, "molecule", "molnet", "attnlab-molecule", "esol", al_molnet_arch_count, mol_at},
};

const al_task *al_task_find(const char *name)
{
    for (int t = 0; name && t < AL_TASK_COUNT; t++) if (!strcmp(name, tasks[t].name)) return &tasks[t];
    return NULL;
}

const al_task *al_task_at(int i) { return i >= 0 && i < AL_TASK_COUNT ? &tasks[i] : NULL; }

const char *al_task_names(void) { return "image|graph|sequence|speech|molecule"; }

al_status al_task_model_find(const al_task *t, const char *name, al_task_model *out, al_error *err)
{
    al_task_model m;
    char list[512];
    size_t o = 0;
    list[0] = 0;
    for (int i = 0; t && t->model_at(i, &m) == AL_OK; i++) {
        if (name && !strcmp(name, m.name)) { if (out) *out = m; return AL_OK; }
        if (o < sizeof list) o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", m.name);
    }
    if (!t) return al_seterr(err, "no task");
    return al_seterr(err, "unknown %s model '%s' (expected %s)", t->name, name ? name : "(null)", list);
}

const al_task *al_task_of_checkpoint(const char *path, al_error *err)
{
    char *meta = NULL;
    if (al_safetensors_read_meta(path, &meta, err) != AL_OK) return NULL;
    char *task = al_meta_get(meta, "task"), *fmt = al_meta_get(meta, "format");
    const al_task *t = NULL;
    if (task) {
        t = al_task_find(task);
        if (!t) al_seterr(err, "%s: metadata 'task' is '%s', not a task of attnlab (%s)", path, task, al_task_names());
    } else {
        for (int i = 0; fmt && i < AL_TASK_COUNT && !t; i++) if (tasks[i].format && !strcmp(fmt, tasks[i].format)) t = &tasks[i];
        if (!t) t = &tasks[AL_TASK_IMAGE];
    }
    free(task); free(fmt); free(meta);
    return t;
}
