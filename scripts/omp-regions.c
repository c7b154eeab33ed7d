/* omp-regions.c — an LD_PRELOAD wrapper around libgomp's GOMP_parallel entry points (scripts/omp-regions.sh
 * builds and runs it): for each parallel region's outlined function it adds up the calls, the region's
 * wall time, each of the first two threads' busy time inside it (so the time it waited at the closing
 * barrier), how late each thread started, and the time since the previous region ended (the serial
 * code between regions). Written at exit to WRAP_OUT as "offset dso calls wall .. busy0 .. busy1 ..
 * lag0 .. lag1 .. gap ..", offsets relative to the binary for addr2line. Active when WRAP_ON is set.
 * A measuring aid, not part of the library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct { void (*fn)(void*); void *data; double t0[8], t1[8]; } tramp;
static void tr(void *p){ tramp *t=p; int i=omp_get_thread_num(); t->t0[i]=now(); t->fn(t->data); t->t1[i]=now(); }
#define NF 512
static struct { void *fn; long n; double wall, busy[2], lag[2], gap; } st[NF];
static int nst; static double last_end; static int on;
static void rec(void *fn, tramp *t, double c0, double c1, unsigned nt){
  if(!on) return;
  int k; for(k=0;k<nst;k++) if(st[k].fn==fn) break;
  if(k==nst){ if(nst==NF) return; st[nst++].fn=fn; }
  st[k].n++; st[k].wall+=c1-c0; if(last_end>0) st[k].gap+=c0-last_end;
  for(unsigned i=0;i<nt&&i<2;i++){ if(t->t1[i]>0){ st[k].busy[i]+=t->t1[i]-t->t0[i]; st[k].lag[i]+=t->t0[i]-c0; } }
  last_end=c1;
}
typedef void (*gp_t)(void (*)(void*), void*, unsigned, unsigned);
void GOMP_parallel(void (*fn)(void*), void *data, unsigned nt, unsigned flags){
  static gp_t real; if(!real) real=(gp_t)dlsym(RTLD_NEXT,"GOMP_parallel");
  tramp t={fn,data,{0},{0}}; double c0=now(); real(tr,&t,nt,flags); double c1=now();
  rec((void*)fn,&t,c0,c1,nt?nt:2);
}
typedef void (*gl_t)(void (*)(void*), void*, unsigned, long, long, long, long, unsigned);
#define LOOPW(NAME) void NAME(void (*fn)(void*), void *data, unsigned nt, long s, long e, long inc, long ch, unsigned fl){ \
  static gl_t real; if(!real) real=(gl_t)dlsym(RTLD_NEXT,#NAME); \
  tramp t={fn,data,{0},{0}}; double c0=now(); real(tr,&t,nt,s,e,inc,ch,fl); double c1=now(); rec((void*)fn,&t,c0,c1,nt?nt:2); }
LOOPW(GOMP_parallel_loop_dynamic)
LOOPW(GOMP_parallel_loop_nonmonotonic_dynamic)
LOOPW(GOMP_parallel_loop_static)
LOOPW(GOMP_parallel_loop_guided)
__attribute__((constructor)) static void init(void){ on = getenv("WRAP_ON") != NULL; }
__attribute__((destructor)) static void fini(void){
  if(!on) return;
  FILE *f=fopen(getenv("WRAP_OUT")?getenv("WRAP_OUT"):"/tmp/wrap.txt","w");
  for(int k=0;k<nst;k++){ Dl_info di; dladdr(st[k].fn,&di);
    fprintf(f,"%lx %s %ld wall %.4f busy0 %.4f busy1 %.4f lag0 %.4f lag1 %.4f gap %.4f\n",(unsigned long)((char*)st[k].fn-(char*)di.dli_fbase), di.dli_fname, st[k].n, st[k].wall, st[k].busy[0], st[k].busy[1], st[k].lag[0], st[k].lag[1], st[k].gap); }
  fclose(f);
}
