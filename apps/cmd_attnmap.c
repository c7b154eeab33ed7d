/* cmd_attnmap.c — attnlab attnmap (not yet written). */
#include <stdio.h>
#include "cli.h"
int cmd_attnmap(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "attnlab attnmap: not implemented yet\n");
    return 2;
}
