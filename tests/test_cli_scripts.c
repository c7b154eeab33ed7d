/* test_cli_scripts.c — the CLI test scripts, each run against $ATTNLAB_BIN (the ASan build under make
 * asan) from the repository root, as `make check` runs it:
 *   tests/readme_commands.sh  every bin/attnlab command of the README's code blocks exits 0, with tiny
 *                             sizes, so the README cannot drift from the program;
 *   scripts/bad-inputs.sh     every case of the bad-input corpus (tests/bad-inputs/) is one clear error
 *                             line, without a signal or a timeout, under 2 GiB and 10 s;
 *   tests/cli_paths.sh        one tiny real run of every command path (image and graph training, eval,
 *                             predict, attnmap, sweep, summarize, plot, sequences, data import);
 *   tests/bench_summary.sh    make bench's acceptance summary (targets in scripts/bench-targets.tsv) read
 *                             back from a saved run's tables prints what that run printed. */
#include "testutil.h"

static void test_every_readme_command_runs(void **state)
{
    (void)state;
    tu_script_passes("tests/readme_commands.sh");
}

static void test_every_bad_input_is_one_clear_error(void **state)
{
    (void)state;
    tu_script_passes("scripts/bad-inputs.sh");
}

static void test_every_command_path_runs(void **state)
{
    (void)state;
    tu_script_passes("tests/cli_paths.sh");
}

static void test_bench_summary_reads_a_saved_run(void **state)
{
    (void)state;
    tu_script_passes("tests/bench_summary.sh");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_bad_input_is_one_clear_error),
        cmocka_unit_test(test_every_command_path_runs),
        cmocka_unit_test(test_every_readme_command_runs),
        cmocka_unit_test(test_bench_summary_reads_a_saved_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
