/* cmd_train.c — attnlab train: dispatch on --task (image is the default). */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "app_mpi.h"

int cmd_train(int argc, char **argv)
{
    const char *task = "image";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--task") && i + 1 < argc) task = argv[i + 1];
        else if (!strncmp(argv[i], "--task=", 7)) task = argv[i] + 7;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (!strcmp(task, "graph")) return train_graph_main(argc, argv);
            if (!strcmp(task, "sequence")) return train_seq_main(argc, argv);
            if (!strcmp(task, "molecule")) return train_mol_main(argc, argv);
            if (!strcmp(task, "speech")) return train_speech_main(argc, argv);
            return train_image_main(argc, argv);
        }
    }
    if (app_mpi_size() > 1 && (!strcmp(task, "graph") || !strcmp(task, "molecule") || !strcmp(task, "speech"))) {
        if (!app_mpi_rank())
            fprintf(stderr, "attnlab train: --task %s trains on one process; data-parallel MPI training is for image and "
                    "sequence (run it without mpirun, or sweep its runs with mpirun)\n", task);
        return 2;
    }
    if (!strcmp(task, "image")) return train_image_main(argc, argv);
    if (!strcmp(task, "graph")) return train_graph_main(argc, argv);
    if (!strcmp(task, "sequence")) return train_seq_main(argc, argv);
    if (!strcmp(task, "molecule")) return train_mol_main(argc, argv);
    if (!strcmp(task, "speech")) return train_speech_main(argc, argv);
    fprintf(stderr, "attnlab train: unknown task '%s' (expected image, graph, sequence, molecule or speech)\n", task);
    return 2;
}
