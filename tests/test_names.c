/* test_names.c — the task table (attnlab/task.h) and one naming scheme across the model families (al_<family>_arch, _arch_find/_count/_at/
 * _names, _config, _config_default, _init, _forward, _train, _evaluate, _save, _load; families model
 * (images), gnn, seq, molnet), and the names of 0.5 it replaced: each still links and gives what its new
 * name gives, and a program using one is told the new name by the compiler. */
#include "testutil.h"
#include "attnlab/attnlab.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void test_every_family_has_the_same_table_verbs(void **state)
{
    (void)state;
    assert_true(al_model_arch_count() > 0 && al_gnn_arch_count() > 0 && al_seq_arch_count() > 0 && al_molnet_arch_count() > 0);
    for (int i = 0; i < al_model_arch_count(); i++) {
        const al_model_arch *a = al_model_arch_at(i);
        assert_ptr_equal(al_model_arch_find(a->name), a);
        assert_non_null(strstr(al_model_arch_names(), a->name));
    }
    for (int i = 0; i < al_gnn_arch_count(); i++) assert_ptr_equal(al_gnn_arch_find(al_gnn_arch_at(i)->name), al_gnn_arch_at(i));
    for (int i = 0; i < al_seq_arch_count(); i++) assert_ptr_equal(al_seq_arch_find(al_seq_arch_at(i)->name), al_seq_arch_at(i));
    for (int i = 0; i < al_molnet_arch_count(); i++)
        assert_ptr_equal(al_molnet_arch_find(al_molnet_arch_at(i)->name), al_molnet_arch_at(i));
    assert_null(al_model_arch_at(al_model_arch_count()));
    assert_null(al_gnn_arch_find("cnn"));
    assert_null(al_molnet_arch_find("rnn"));
}

static void test_config_default_takes_a_name_in_every_family(void **state)
{
    (void)state;
    al_error err = {{0}};
    al_gnn_config g;
    assert_int_equal(al_gnn_config_default(&g, "gcn", &err), AL_OK);
    assert_int_equal(g.kind, AL_GNN_GCN);
    assert_int_equal(g.hidden, 16);
    assert_int_equal(al_gnn_config_default(&g, "cnn", &err), AL_ERR);
    assert_non_null(strstr(err.msg, "unknown graph model 'cnn'"));
    al_molnet_config mc;
    memset(&err, 0, sizeof err);
    assert_int_equal(al_molnet_config_default(&mc, "fingerprint", &err), AL_OK);
    assert_string_equal(mc.model, "fingerprint");
    assert_int_equal(mc.hidden, 256);
    assert_int_equal(al_molnet_config_default(&mc, "gcnn", &err), AL_ERR);
    assert_non_null(strstr(err.msg, "unknown molecule model 'gcnn'"));
    al_model_config ic;
    assert_int_equal(al_model_config_default(&ic, "cnn", 1, 28, 28, 10, &err), AL_OK);
    al_seq_config sc;
    assert_int_equal(al_seq_config_default(&sc, "rnn", 100, 10, 17, &err), AL_OK);
}

