/* weight_set.c - opening a model's weights: one safetensors file, a checkpoint
 * directory, or the shards a model.safetensors.index.json names (weight_set.h).
 *
 * A sharded set loads each shard once (gc_safetensors_load: mapped, validated), in
 * the order the weight map first names them, and then gathers the mapped tensors
 * into one table; the shards stay owned by the set (gc_safetensors.parts).
 */
#include "weights/weight_set.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WS_INDEX "model.safetensors.index.json"
#define WS_SINGLE "model.safetensors"

/* Report a content error about file `path`. */
#define WS_ERR(d, path, fmt, ...) \
  gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, (gc_loc){0, 0}, "%s: " fmt, path, __VA_ARGS__)

/* "dir/name", malloc'd (NULL when out of memory). */
static char *path_join(const char *dir, size_t dir_len, const char *name) {
  size_t n = dir_len + 1 + strlen(name) + 1;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%.*s%s%s", (int)dir_len, dir, dir_len && dir[dir_len - 1] != '/' ? "/" : "", name);
  return p;
}

/* Length of the directory part of `path` ("" -> 0, "a/b.json" -> 1, "/x" -> 1). */
static size_t dir_len_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return 0;
  return slash == path ? 1 : (size_t)(slash - path);
}

static int is_regular(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void oom(gc_diags *d, const char *path) {
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory", path);
}

/* ---- the index file ---------------------------------------------------------------- */

/* Shard `file` of the index at `index`: loaded once into set->parts, its position there,
 * or -1 after reporting (a shard's own errors come with the index named). */
static int shard_load(gc_safetensors *set, const char *index, const char *file, gc_diags *d) {
  if (!file[0] || strchr(file, '/') || strcmp(file, ".") == 0 || strcmp(file, "..") == 0) {
    WS_ERR(d, index, "weight_map: shard '%s' is not a file name in the index's directory", file);
    return -1;
  }
  char *path = path_join(index, dir_len_of(index), file);
  if (!path) {
    oom(d, index);
    return -1;
  }
  for (int i = 0; i < set->n_parts; i++)
    if (strcmp(set->parts[i]->path, path) == 0) {
      free(path);
      return i;
    }
  gc_safetensors **parts = realloc(set->parts, (size_t)(set->n_parts + 1) * sizeof *parts);
  if (!parts) {
    free(path);
    oom(d, index);
    return -1;
  }
  set->parts = parts;
  gc_diags sd;
  gc_diags_init(&sd, path, NULL, 0);
  gc_safetensors *st = gc_safetensors_load(path, &sd);
  for (int i = 0; i < sd.n; i++)
    if (sd.items[i].level == GC_DIAG_ERROR)
      gc_error_at(d, sd.status, (gc_loc){0, 0}, "%s (a shard named by %s)", sd.items[i].msg, index);
  if (!st && sd.n == 0) oom(d, path); /* the message itself could not be allocated */
  gc_diags_free(&sd);
  free(path);
  if (!st) return -1;
  set->parts[set->n_parts] = st;
  return set->n_parts++;
}

/* Compare tensor names through pointers (qsort). */
static int cmp_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name the set holds twice (the weight map's JSON had a key twice), or NULL; *bad
 * set when out of memory. */
static const char *duplicate_name(const gc_safetensors *set, int *bad) {
  if (set->n < 2) return NULL;
  const char **names = malloc((size_t)set->n * sizeof *names);
  if (!names) {
    *bad = 1;
    return NULL;
  }
  for (int i = 0; i < set->n; i++) names[i] = set->tensors[i].name;
  qsort(names, (size_t)set->n, sizeof *names, cmp_name);
  const char *dup = NULL;
  for (int i = 1; i < set->n && !dup; i++)
    if (strcmp(names[i - 1], names[i]) == 0) dup = names[i];
  free(names);
  return dup;
}

/* Fill set->tensors from the weight map (loading shards as they come). 0 or -1. */
static int gather_tensors(gc_safetensors *set, const char *index, const cJSON *map, gc_diags *d) {
  int n = cJSON_GetArraySize(map);
  set->tensors = calloc((size_t)(n ? n : 1), sizeof *set->tensors);
  if (!set->tensors) {
    oom(d, index);
    return -1;
  }
  for (const cJSON *e = map->child; e; e = e->next) {
    const char *name = e->string ? e->string : "";
    if (!cJSON_IsString(e)) {
      WS_ERR(d, index, "weight_map: the shard of tensor '%s' is not a string", name);
      return -1;
    }
    int k = shard_load(set, index, e->valuestring, d);
    if (k < 0) return -1;
    const gc_st_tensor *t = gc_safetensors_find(set->parts[k], name);
    if (!t) {
      WS_ERR(d, index, "tensor '%s' is mapped to '%s', which does not hold it", name, e->valuestring);
      return -1;
    }
    set->tensors[set->n++] = *t;  /* its name and data belong to the shard */
  }
  int bad = 0;
  const char *dup = duplicate_name(set, &bad);
  if (bad || dup) {
    if (bad) oom(d, index);
    else WS_ERR(d, index, "weight_map: tensor '%s' is mapped twice", dup);
    return -1;
  }
  return 0;
}

/* Load the shards an index file names. */
static gc_safetensors *open_index(const char *index, gc_diags *d) {
  size_t len = 0;
  char *text = gc_read_file(index, &len, d);
  if (!text) return NULL;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  gc_safetensors *set = NULL;
  if (!root) {
    size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    WS_ERR(d, index, "not valid JSON (error at byte %zu)", at);
    goto fail;
  }
  const cJSON *map = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
  if (!cJSON_IsObject(root) || !map) {
    WS_ERR(d, index, "%s", "no \"weight_map\" object (a safetensors index maps tensor names to shard files)");
    goto fail;
  }
  if (!cJSON_IsObject(map)) {
    WS_ERR(d, index, "%s", "\"weight_map\" is not an object of tensor name -> shard file");
    goto fail;
  }
  set = calloc(1, sizeof *set);
  if (!set || !(set->path = strdup(index))) {
    oom(d, index);
    goto fail;
  }
  if (gather_tensors(set, index, map, d) != 0) goto fail;
  cJSON_Delete(root);
  free(text);
  return set;
fail:
  gc_safetensors_free(set);
  cJSON_Delete(root);
  free(text);
  return NULL;
}

/* ---- entry ---------------------------------------------------------------------------- */

/* A checkpoint directory: its index when present, else its single file. */
static gc_safetensors *open_dir(const char *dir, gc_diags *d) {
  char *index = path_join(dir, strlen(dir), WS_INDEX);
  char *single = path_join(dir, strlen(dir), WS_SINGLE);
  gc_safetensors *st = NULL;
  if (!index || !single) oom(d, dir);
  else if (is_regular(index)) st = open_index(index, d);
  else if (is_regular(single)) st = gc_safetensors_load(single, d);
  else
    WS_ERR(d, dir, "%s", "the directory has no " WS_SINGLE " and no " WS_INDEX);
  free(index);
  free(single);
  return st;
}

gc_safetensors *gc_weights_open(const char *path, gc_diags *d) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(sb.st_mode)) return open_dir(path, d);
  if (ends_with(path, ".json")) return open_index(path, d);
  return gc_safetensors_load(path, d);
}
