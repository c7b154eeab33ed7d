/* test_readme.c — every bin/attnlab command of the README's code blocks runs and exits 0, with tiny
 * sizes (tests/readme_commands.sh says how it shrinks them), so the README cannot drift from the
 * program. Run from the repository root (as `make test` does). */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static void test_every_readme_command_runs(void **state)
{
    (void)state;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "tests/readme_commands.sh %s > /tmp/attnlab-readme.log 2>&1", tu_attnlab_bin());
    int rc = system(cmd);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
        (void)!system("cat /tmp/attnlab-readme.log >&2");
        fail_msg("a README command failed (log above)");
    }
    (void)!system("tail -1 /tmp/attnlab-readme.log >&2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_readme_command_runs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
