/* fuzz_results.c — the results-CSV parser, strict and tolerant, and the summary of what it read. */
#include "fuzz_common.h"
#include "attnlab/results.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    char *text = malloc(n + 1);   /* al_results_parse takes a length; the copy catches reads past it */
    if (!text) return 0;
    memcpy(text, d, n); text[n] = 0;
    for (int flags = 0; flags < 2; flags++) {
        al_results r; al_error e = {{0}}; char note[AL_ERRLEN];
        if (al_results_parse_ex(text, n, "fuzz.csv", flags, &r, note, &e) != AL_OK) { if (!e.msg[0]) abort(); continue; }
        for (int k = 0; k < r.nrun; k++) if (al_results_find_run(&r, r.row[r.run[k].first].run_id) < 0) abort();
        al_summary s; al_error e2 = {{0}};
        if (al_results_summarize(&r, &s, &e2) == AL_OK) al_summary_free(&s);
        al_results_free(&r);
    }
    free(text);
    return 0;
}
