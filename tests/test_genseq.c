/* test_genseq.c — the generated sequence tasks (text.h): the spec parser; associative recall (every query
 * is a key of the context, seen once, and its label is the value token right after it; everything else
 * unlabelled) and selective copy (the j-th marker is labelled with the j-th value of the context); the
 * same seed gives the same sequences, another seed others. */
#include "testutil.h"
#include "attnlab/text.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_parse(void **st)
{
    (void)st;
    al_gen_seq_cfg g; al_error e = {{0}};
    assert_int_equal(al_gen_seq_parse("recall:64", &g, &e), 0);
    assert_int_equal(g.kind, 0); assert_int_equal(g.len, 64); assert_int_equal(g.pairs, 4); assert_int_equal(g.queries, 4);
    assert_int_equal(al_gen_seq_parse("copy:9", &g, &e), 0);
    assert_int_equal(g.kind, 1);
    assert_int_equal(al_gen_seq_parse("ud-english-ewt", &g, &e), 1);
    const char *bad[] = {"recall:", "recall:11", "recall:x", "copy:7", "recall:100001", "recall:64k"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        if (al_gen_seq_parse(bad[i], &g, &e) != -1 || !strstr(e.msg, "--data")) fail_msg("'%s' not refused (%s)", bad[i], e.msg);
    }
}

static void test_recall(void **st)
{
    (void)st;
    al_gen_seq_cfg g; al_error e = {{0}};
    const int lens[] = {12, 16, 256};
    for (int li = 0; li < 3; li++) {
        char spec[32]; snprintf(spec, sizeof spec, "recall:%d", lens[li]);
        assert_int_equal(al_gen_seq_parse(spec, &g, &e), 0);
        al_conllu d, d2, d3;
        assert_int_equal(al_gen_seq(&g, 50, 3, &d, &e), AL_OK);
        assert_int_equal(al_gen_seq(&g, 50, 3, &d2, &e), AL_OK);
        assert_int_equal(al_gen_seq(&g, 50, 4, &d3, &e), AL_OK);
        assert_int_equal(d.nsent, 50); assert_int_equal(d.ntok, 50 * lens[li]); assert_int_equal(d.max_sent_len, lens[li]);
        int differ = 0;
        for (int s = 0; s < 50; s++) {
            const int a = d.sent_start[s], L = d.sent_start[s + 1] - a, ctx = L - 4;
            assert_int_equal(L, lens[li]);
            for (int i = 0; i < L; i++) {
                assert_string_equal(d.form[a + i], d2.form[a + i]);
                assert_int_equal(d.tag[a + i], d2.tag[a + i]);
                differ += strcmp(d.form[a + i], d3.form[a + i]) != 0;
                if (i < ctx) assert_int_equal(d.tag[a + i], -1);
            }
            for (int q = 0; q < 4; q++) {
                const char *key = d.form[a + ctx + q];
                assert_true(key[0] == 'k');
                int seen = 0, at = -1;
                for (int i = 0; i < ctx; i++) if (!strcmp(d.form[a + i], key)) { seen++; at = i; }
                assert_int_equal(seen, 1);
                assert_true(at + 1 < ctx && d.form[a + at + 1][0] == 'v');
                assert_int_equal(atoi(d.form[a + at + 1] + 1), d.tag[a + ctx + q]);
                for (int p = 0; p < q; p++) assert_string_not_equal(d.form[a + ctx + p], key);
            }
        }
        assert_true(differ > 0);
        al_conllu_free(&d); al_conllu_free(&d2); al_conllu_free(&d3);
    }
}

static void test_copy(void **st)
{
    (void)st;
    al_gen_seq_cfg g; al_error e = {{0}};
    assert_int_equal(al_gen_seq_parse("copy:40", &g, &e), 0);
    al_conllu d;
    assert_int_equal(al_gen_seq(&g, 30, 9, &d, &e), AL_OK);
    for (int s = 0; s < 30; s++) {
        const int a = d.sent_start[s], ctx = 36;
        int vals[8], nv = 0;
        for (int i = 0; i < ctx; i++) {
            assert_int_equal(d.tag[a + i], -1);
            if (d.form[a + i][0] == 'v') vals[nv++] = atoi(d.form[a + i] + 1);
            else assert_string_equal(d.form[a + i], "x");
        }
        assert_int_equal(nv, 4);
        for (int q = 0; q < 4; q++) { assert_string_equal(d.form[a + ctx + q], "?"); assert_int_equal(d.tag[a + ctx + q], vals[q]); }
    }
    al_conllu_free(&d);
    g.pairs = 65;
    assert_int_equal(al_gen_seq(&g, 1, 1, &d, &e), AL_ERR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_recall),
        cmocka_unit_test(test_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
