/* strmap.h: a map from names to indices (open addressing, linear probing). The map keeps only
 * indices and hashes, never the names: the caller says how to read the name of an index, so names
 * may live in arrays that move. */
#ifndef STRMAP_H
#define STRMAP_H

#include <stdint.h>

struct strmap {
	uint32_t *hash;         /* (cap) hash of the name in each slot */
	int *val;               /* (cap) index, -1 for an empty slot */
	int cap, n;             /* cap is 0 or a power of two; n slots in use */
};

/* The name of index i in the caller's array ctx. */
typedef const char *strmap_name_fn(const void *ctx, int i);

uint32_t strmap_hash(const char *s);
/* The index stored under name, or -1. */
int strmap_get(const struct strmap *m, const char *name, strmap_name_fn *name_of, const void *ctx);
/* Stores index i (>= 0) under name; a name already present keeps its first index. */
void strmap_put(struct strmap *m, const char *name, int i, strmap_name_fn *name_of, const void *ctx);
void strmap_free(struct strmap *m);

#endif
