/* cmd_eval.c — attnlab eval (not yet written). */
#include <stdio.h>
#include "cli.h"
int cmd_eval(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "attnlab eval: not implemented yet\n");
    return 2;
}
