/* train_graph.c — not yet written. */
#include <stdio.h>
#include "cli.h"
int train_graph_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "attnlab: %s: not implemented yet\n", argv[0]);
    return 2;
}
