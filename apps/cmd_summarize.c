/* cmd_summarize.c — attnlab summarize (not yet written). */
#include <stdio.h>
#include "cli.h"
int cmd_summarize(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "attnlab summarize: not implemented yet\n");
    return 2;
}
