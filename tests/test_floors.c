/* test_floors.c — the floors of src/floors.txt hold (scripts/check-floors.py): no source includes a
 * header of a higher floor, no object calls a symbol of a higher floor, no objects call each other in
 * a circle; and the check is shown to fail on each kind of violation, planted in a copy of the tree
 * (an upward include, a call that crosses floors through a declaration of its own, an upward include
 * in a public header). The objects are those of the build this test binary belongs to (BUILD/src).
 * Also the house sizes (scripts/check-sizes.py): every file of src/ and apps/ at most 700 lines, every
 * function at most 120, and the check failing where they are not. */
#include "testutil.h"
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char build_dir[4096];

/* BUILD of BUILD/tests/test_floors. */
static const char *build(void)
{
    if (!build_dir[0]) {
        char exe[4096];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        assert_true(k > 0);
        exe[k] = 0;
        snprintf(build_dir, sizeof build_dir, "%s", dirname(dirname(exe)));
    }
    return build_dir;
}

/* Runs the check (on the tree at root, with BUILD objs, or without objects when objs is NULL); returns
 * its exit status, its output in out. */
static int check(const char *root, const char *objs, char *out, size_t n)
{
    char cmd[16384], log[512];
    snprintf(log, sizeof log, "%s/check.log", tu_tmpdir());
    snprintf(cmd, sizeof cmd, "scripts/check-floors.py --root '%s' %s%s%s > '%s' 2>&1", root, objs ? "'" : "",
             objs ? objs : "", objs ? "'" : "", log);
    int rc = tu_system(cmd);
    char *s = tu_slurp(log);
    assert_non_null(s);
    snprintf(out, n, "%s", s);
    free(s);
    return rc;
}

/* A copy of src/, include/ and scripts/ in the test's temporary folder; returns its path. */
static const char *copy_tree(void)
{
    static char root[4096];
    snprintf(root, sizeof root, "%s/tree", tu_tmpdir());
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && cp -r src include scripts '%s'/", root, root, root);
    assert_int_equal(tu_system(cmd), 0);
    return root;
}

static void test_the_tree_keeps_its_floors(void **state)
{
    (void)state;
    char out[65536], cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    int rc = check(cwd, build(), out, sizeof out);
    if (rc != 0) fail_msg("scripts/check-floors.py failed:\n%s", out);
    assert_non_null(strstr(out, "no upward include, call or circle"));
}

static void test_a_planted_upward_include_fails(void **state)
{
    (void)state;
    const char *root = copy_tree();
    char cmd[16384], out[65536];
    snprintf(cmd, sizeof cmd, "printf '#include \"attnlab/train.h\"\\n' >> '%s/src/kernels/norm.c'", root);
    assert_int_equal(tu_system(cmd), 0);
    assert_int_not_equal(check(root, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "src/kernels/norm.c:"));
    assert_non_null(strstr(out, "the kernels floor includes attnlab/train.h of the higher train floor"));
    /* in a public header too */
    copy_tree();
    snprintf(cmd, sizeof cmd, "sed -i 's|#include \"tensor.h\"|#include \"tensor.h\"\\n#include \"seq.h\"|' '%s/include/attnlab/ops.h'",
             root);
    assert_int_equal(tu_system(cmd), 0);
    assert_int_not_equal(check(root, NULL, out, sizeof out), 0);
    assert_non_null(strstr(out, "include/attnlab/ops.h:"));
    assert_non_null(strstr(out, "the ops floor includes seq.h of the higher models floor"));
}

/* An object of the kernels floor that declares al_model_train itself (no header of a higher floor is
 * included, so only the symbol check can see it) and calls it. */
static void test_a_planted_call_across_floors_fails(void **state)
{
    (void)state;
    char cmd[65536], out[65536], objs[4096], cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(objs, sizeof objs, "%s/objs", tu_tmpdir());
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && mkdir -p '%s/src' && cp -r '%s/src/'* '%s/src/' && "
             "printf 'int al_model_train(void);\\nint planted(void) { return al_model_train(); }\\n' > '%s/planted.c' && "
             "cc -c '%s/planted.c' -o '%s/src/kernels/planted.o'",
             objs, objs, build(), objs, objs, objs, objs);
    assert_int_equal(tu_system(cmd), 0);
    assert_int_not_equal(check(cwd, objs, out, sizeof out), 0);
    assert_non_null(strstr(out, "kernels/planted.o: the kernels floor calls al_model_train of the higher train floor"));
    /* and a circle: two objects of one floor that call each other */
    snprintf(cmd, sizeof cmd,
             "rm -f '%s/src/kernels/planted.o' && "
             "printf 'int circle_b(void);\\nint circle_a(void) { return circle_b(); }\\n' > '%s/a.c' && "
             "printf 'int circle_a(void);\\nint circle_b(void) { return circle_a(); }\\n' > '%s/b.c' && "
             "cc -c '%s/a.c' -o '%s/src/kernels/circle_a.o' && cc -c '%s/b.c' -o '%s/src/kernels/circle_b.o'",
             objs, objs, objs, objs, objs, objs, objs);
    assert_int_equal(tu_system(cmd), 0);
    assert_int_not_equal(check(cwd, objs, out, sizeof out), 0);
    assert_non_null(strstr(out, "a circle of objects that call each other: kernels/circle_a.o, kernels/circle_b.o"));
}

static void test_the_house_sizes_hold(void **state)
{
    (void)state;
    char out[65536], log[512], cmd[1024];
    snprintf(log, sizeof log, "%s/sizes.log", tu_tmpdir());
    snprintf(cmd, sizeof cmd, "scripts/check-sizes.py > '%s' 2>&1", log);
    int rc = tu_system(cmd);
    char *s = tu_slurp(log);
    assert_non_null(s);
    snprintf(out, sizeof out, "%s", s);
    free(s);
    if (rc != 0) fail_msg("scripts/check-sizes.py:\n%s", out);
    /* the same tree against smaller limits: a file and a function over them are named */
    snprintf(cmd, sizeof cmd, "scripts/check-sizes.py --max-file 300 --max-function 60 > '%s' 2>&1", log);
    assert_int_not_equal(tu_system(cmd), 0);
    s = tu_slurp(log);
    assert_non_null(s);
    if (!strstr(s, "src/attention/win16.c: ") || !strstr(s, "lines, over 60")) fail_msg("not reported:\n%s", s);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_tree_keeps_its_floors),
        cmocka_unit_test(test_a_planted_upward_include_fails),
        cmocka_unit_test(test_a_planted_call_across_floors_fails),
        cmocka_unit_test(test_the_house_sizes_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
