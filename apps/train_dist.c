/* train_dist.c — `attnlab train --task image|sequence` under mpirun (app_mpi.h, docs/scale-out.md):
 * every rank runs the same command; rank 0 alone writes the CSV and the checkpoint and prints, the
 * others train their share in silence. Without MPI (or without a launcher) nothing changes. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "app_mpi.h"
#include "cli.h"

int app_train_dist(int states, const char **csv, const char **save, int *quiet, int *threads, const al_dist **dist)
{
    *dist = app_mpi_dist();
    if (!*dist) return 0;
    const int rank = app_mpi_rank(), size = app_mpi_size();
    if (size > 1 && states) {
        if (!rank) fprintf(stderr, "attnlab train: --checkpoint, --checkpoint-every and --resume are for one process; "
                           "not with %d MPI ranks\n", size);
        return 2;
    }
    /* ranks sharing a node share its cores, unless --threads or OMP_NUM_THREADS says otherwise */
    if (*threads <= 0 && !getenv("OMP_NUM_THREADS") && app_mpi_local_size() > 1) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN) / app_mpi_local_size();
        *threads = cores > 1 ? (int)cores : 1;
    }
    if (rank) {
        *csv = NULL; *save = NULL; *quiet = 1;
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) { fflush(stdout); dup2(fd, 1); close(fd); }   /* the summary line: rank 0's */
    } else if (!*quiet)
        fprintf(stderr, "attnlab train: data-parallel over %d MPI rank%s (%d on this node); the gradient is summed "
                "in int64 fixed point, so any rank count gives the same bits\n", size, size == 1 ? "" : "s", app_mpi_local_size());
    return 0;
}
