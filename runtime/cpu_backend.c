/* cpu_backend.c - the host backend (LLVM host JIT). Not implemented in this
 * build: the table is empty, and the API layer reports the backend as absent. */
#include "exec.h"

const gc_backend gc_backend_cpu = {.name = "cpu"};
