/* cmd_train.c — attnlab train: dispatch on --task (image is the default) through the task table. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "app_mpi.h"
#include "train_flags.h"

/* What `attnlab train --task T` runs (T: a task of attnlab/task.h), and whether it trains data-parallel under mpirun. */
typedef struct train_task { int (*main)(int argc, char **argv); int mpi; } train_task;
static const train_task tasks[AL_TASK_COUNT] = {
    [AL_TASK_IMAGE] = {train_image_main, 1},
    [AL_TASK_GRAPH] = {train_graph_main, 0},
    [AL_TASK_SEQUENCE] = {train_seq_main, 1},
    [AL_TASK_SPEECH] = {train_speech_main, 0},
    [AL_TASK_MOLECULE] = {train_mol_main, 0},
};

/* "image and sequence": the tasks that train data-parallel. */
static void mpi_tasks(char *buf, size_t n)
{
    int k = 0, total = 0;
    for (int t = 0; t < AL_TASK_COUNT; t++) total += tasks[t].mpi;
    size_t o = 0;
    buf[0] = 0;
    for (int t = 0; t < AL_TASK_COUNT && o < n; t++)
        if (tasks[t].mpi) { o += (size_t)snprintf(buf + o, n - o, "%s%s", !k ? "" : k == total - 1 ? " and " : ", ", al_task_at(t)->name); k++; }
}

int cmd_train(int argc, char **argv)
{
    if (argc <= 1) {   /* nothing named: a usage, not a ten-minute default run */
        fprintf(stderr, "usage: attnlab train --task %s [--data D] [--model M] [OPTIONS]\n"
                        "       attnlab train --data fashion-mnist    (any flag: the image task, its cnn by default)\n"
                        "       attnlab train --task T --help         (the options of task T)\n", al_task_names());
        return 2;
    }
    const char *task = "image";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--task") && i + 1 < argc) task = argv[i + 1];
        else if (!strncmp(argv[i], "--task=", 7)) task = argv[i] + 7;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            const int t = task_find(task);
            return tasks[t < 0 ? AL_TASK_IMAGE : t].main(argc, argv);   /* an unknown task: the image task's help */
        }
    }
    const int t = task_find(task);
    if (t < 0) {
        fprintf(stderr, "attnlab train: unknown task '%s' (expected %s)\n", task, al_task_names());
        return 2;
    }
    if (app_mpi_size() > 1 && !tasks[t].mpi) {
        char par[64];
        mpi_tasks(par, sizeof par);
        if (!app_mpi_rank())
            fprintf(stderr, "attnlab train: --task %s trains on one process; data-parallel MPI training is for %s (run it "
                    "without mpirun, or sweep its runs with mpirun)\n", task, par);
        return 2;
    }
    return tasks[t].main(argc, argv);
}
