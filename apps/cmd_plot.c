/* cmd_plot.c — attnlab plot (not yet written). */
#include <stdio.h>
#include "cli.h"
int cmd_plot(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "attnlab plot: not implemented yet\n");
    return 2;
}
