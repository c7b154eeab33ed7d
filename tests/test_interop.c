/* test_interop.c — checkpoints load in PyTorch: cnn, sa and local are trained briefly, evaluated with
 * `eval --logits` on 256 test images, and scripts/torch_interop.py rebuilds each as the equivalent
 * PyTorch module from the checkpoint alone and compares the logits (max |Δ| <= 1e-4). Skipped, with
 * a message, when Debian's python3 has no torch (scripts/install-deps.sh --bench installs it). */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *py(void) { return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3"; }


static void check_model(const char *dir, const char *model)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s train --model %s --train-size 300 --test-size 100 --epochs 1 --seed 3 --quiet "
             "--save %s/%s.safetensors > /dev/null 2> %s/err.txt", tu_attnlab_bin(), model, dir, model, dir);
    assert_int_equal(tu_system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s eval --load %s/%s.safetensors --test-size 256 --logits %s/%s.csv --quiet > /dev/null",
             tu_attnlab_bin(), dir, model, dir, model);
    assert_int_equal(tu_system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s scripts/torch_interop.py %s/%s.safetensors %s/%s.csv --tol 1e-4 > %s/interop.txt 2>&1",
             py(), dir, model, dir, model, dir);
    int rc = tu_system(cmd);
    char path[600]; snprintf(path, sizeof path, "%s/interop.txt", dir);
    char line[512] = "";
    FILE *f = fopen(path, "r");
    if (f) { if (!fgets(line, sizeof line, f)) line[0] = 0; fclose(f); }
    fprintf(stderr, "%s", line);   /* e.g. "torch_interop: cnn 256 images, max |logit attnlab - torch| = 1.9e-06 ..." */
    if (rc != 0) fail_msg("torch_interop.py on %s exited %d: %s", model, rc, line);
    assert_non_null(strstr(line, "256 images"));
}

static void test_checkpoints_load_in_pytorch(void **state)
{
    (void)state;
    char probe[256]; snprintf(probe, sizeof probe, "%s -c 'import torch, numpy' > /dev/null 2>&1", py());
    if (tu_system(probe) != 0) { fprintf(stderr, "skipped: %s has no torch/numpy (scripts/install-deps.sh --bench)\n", py()); skip(); }
    char dir[] = "/tmp/attnlab-interop-XXXXXX";
    assert_non_null(mkdtemp(dir));
    check_model(dir, "cnn");
    check_model(dir, "sa");
    check_model(dir, "local");
    char cmd[256]; snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(tu_system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_checkpoints_load_in_pytorch)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