/* The old names: the same entries, the same defaults, bit for bit. */
static void test_the_old_names_give_what_the_new_ones_give(void **state)
{
    (void)state;
    assert_int_equal(al_model_kind_count(), al_model_arch_count());
    assert_ptr_equal(al_model_kind_find("local"), al_model_arch_find("local"));
    assert_ptr_equal(al_model_kind_at(1), al_model_arch_at(1));
    assert_string_equal(al_model_names(), al_model_arch_names());
    assert_ptr_equal(al_gnn_model_find("gat"), al_gnn_arch_find("gat"));
    assert_int_equal(al_gnn_model_count(), al_gnn_arch_count());
    assert_ptr_equal(al_gnn_model_at(2), al_gnn_arch_at(2));
    assert_string_equal(al_gnn_names(), al_gnn_arch_names());
    assert_ptr_equal(al_seq_kind_find("trunc"), al_seq_arch_find("trunc"));
    assert_int_equal(al_seq_kind_count(), al_seq_arch_count());
    assert_ptr_equal(al_seq_kind_at(0), al_seq_arch_at(0));
    assert_string_equal(al_seq_names(), al_seq_arch_names());
    assert_ptr_equal(al_mol_model_find("gt"), al_molnet_arch_find("gt"));
    assert_int_equal(al_mol_model_count(), al_molnet_arch_count());
    assert_ptr_equal(al_mol_model_at(3), al_molnet_arch_at(3));
    assert_string_equal(al_mol_model_names(), al_molnet_arch_names());
    for (int k = AL_GNN_GAT; k <= AL_GNN_GT_FULL; k++) {
        al_gnn_cfg a; al_gnn_config b;
        memset(&a, 0xa5, sizeof a); memset(&b, 0x5a, sizeof b);
        al_gnn_defaults(&a, (al_gnn_kind)k);
        assert_int_equal(al_gnn_config_default(&b, al_gnn_kind_name((al_gnn_kind)k), NULL), AL_OK);
        assert_memory_equal(&a, &b, sizeof a);
    }
    for (int i = 0; i < al_molnet_arch_count(); i++) {
        al_molnet_cfg a; al_molnet_config b;
        memset(&a, 0xa5, sizeof a); memset(&b, 0x5a, sizeof b);
        al_molnet_defaults(&a, al_mol_model_at(i));
        assert_int_equal(al_molnet_config_default(&b, al_molnet_arch_at(i)->name, NULL), AL_OK);
        assert_memory_equal(&a, &b, sizeof a);
    }
    al_model_kind *k = NULL; al_gnn_model *g = NULL; al_seq_kind *s = NULL; al_mol_model *m = NULL;
    (void)k; (void)g; (void)s; (void)m;
}

/* A program that uses an old name compiles, and the compiler's warning names the new one. */
static void test_an_old_name_warns_with_its_new_name(void **state)
{
    (void)state;
    char src[4096], log[4096], cmd[16384];
    snprintf(src, sizeof src, "%s/old.c", tu_tmpdir());
    snprintf(log, sizeof log, "%s/old.log", tu_tmpdir());
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs("#include \"attnlab/attnlab.h\"\n"
          "int main(void) { al_gnn_cfg c; al_gnn_defaults(&c, AL_GNN_GAT); return !al_model_kind_find(\"cnn\"); }\n", f);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "${CC:-cc} -std=c11 -fsyntax-only -Wall -Iinclude '%s' > '%s' 2>&1", src, log);
    assert_int_equal(tu_system(cmd), 0);                      /* compiles: warnings only */
    char *out = tu_slurp(log);
    assert_non_null(out);
    assert_non_null(strstr(out, "renamed al_gnn_config"));
    assert_non_null(strstr(out, "renamed al_gnn_config_default"));
    assert_non_null(strstr(out, "renamed al_model_arch_find"));
    free(out);
    snprintf(cmd, sizeof cmd, "${CC:-cc} -std=c11 -fsyntax-only -Werror=deprecated-declarations -Iinclude '%s' > '%s' 2>&1",
             src, log);
    assert_int_not_equal(tu_system(cmd), 0);
}

