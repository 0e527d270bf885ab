/* weight_set.h - a model's weights as one set of tensors, whichever way the files lie.
 *
 * gc_weights_open takes
 *   - a safetensors file;
 *   - a directory: its model.safetensors.index.json when there is one, else its
 *     model.safetensors (Hugging Face's checkpoint folder as it is);
 *   - an index file (NAME.json): {"metadata": {...}, "weight_map": {"tensor": "shard file"}},
 *     the shards being safetensors files in the index's directory.
 * A set of shards is one gc_safetensors whose tensors point into the shards' mappings
 * (memory-mapped, never copied), in the index's order, with the index's path for
 * messages; only the tensors the weight map names are in it. Every error names the
 * file (and the tensor or key): a shard that is missing or malformed, a tensor the
 * map puts in a shard that does not hold it, a name mapped twice.
 */
#ifndef GC_WEIGHT_SET_H
#define GC_WEIGHT_SET_H

#include "weights/safetensors.h"

/* The weights at `path` (see above), or NULL with the error reported to `d`
 * (IO_ERROR, WEIGHTS_ERROR or OUT_OF_MEMORY). Free with gc_safetensors_free. */
gc_safetensors *gc_weights_open(const char *path, gc_diags *d);

#endif
