/* settings.h - the environment variables libgraphc_rt reads, read in one place.
 *
 *   entry point (rt_api.c; the compiler driver: driver/settings.c)
 *     --gc_rt_settings_read--> gc_rt_settings --const pointer--> cuda_driver.c (which
 *     library to open), cuda_exec.c (synchronize after each launch), host_exec.c (threads)
 *
 * Nothing below the entry points reads the environment. The variables are read at each entry
 * that needs them, not once per process, so a program (or a test) that changes its
 * environment between calls sees the change. docs/settings.md lists every variable.
 */
#ifndef GC_RT_SETTINGS_H
#define GC_RT_SETTINGS_H

/* The strings point into the environment: use them during the call that read them. */
typedef struct gc_rt_settings {
  const char *cuda_driver;  /* GRAPHC_CUDA_DRIVER: the driver library to open (NULL: libcuda.so.1) */
  int cuda_sync;            /* GRAPHC_CUDA_SYNC=1: eager launches, a synchronize after each */
  const char *cpu_threads;  /* GRAPHC_CPU_THREADS: host threads, checked by gc_host_threads (NULL: unset) */
  int cuda_branches;        /* GRAPHC_CUDA_BRANCHES (default 1; 0: off): independent kernels as parallel
                               branches of the CUDA graph (else one chain, in plan order) */
} gc_rt_settings;

/* Fill s from the environment. */
void gc_rt_settings_read(gc_rt_settings *s);

#endif /* GC_RT_SETTINGS_H */
