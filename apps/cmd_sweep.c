/* cmd_sweep.c — attnlab sweep (not yet written). */
#include <stdio.h>
#include "cli.h"
int cmd_sweep(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "attnlab sweep: not implemented yet\n");
    return 2;
}
