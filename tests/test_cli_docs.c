/* test_cli_docs.c — the documentation that ships with the program matches it: every option that any
 * `attnlab ... --help` prints appears in the man page docs/attnlab.1 (regenerate it with
 * scripts/gen-manpage.sh), every command of `attnlab --help` has a section there, `--version`
 * answers; and the numpy checkpoint reader (scripts/attnlab_checkpoint.py) reads a checkpoint that
 * `train --save` wrote, tensor for tensor; the code excerpts of docs/architecture.md's guides are the
 * tree's own code, word for word (scripts/check-doc-examples.py), and the check fails on an excerpt
 * that is not. Run from the repository root (as `make test` does). */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *slurp_cmd(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t r;
    while ((r = fread(b + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (n + 1 == cap) b = realloc(b, cap *= 2);
    }
    b[n] = 0;
    pclose(p);
    return b;
}

/* Every "--word" of `attnlab ARGS --help` must stand in the man page (as "\-\-word"). */
static void check_help_in_man(const char *man, const char *args)
{
    char cmd[512]; snprintf(cmd, sizeof cmd, "%s %s --help 2>&1", tu_attnlab_bin(), args);
    char *help = slurp_cmd(cmd);
    assert_non_null(help);
    assert_true(strlen(help) > 40);
    int n = 0;
    for (const char *s = help; (s = strstr(s, "--")); ) {
        const char *e = s + 2;
        while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || (*e == '-' && e[1] != '-')) e++;
        if (e - s > 3) {
            char esc[128] = "", *o = esc;
            for (const char *t = s; t < e && o < esc + sizeof esc - 3; t++) {
                if (*t == '-') *o++ = '\\';
                *o++ = *t;
            }
            *o = 0;
            if (!strstr(man, esc)) fail_msg("docs/attnlab.1 lacks option %.*s of `attnlab %s --help` "
                                            "(run scripts/gen-manpage.sh > docs/attnlab.1)", (int)(e - s), s, args);
            n++;
        }
        s = e;
    }
    assert_true(n > 0 || !strcmp(args, "summarize") || !strcmp(args, "bench"));
    /* and every line fits a terminal of 100 columns (characters, not UTF-8 bytes) */
    int col = 0, line = 1;
    for (const unsigned char *t = (const unsigned char *)help; *t; t++) {
        if (*t == '\n') { col = 0; line++; continue; }
        if ((*t & 0xc0) != 0x80 && ++col > 100) fail_msg("line %d of `attnlab %s --help` is wider than 100 columns", line, args);
    }
    free(help);
}

static void test_manpage_covers_every_command_and_option(void **state)
{
    (void)state;
    char *man = tu_slurp("docs/attnlab.1");
    assert_non_null(man);
    assert_true(strlen(man) > 1000);
    char cmd[512]; snprintf(cmd, sizeof cmd, "%s --help 2>&1", tu_attnlab_bin());
    char *top = slurp_cmd(cmd);
    assert_non_null(strstr(top, "commands:"));
    int ncmd = 0;
    for (char *line = strtok(strstr(top, "commands:"), "\n"); line; line = strtok(NULL, "\n")) {
        char name[64];
        if (strncmp(line, "  ", 2) || sscanf(line, "  %63s", name) != 1 || line[2] == ' ') continue;
        char sect[128]; snprintf(sect, sizeof sect, ".SS attnlab %s", name);
        if (!strstr(man, sect)) fail_msg("docs/attnlab.1 has no section for command '%s'", name);
        ncmd++;
    }
    free(top);
    assert_true(ncmd >= 7);
    static const char *const helps[] = {"train", "train --task graph", "eval", "sweep", "summarize", "plot",
                                        "attnmap", "bench", "bench gemm", "bench attention", "bench train",
                                        "bench graph", "bench seq", "bench speech", "data import", "data speech-digits", "data audio-stats",
                                        "train --task sequence", "train --task molecule", "train --task speech",
                                        "predict", "tag", "data", ""};
    for (size_t i = 0; i < sizeof helps / sizeof *helps; i++) check_help_in_man(man, helps[i]);
    free(man);
}

static void test_version(void **state)
{
    (void)state;
    char cmd[512]; snprintf(cmd, sizeof cmd, "%s --version 2>&1", tu_attnlab_bin());
    char *v = slurp_cmd(cmd);
    assert_non_null(v);
    assert_non_null(strstr(v, "attnlab "));
    assert_non_null(strstr(v, "MPI "));
    free(v);
}

static void test_python_checkpoint_reader(void **state)
{
    (void)state;
    /* Debian's python3 (with python3-numpy from scripts/install-deps.sh), not a user's pyenv shim */
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    char probe[256]; snprintf(probe, sizeof probe, "%s -c 'import numpy' > /dev/null 2>&1", py);
    if (system(probe) != 0) { fprintf(stderr, "skipped: %s has no numpy\n", py); skip(); }
    char tmpl[] = "/tmp/attnlab-docs-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s train --model cnn --train-size 100 --test-size 100 --epochs 1 --quiet "
             "--save %s/m.safetensors > /dev/null 2>&1", tu_attnlab_bin(), tmpl);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s scripts/attnlab_checkpoint.py %s/m.safetensors 2>&1", py, tmpl);
    char *out = slurp_cmd(cmd);
    assert_non_null(out);
    if (!strstr(out, "6 tensors, 50186 values") || !strstr(out, "tensor c1.weight [32, 1, 3, 3] float32") ||
        !strstr(out, "meta  model = cnn"))
        fail_msg("attnlab_checkpoint.py output:\n%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    assert_int_equal(system(cmd), 0);
}

static void test_architecture_guides_quote_the_tree(void **state)
{
    (void)state;
    char *out = slurp_cmd("scripts/check-doc-examples.py docs/architecture.md 2>&1");
    assert_non_null(out);
    if (!strstr(out, "excerpts, each the tree's own code")) fail_msg("check-doc-examples.py:\n%s", out);
    free(out);
    /* an excerpt that drifted from its file (a field of the mlp entry left out) is caught */
    char tmpl[] = "/tmp/attnlab-docs-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sed 's/al__mlp_forward, NULL, NULL, NULL},/al__mlp_forward},/' docs/architecture.md > %s/a.md", tmpl);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "scripts/check-doc-examples.py %s/a.md 2>&1", tmpl);
    out = slurp_cmd(cmd);
    assert_non_null(out);
    if (!strstr(out, "not in src/models/image.c (in this order): al__mlp_defaults, al__mlp_check, al__mlp_init, al__mlp_forward},"))
        fail_msg("a drifted excerpt was not reported:\n%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manpage_covers_every_command_and_option),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_python_checkpoint_reader),
        cmocka_unit_test(test_architecture_guides_quote_the_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
