/* flops.c — the FLOP counter of tensor.h: matmul-class work (2 per multiply-add of the GEMMs,
 * convolutions and attention products) added by the ops that do it, per op and phase. Off unless
 * al_flops_enable(1); one counting thread (the ops add outside their parallel regions). */
#include "attnlab/tensor.h"
#include <string.h>

#define MAXOPS 16
static struct { const char *op; double f[2]; } tab[MAXOPS];
static int nops, enabled;

void al_flops_enable(int on) { enabled = on; }
int al_flops_enabled(void) { return enabled; }
void al_flops_reset(void) { nops = 0; memset(tab, 0, sizeof tab); }
void al_flops_add(const char *op, int phase, double flops)
{
    if (!enabled || phase < 0 || phase > 1) return;
    int i = 0;
    while (i < nops && strcmp(tab[i].op, op)) i++;
    if (i == nops) {
        if (nops == MAXOPS) return;
        tab[nops++].op = op;
    }
    tab[i].f[phase] += flops;
}
int al_flops_count(void) { return nops; }
void al_flops_get(int i, const char **op, double *fwd, double *bwd)
{
    *op = tab[i].op; *fwd = tab[i].f[0]; *bwd = tab[i].f[1];
}
