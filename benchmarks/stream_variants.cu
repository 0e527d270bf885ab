// stream_variants.cu - ways to stream a one-input elementwise kernel (f32 neg) over 256 MB,
// 512 MB and 1 GiB against cudaMemcpyAsync D2D of the same bytes: grid-stride over one
// resident wave (graphc's ITEMS launch until 2026-12-03), cache hints (.cs, L1::no_allocate,
// L2 evict_first), more items a thread, more blocks, a block per 256 vectors. Medians of 22 x 20
// queued launches. On the GPU machine (docs/performance.md, nineteenth session):
//   nvcc -arch=sm_90a -O3 -o /tmp/sv benchmarks/stream_variants.cu && /tmp/sv
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_fp16.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ __forceinline__ float4 op(float4 v) { return make_float4(-v.x, -v.y, -v.z, -v.w); }
__device__ __forceinline__ float4 ld_nc_na(const float4 *p) {
  float4 v; asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)); return v; }
__device__ __forceinline__ float4 ld_ef(const float4 *p, unsigned long long pol) {
  float4 v; asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(pol)); return v; }
__device__ __forceinline__ void st_ef(float4 *p, float4 v, unsigned long long pol) {
  asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "l"(pol) : "memory"); }
__device__ __forceinline__ unsigned long long pol_ef() {
  unsigned long long p; asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p; }

__global__ void __launch_bounds__(256) k_gs(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) y[i] = op(x[i]); }
__global__ void __launch_bounds__(256) k_cs(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) __stcs(&y[i], op(__ldcs(&x[i]))); }
__global__ void __launch_bounds__(256) k_na(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) y[i] = op(ld_nc_na(&x[i])); }
__global__ void __launch_bounds__(256) k_nacs(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) __stcs(&y[i], op(ld_nc_na(&x[i]))); }
__global__ void __launch_bounds__(256) k_ef(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  unsigned long long p = pol_ef();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) st_ef(&y[i], op(ld_ef(&x[i], p)), p); }
__global__ void __launch_bounds__(256) k_efst(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  unsigned long long p = pol_ef();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) st_ef(&y[i], op(x[i]), p); }
__global__ void __launch_bounds__(256) k_one(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = op(x[i]); }
__global__ void __launch_bounds__(256) k_one_cs(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (i < n) __stcs(&y[i], op(__ldcs(&x[i]))); }
__global__ void __launch_bounds__(256) k_one2(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long i = (long long)blockIdx.x * 512 + threadIdx.x; float4 a = x[i], b = x[i + 256]; y[i] = op(a); y[i + 256] = op(b); }
__global__ void __launch_bounds__(256) k_one4(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long i = (long long)blockIdx.x * 1024 + threadIdx.x; float4 a = x[i], b = x[i + 256], c = x[i + 512], d = x[i + 768];
  y[i] = op(a); y[i + 256] = op(b); y[i + 512] = op(c); y[i + 768] = op(d); }
__global__ void __launch_bounds__(256) k_gs4(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long h = n / 4;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < h; i += (long long)gridDim.x * blockDim.x) {
    float4 a = x[i], b = x[i + h], c = x[i + 2 * h], d = x[i + 3 * h];
    y[i] = op(a); y[i + h] = op(b); y[i + 2 * h] = op(c); y[i + 3 * h] = op(d); } }
__global__ void __launch_bounds__(256) k_gsu4(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long s = (long long)gridDim.x * blockDim.x;
  for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) ; i < n; i += 4 * s) {
    float4 a = x[i], b = x[i + s], c = x[i + 2 * s], d = x[i + 3 * s];
    y[i] = op(a); y[i + s] = op(b); y[i + 2 * s] = op(c); y[i + 3 * s] = op(d); } }
__global__ void __launch_bounds__(256) k_chunk(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  long long c = (n + gridDim.x - 1) / gridDim.x, lo = (long long)blockIdx.x * c, hi = lo + c < n ? lo + c : n;
  for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) y[i] = op(x[i]); }
__global__ void __launch_bounds__(1024) k_gs1024(const float4 *__restrict__ x, float4 *__restrict__ y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) y[i] = op(x[i]); }

typedef void (*kfn)(const float4 *, float4 *, long long);
struct V { const char *name; kfn f; int kind; };  // kind 0 grid-stride one wave, 1 one per thread, 2 two, 4 four, 5 memcpy, 6 1024-thread blocks, 7 grid x2, 8 grid x4
int main(int argc, char **argv) {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  V vs[] = {{"memcpy", 0, 5}, {"gs (graphc)", k_gs, 0}, {"gs cs/cs", k_cs, 0}, {"gs nc.na", k_na, 0}, {"gs na+cs", k_nacs, 0},
            {"gs evict_first ld+st", k_ef, 0}, {"gs evict_first st", k_efst, 0}, {"one/thread", k_one, 1}, {"one/thread cs", k_one_cs, 1},
            {"two/thread", k_one2, 2}, {"four/thread", k_one4, 4}, {"gs 4 far", k_gs4, 9}, {"gs unroll4", k_gsu4, 0},
            {"chunked blocks", k_chunk, 0}, {"gs 1024thr", k_gs1024, 6}, {"gs grid x2", k_gs, 7}, {"gs grid x4", k_gs, 8}, {"gs grid/2", k_gs, 10}};
  int nv = sizeof vs / sizeof vs[0];
  for (long long mb : {256LL, 512LL, 1024LL}) {
    size_t bytes = (size_t)mb << 20; long long n4 = bytes / 16;
    float4 *x, *y; CK(cudaMalloc(&x, bytes)); CK(cudaMalloc(&y, bytes)); CK(cudaMemset(x, 0, bytes)); CK(cudaMemset(y, 0, bytes));
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<std::vector<float>> t(nv);
    for (int round = 0; round < 25; round++)
      for (int v = 0; v < nv; v++) {
        auto go = [&]() {
          int k = vs[v].kind;
          if (k == 5) { CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice)); return; }
          long long grid = k == 0 ? sms * 8 : k == 1 ? n4 / 256 : k == 2 ? n4 / 512 : k == 4 ? n4 / 1024 : k == 6 ? sms * 2 : k == 7 ? sms * 16 : k == 8 ? sms * 32 : k == 10 ? sms * 4 : sms * 8;
          vs[v].f<<<(unsigned)grid, k == 6 ? 1024 : 256>>>(x, y, n4);
        };
        for (int w = 0; w < 2; w++) go();
        cudaEventRecord(e0); for (int r = 0; r < 20; r++) go(); cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (round >= 3) t[v].push_back(ms / 20);
      }
    std::vector<float> med(nv);
    for (int v = 0; v < nv; v++) { std::sort(t[v].begin(), t[v].end()); med[v] = t[v][t[v].size() / 2]; }
    printf("== %lld MB (f32 neg, read+write %lld MB), median of %zu x 20 queued\n", mb, 2 * mb, t[0].size());
    for (int v = 0; v < nv; v++) printf("  %-22s %.4f ms  %6.0f GB/s  %5.1f%% of memcpy\n", vs[v].name, med[v], 2.0 * bytes / med[v] / 1e6, 100.0 * med[0] / med[v]);
    CK(cudaFree(x)); CK(cudaFree(y));
  }
  return 0;
}
