/* attnlab/task.h — the tasks attnlab trains, in one table: image classification, graph node
 * classification, sequence tagging, speech (frames of utterances), molecule property prediction. Each
 * entry names the task (the --task value and the "task" key of its checkpoints), its model family (the
 * prefix of the family's library names: models.h, gnn.h, seq.h, molnet.h), its default data, and lists
 * the family's models. The command-line tool dispatches train, eval, predict, attnmap and sweep through it.
 *
 *   const al_task *t = al_task_of_checkpoint("model.safetensors", &err);   // which task wrote it
 *   for (int i = 0; i < t->model_count(); i++) { al_task_model m; t->model_at(i, &m); puts(m.name); }
 */
#ifndef ATTNLAB_TASK_H
#define ATTNLAB_TASK_H
#include "tensor.h"

/* Appended in this order: a task's number never changes (checkpoints and CSVs name the task). */
typedef enum { AL_TASK_IMAGE, AL_TASK_GRAPH, AL_TASK_SEQUENCE, AL_TASK_SPEECH, AL_TASK_MOLECULE, AL_TASK_COUNT } al_task_id;

/* One model of a task, as the task's family table describes it. */
typedef struct al_task_model {
    const char *name, *summary;
    int trainable;          /* 0: built from another model's checkpoint and evaluated only (image conv-attn) */
    int attention;          /* 1: attention layers (--heads applies) */
} al_task_model;

typedef struct al_task {
    al_task_id id;
    const char *name;           /* "image", "graph", "sequence", "speech", "molecule" */
    const char *family;         /* "model", "gnn", "seq", "molnet": al_<family>_arch, _init, _save, ... */
    const char *format;         /* the checkpoint's "format" key ("attnlab-image", ...), NULL if none */
    const char *default_data;   /* the data train and sweep use when none is given; NULL: the task needs one */
    int (*model_count)(void);   /* models of the family's table */
    al_status (*model_at)(int i, al_task_model *out);   /* AL_ERR outside [0, model_count()) */
} al_task;

const al_task *al_task_find(const char *name);   /* NULL if unknown */
const al_task *al_task_at(int i);                /* 0 <= i < AL_TASK_COUNT (i == id), else NULL */
const char    *al_task_names(void);              /* "image|graph|sequence|speech|molecule" */
/* Model `name` of task t into out (may be NULL): AL_OK, or AL_ERR with err naming the task's models. */
al_status al_task_model_find(const al_task *t, const char *name, al_task_model *out, al_error *err);
/* The task that wrote checkpoint `path`: its metadata's "task" key; without one, its "format" key
 * (sequence and speech checkpoints of attnlab 0.5), else image (checkpoints of attnlab < 0.5 and
 * those other tools write with the image keys only). NULL with err set if the file's metadata cannot
 * be read or names a task attnlab does not have. */
const al_task *al_task_of_checkpoint(const char *path, al_error *err);
#endif
