/* The driver's own launch floor, without Python: cuLaunchKernel against cuLaunchKernelEx, with
 * 0 and 12 u64 parameters, on the legacy and on a created stream; per launch, the CPU time of
 * the issuing loop, the time to completion and the GPU's event time (medians of 15 repeats of
 * 5000 interleaved launches).  Where the three agree, the device keeps pace with the loop;
 * which of the two sets the pace, the second table tells: the issue time in bursts of
 * 16-4096 launches, each on an idle queue.  Bursts that cost what the long loop costs: the
 * CPU's own cost per launch; bursts cheaper than the loop: the loop waited for queue slots.
 *
 *     gcc -O2 -o /tmp/launch_floor benchmarks/launch_floor.c -ldl && /tmp/launch_floor
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef int CUresult; typedef void *CUfunction, *CUstream, *CUmodule, *CUcontext, *CUevent;
typedef struct { unsigned gx, gy, gz, bx, by, bz, shm; CUstream s; void *attrs; unsigned n; } cfg_t;
static CUresult (*cuInit)(unsigned); static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int); static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *); static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuStreamCreate)(CUstream *, unsigned); static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
static CUresult (*cuLaunchKernelEx)(const cfg_t *, CUfunction, void **, void **);
static CUresult (*cuEventCreate)(CUevent *, unsigned); static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent); static CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
#define L(n) do { *(void **)&n = dlsym(h, #n); if (!n) { fprintf(stderr, "no %s\n", #n); exit(1);} } while (0)
#define C(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s -> %d\n", #x, r_); exit(1);} } while (0)
static const char *ptx =
".version 8.0\n.target sm_90\n.address_size 64\n"
".visible .entry k0() { ret; }\n"
".visible .entry k12(.param .u64 a0,.param .u64 a1,.param .u64 a2,.param .u64 a3,.param .u64 a4,.param .u64 a5,"
".param .u64 a6,.param .u64 a7,.param .u64 a8,.param .u64 a9,.param .u64 a10,.param .u64 a11) { ret; }\n";
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW); if (!h) { puts(dlerror()); return 1; }
    L(cuInit); L(cuDeviceGet); L(cuDevicePrimaryCtxRetain); L(cuCtxSetCurrent); L(cuModuleLoadData);
    L(cuModuleGetFunction); L(cuStreamCreate); L(cuStreamSynchronize); L(cuLaunchKernel); L(cuLaunchKernelEx);
    L(cuEventCreate); L(cuEventRecord); L(cuEventSynchronize); L(cuEventElapsedTime);
    int dev; CUcontext ctx; CUmodule mod; CUfunction f[2]; CUstream streams[2] = {0, 0};
    C(cuInit(0)); C(cuDeviceGet(&dev, 0)); C(cuDevicePrimaryCtxRetain(&ctx, dev)); C(cuCtxSetCurrent(ctx));
    C(cuModuleLoadData(&mod, ptx)); C(cuModuleGetFunction(&f[0], mod, "k0")); C(cuModuleGetFunction(&f[1], mod, "k12"));
    C(cuStreamCreate(&streams[1], 1));
    CUevent e0, e1; C(cuEventCreate(&e0, 0)); C(cuEventCreate(&e1, 0));
    unsigned long long slots[12] = {0}; void *params[12]; for (int i = 0; i < 12; i++) params[i] = &slots[i];
    enum { N = 5000, R = 15 };
    const char *names[2] = {"cuLaunchKernel", "cuLaunchKernelEx"};
    double issue[2][2][2][R], total[2][2][2][R]; float gpu[2][2][2][R];
    for (int r = 0; r < R; r++)
        for (int s = 0; s < 2; s++) for (int k = 0; k < 2; k++) for (int api = 0; api < 2; api++) {
            CUstream st = streams[s]; void **p = k ? params : NULL;
            cfg_t c = {1, 1, 1, 32, 1, 1, 0, st, NULL, 0};
            C(cuStreamSynchronize(st));
            C(cuEventRecord(e0, st));
            double t0 = now();
            if (api == 0) for (int i = 0; i < N; i++) C(cuLaunchKernel(f[k], 1, 1, 1, 32, 1, 1, 0, st, p, NULL));
            else for (int i = 0; i < N; i++) C(cuLaunchKernelEx(&c, f[k], p, NULL));
            double t1 = now();
            C(cuEventRecord(e1, st)); C(cuEventSynchronize(e1));
            double t2 = now();
            float ms; C(cuEventElapsedTime(&ms, e0, e1));
            issue[s][k][api][r] = (t1 - t0) / N * 1e6; total[s][k][api][r] = (t2 - t0) / N * 1e6; gpu[s][k][api][r] = ms * 1e3f / N;
        }
    printf("us per launch, medians of %d repeats of %d (issue loop / to completion / GPU events)\n", R, N);
    for (int s = 0; s < 2; s++) for (int k = 0; k < 2; k++) for (int api = 0; api < 2; api++) {
        double a[R], b[R], g[R];
        for (int r = 0; r < R; r++) { a[r] = issue[s][k][api][r]; b[r] = total[s][k][api][r]; g[r] = gpu[s][k][api][r]; }
        qsort(a, R, sizeof *a, cmp); qsort(b, R, sizeof *b, cmp); qsort(g, R, sizeof *g, cmp);
        printf("%-7s %2d params %-17s issue %.3f  total %.3f  gpu %.3f\n", s ? "created" : "legacy", k ? 12 : 0, names[api], a[R/2], b[R/2], g[R/2]);
    }
    /* The issue time in bursts of B launches, each burst on an idle queue (synchronized
     * before it, not timed): the CPU's own cost of a launch while the queue has room.
     * Where it rises with B, the bursts outgrow the queue and launches wait for slots. */
    enum { NB = 5 };
    const int bursts[NB] = {16, 64, 256, 1024, 4096};
    double each[2][2][NB][R];
    for (int r = 0; r < R; r++)
        for (int s = 0; s < 2; s++) for (int k = 0; k < 2; k++) for (int b = 0; b < NB; b++) {
            CUstream st = streams[s]; void **p = k ? params : NULL;
            int B = bursts[b], times = N / B > 0 ? N / B : 1;
            double sum = 0;
            for (int j = 0; j < times; j++) {
                C(cuStreamSynchronize(st));
                double t0 = now();
                for (int i = 0; i < B; i++) C(cuLaunchKernel(f[k], 1, 1, 1, 32, 1, 1, 0, st, p, NULL));
                sum += now() - t0;
            }
            each[s][k][b][r] = sum / ((double)times * B) * 1e6;
        }
    printf("cuLaunchKernel issue time in bursts on an idle queue, us per launch (medians of %d repeats)\n", R);
    for (int s = 0; s < 2; s++) for (int k = 0; k < 2; k++) {
        printf("%-7s %2d params", s ? "created" : "legacy", k ? 12 : 0);
        for (int b = 0; b < NB; b++) {
            double a[R];
            for (int r = 0; r < R; r++) a[r] = each[s][k][b][r];
            qsort(a, R, sizeof *a, cmp);
            printf("  B=%d %.3f", bursts[b], a[R/2]);
        }
        printf("\n");
    }
    return 0;
}