/* The task table: names, ids, each task's models exactly its family's table, the checkpoint's task. */
static void test_the_task_table_lists_each_family(void **state)
{
    (void)state;
    const char *names[] = {"image", "graph", "sequence", "speech", "molecule"};
    int (*const count[])(void) = {al_model_arch_count, al_gnn_arch_count, al_seq_arch_count, al_seq_arch_count,
                                  al_molnet_arch_count};
    char all[128] = "";
    for (int i = 0; i < AL_TASK_COUNT; i++) {
        const al_task *t = al_task_at(i);
        assert_non_null(t);
        assert_int_equal(t->id, i);
        assert_string_equal(t->name, names[i]);
        assert_ptr_equal(al_task_find(names[i]), t);
        assert_int_equal(t->model_count(), count[i]());
        al_task_model m;
        for (int k = 0; k < t->model_count(); k++) {
            assert_int_equal(t->model_at(k, &m), AL_OK);
            al_task_model f;
            assert_int_equal(al_task_model_find(t, m.name, &f, NULL), AL_OK);
            assert_string_equal(f.name, m.name);
        }
        assert_int_equal(t->model_at(t->model_count(), &m), AL_ERR);
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? "|" : "", names[i]);
    }
    assert_string_equal(al_task_names(), all);
    assert_null(al_task_at(AL_TASK_COUNT));
    assert_null(al_task_find("text"));
    al_task_model m;
    assert_int_equal(al_task_model_find(al_task_at(AL_TASK_IMAGE), "conv-attn", &m, NULL), AL_OK);
    assert_int_equal(m.trainable, 0);                        /* built from a cnn, evaluated only */
    assert_int_equal(al_task_model_find(al_task_at(AL_TASK_GRAPH), "gat", &m, NULL), AL_OK);
    assert_true(m.trainable && m.attention);
    al_error err = {{0}};
    assert_int_equal(al_task_model_find(al_task_at(AL_TASK_MOLECULE), "cnn", &m, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "unknown molecule model 'cnn' (expected gat, "));
}

/* A metadata-only checkpoint at dir/name (kv pairs), its path in out. */
static const char *meta_file(const char *name, const char *const *kv, int nkv, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", tu_tmpdir(), name);
    float v = 1.f;
    al_st_array a = {"w", AL_ST_F32, 1, {1}, &v};
    al_error err = {{0}};
    assert_int_equal(al_safetensors_write(out, &a, 1, kv, nkv, &err), AL_OK);
    return out;
}

static void test_a_checkpoint_names_its_task(void **state)
{
    (void)state;
    char p[4096];
    al_error err = {{0}};
    const char *graph[] = {"task", "graph", "model", "gat"};
    assert_int_equal(al_task_of_checkpoint(meta_file("g.safetensors", graph, 2, p, sizeof p), &err)->id, AL_TASK_GRAPH);
    const char *seq[] = {"format", "attnlab-sequence"};     /* no task key: the format says */
    assert_int_equal(al_task_of_checkpoint(meta_file("s.safetensors", seq, 1, p, sizeof p), &err)->id, AL_TASK_SEQUENCE);
    const char *speech[] = {"format", "attnlab-speech", "task", "speech"};
    assert_int_equal(al_task_of_checkpoint(meta_file("a.safetensors", speech, 2, p, sizeof p), &err)->id, AL_TASK_SPEECH);
    const char *old[] = {"model", "cnn"};                    /* neither: an image checkpoint */
    assert_int_equal(al_task_of_checkpoint(meta_file("i.safetensors", old, 1, p, sizeof p), &err)->id, AL_TASK_IMAGE);
    assert_string_equal(err.msg, "");
    const char *bad[] = {"task", "text"};
    assert_null(al_task_of_checkpoint(meta_file("t.safetensors", bad, 1, p, sizeof p), &err));
    assert_non_null(strstr(err.msg, "t.safetensors: metadata 'task' is 'text', not a task of attnlab (image|graph|"));
    memset(&err, 0, sizeof err);
    snprintf(p, sizeof p, "%s/missing.safetensors", tu_tmpdir());
    assert_null(al_task_of_checkpoint(p, &err));
    assert_non_null(strstr(err.msg, "missing.safetensors"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_task_table_lists_each_family),
        cmocka_unit_test(test_a_checkpoint_names_its_task),
        cmocka_unit_test(test_every_family_has_the_same_table_verbs),
        cmocka_unit_test(test_config_default_takes_a_name_in_every_family),
        cmocka_unit_test(test_the_old_names_give_what_the_new_ones_give),
        cmocka_unit_test(test_an_old_name_warns_with_its_new_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
