/* fuzz_conllu.c — the CoNLL-U reader (plain or gzip) and the sentence formatter on what it read.
 * Input: [flags] TEXT; flags bit 0 gzip, bit 1 untagged input allowed, bits 2.. max_len. */
#include "fuzz_common.h"
#include "attnlab/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    if (n < 1) return 0;
    const char *path = fz_path("x.conllu");
    fz_write(path, d + 1, n - 1, d[0] & 1);
    al_conllu_opts o = {(d[0] >> 2) & 63, (d[0] >> 1) & 1};
    al_conllu c; al_error e = {{0}};
    if (al_conllu_read(path, &o, &c, &e) != AL_OK) { if (!e.msg[0]) abort(); return 0; }
    if (c.nsent < 1 || c.ntok < 1) abort();
    for (int s = 0; s < c.nsent; s++) {
        int a = c.sent_start[s], b = c.sent_start[s + 1];
        if (b <= a || b > c.ntok) abort();
    }
    al_conllu_free(&c);
    return 0;
}
