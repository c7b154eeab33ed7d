/* seq_opts.h — the options of train --task sequence that speech shares (model flags and training). */
#ifndef ATTNLAB_APPS_SEQ_OPTS_H
#define ATTNLAB_APPS_SEQ_OPTS_H
#include <stdio.h>
#include "attnlab/seq.h"
#include "train_flags.h"

typedef struct sopts {
    const char *model, *data, *csv, *save, *pos, *score, *norm, *rnn, *checkpoint;
    int epochs, batch, eval_batch, threads, train_size, quiet, max_len, window, heads, depth, checkpoint_every, resume;
    int task;                           /* AL_TASK_SEQUENCE or AL_TASK_SPEECH */
    unsigned char seen[TF_NFLAGS];      /* the flags given (train_flags_check_model) */
    const struct al_dist *dist;         /* under mpirun: this rank's share (app_mpi.h) */
    long seed;
    double lr, wd;
} sopts;

/* One option of train_flags.h (f: TF_*) that both tasks take into o (and o->seen); task is the caller's
 * --task name. 0 ok, -1 not one of them, else non-zero bad (one line printed; 2 for --task: the caller
 * returns 2). */
int seq_common_opt(sopts *o, const char *task, int f, const char *arg);
/* The parse loop both tasks share: each option of train_flags.h that the task takes goes to seq_common_opt,
 * or (when that returns -1) to own(ud, f, arg) (0 ok, non-zero bad: one line printed). 0, -1 after --help
 * (usage printed), or the exit status 2. */
int seq_parse(int argc, char **argv, sopts *o, int (*own)(void *ud, int f, const char *arg), void *ud, void (*usage)(FILE *));

/* The model configuration from the options (placeholder vocabulary sizes until the data is read);
 * a flag the model does not take is refused by the table's properties. 0 or the exit status 2. */
int build_seq_config(const sopts *o, al_seq_config *cfg, al_error *err);
#endif
