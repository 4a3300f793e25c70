/* safetensors.c: reading (mmap + cJSON header, fully validated) and atomic writing of safetensors
 * files, and their loading into the host buffers of a model's tensors. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ark.h"

/* Headers larger than this are refused (the reference implementation uses the same bound). */
#define ST_MAX_HEADER (100ull << 20)

/* The dtypes of the safetensors format, with their element sizes in bits. */
static const struct {
	const char *name;
	int bits;
	int ark; /* enum ark_dtype or -1 */
} st_dtypes[] = {
	{"F16", 16, ARK_FP16}, {"BF16", 16, ARK_BF16}, {"F32", 32, ARK_FP32},
	{"F64", 64, -1},       {"I64", 64, -1},        {"U64", 64, -1},
	{"I32", 32, ARK_INT32},       {"U32", 32, -1},        {"I16", 16, -1},
	{"U16", 16, -1},       {"I8", 8, -1},          {"U8", 8, -1},
	{"BOOL", 8, -1},       {"F8_E4M3", 8, -1},     {"F8_E5M2", 8, -1},
	{"F8_E8M0", 8, -1},    {"C64", 64, -1},        {"F6_E2M3", 6, -1},
	{"F6_E3M2", 6, -1},    {"F4", 4, -1},
};

static const char *st_dtype_str(int dt)
{
	return dt == ARK_FP16 ? "F16" : dt == ARK_BF16 ? "BF16" : dt == ARK_INT32 ? "I32" : ark_dtype_quantized(dt) ? "U8" : "F32";
}

/* The shape a file stores a tensor of the model with: its own, or for a quantized one (q4_1, q8_0) the
 * GGUF blocks as U8 bytes, [rows..., last / 32 * block bytes]. */
static void st_shape_of(const struct ark_tensor *t, int64_t *shape)
{
	memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
	if (ark_dtype_quantized(t->dtype))
		shape[t->ndim - 1] = ark_row_bytes(t->dtype, t->shape[t->ndim - 1]);
}

static const char *st_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void ark_st_close(struct ark_st *st)
{
	if (!st)
		return;
	if (st->map)
		munmap(st->map, st->map_bytes);
	for (int i = 0; i < st->n; i++)
		free(st->e[i].name);
	free(st->e);
	free(st->by_name);
	free(st->path);
	memset(st, 0, sizeof *st);
}

const struct ark_st_entry *ark_st_find(const struct ark_st *st, const char *name)
{
	int lo = 0, hi = st->n; /* binary search of by_name[lo, hi) */
	if (!st->by_name)
		return NULL;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, c = strcmp(st->by_name[mid]->name, name);
		if (!c)
			return st->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A JSON number that is a non-negative integer below 2^53 (exact in a double), into *v. */
static int json_u64(const cJSON *j, uint64_t *v)
{
	double d;
	if (!cJSON_IsNumber(j))
		return 0;
	d = j->valuedouble;
	if (!(d >= 0 && d <= 9007199254740992.0) || floor(d) != d)
		return 0;
	*v = (uint64_t)d;
	return 1;
}

static int cmp_begin(const void *a, const void *b)
{
	const struct ark_st_entry *x = *(const struct ark_st_entry *const *)a;
	const struct ark_st_entry *y = *(const struct ark_st_entry *const *)b;
	return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(const struct ark_st_entry *const *)a)->name, (*(const struct ark_st_entry *const *)b)->name);
}

/* ---- what cJSON lets through ---------------------------------------------------------------------
 * cJSON accepts a NUL written \u0000 in a string (and cuts the string there), raw control characters
 * in strings, and numbers written 12.0, 1.2e1, -0 or 012 (all 12.0 or 0.0 to the caller). The header
 * text is scanned once more for them. */

/* The header JSON h[0..n), which cJSON parsed: a NUL escape or a raw control character in a string
 * is refused; the number tokens are listed, in order, into num[] (start) and num_len[]. */
static int st_scan(const char *path, const char *h, size_t n, const char **num, size_t *num_len, int max_num,
		   int *n_num)
{
	*n_num = 0;
	for (size_t i = 0; i < n; i++) {
		if (h[i] == '"') {
			size_t start = i;
			for (i++; i < n && h[i] != '"'; i++) {
				if ((unsigned char)h[i] < 0x20)
					return ark_error("%s: raw control character 0x%02x in a header string at byte %zu "
							 "(JSON writes it escaped)", path, (unsigned char)h[i], i);
				if (h[i] != '\\')
					continue;
				if (i + 5 < n && !memcmp(h + i + 1, "u0000", 5)) {
					size_t end = i;
					while (end < n && h[end] != '"')
						end++;
					return ark_error("%s: header string %.*s\"%s holds a NUL character (\\u0000) at byte %zu",
							 path, (int)(end - start > 60 ? 60 : end - start), h + start,
							 end - start > 60 ? "..." : "", i);
				}
				i++; /* the escaped character */
			}
		} else if (h[i] == '-' || (h[i] >= '0' && h[i] <= '9')) {
			size_t start = i;
			while (i + 1 < n && strchr("0123456789+-eE.", h[i + 1]) && h[i + 1])
				i++;
			if (*n_num == max_num)
				return ark_error("%s: malformed JSON header: more numbers than cJSON found", path);
			num[*n_num] = h + start;
			num_len[(*n_num)++] = i + 1 - start;
		}
	}
	return ARK_OK;
}

static int count_numbers(const cJSON *j)
{
	int n = 0;
	for (; j; j = j->next)
		n += cJSON_IsNumber(j) ? 1 : count_numbers(j->child);
	return n;
}

/* Numbers in document order, as cJSON keeps them: one not written as a plain integer (0 or
 * [1-9][0-9]*) becomes NaN, which every check of an offset or dimension refuses. */
static void mark_numbers(cJSON *j, const char *const *num, const size_t *num_len, int *k)
{
	for (; j; j = j->next) {
		if (!cJSON_IsNumber(j)) {
			mark_numbers(j->child, num, num_len, k);
			continue;
		}
		const char *t = num[*k];
		size_t len = num_len[(*k)++], d = 0;
		while (d < len && t[d] >= '0' && t[d] <= '9')
			d++;
		if (d != len || (t[0] == '0' && len > 1))
			j->valuedouble = NAN;
	}
}

/* Parses one header entry j (named by j->string) into e; path names the file in errors. */
static int st_entry(const char *path, const cJSON *j, const struct ark_st *st, struct ark_st_entry *e)
{
	const char *name = j->string;
	const cJSON *dt, *sh, *off, *x;
	uint64_t elems = 1, bits = 0, bytes;
	int k = -1;

	if (!cJSON_IsObject(j))
		return ark_error("%s: tensor '%s': header entry is not an object", path, name);
	dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
	sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
	off = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
	if (!dt)
		return ark_error("%s: tensor '%s': missing \"dtype\"", path, name);
	if (!cJSON_IsString(dt))
		return ark_error("%s: tensor '%s': \"dtype\" is not a string", path, name);
	if (strlen(dt->valuestring) >= sizeof e->dtype_str)
		return ark_error("%s: tensor '%s': unknown dtype '%.40s'", path, name, dt->valuestring);
	strcpy(e->dtype_str, dt->valuestring);
	for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
		if (!strcmp(st_dtypes[i].name, dt->valuestring))
			k = (int)i;
	if (k < 0)
		return ark_error("%s: tensor '%s': unknown dtype '%s'", path, name, dt->valuestring);
	e->dtype = st_dtypes[k].ark;

	if (!sh)
		return ark_error("%s: tensor '%s': missing \"shape\"", path, name);
	if (!cJSON_IsArray(sh))
		return ark_error("%s: tensor '%s': \"shape\" is not an array", path, name);
	if (cJSON_GetArraySize(sh) > (int)(sizeof e->shape / sizeof e->shape[0]))
		return ark_error("%s: tensor '%s': shape has %d dimensions, at most %d are supported", path, name,
				 cJSON_GetArraySize(sh), (int)(sizeof e->shape / sizeof e->shape[0]));
	e->ndim = 0;
	cJSON_ArrayForEach(x, sh)
	{
		uint64_t v;
		if (!json_u64(x, &v))
			return ark_error("%s: tensor '%s': shape dimension %d is not a non-negative integer", path,
					 name, e->ndim);
		e->shape[e->ndim++] = (int64_t)v;
		if (elems && v && elems > UINT64_MAX / v)
			return ark_error("%s: tensor '%s': shape is too large", path, name);
		elems *= v;
	}

	if (!off)
		return ark_error("%s: tensor '%s': missing \"data_offsets\"", path, name);
	if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !json_u64(cJSON_GetArrayItem(off, 0), &e->begin) ||
	    !json_u64(cJSON_GetArrayItem(off, 1), &e->end))
		return ark_error("%s: tensor '%s': \"data_offsets\" is not [begin, end] of two non-negative integers",
				 path, name);
	if (e->end < e->begin)
		return ark_error("%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", path, name,
				 (unsigned long long)e->begin, (unsigned long long)e->end);
	if (e->end > st->data_bytes)
		return ark_error("%s: tensor '%s': data_offsets [%llu, %llu] out of the data section (%llu bytes)",
				 path, name, (unsigned long long)e->begin, (unsigned long long)e->end,
				 (unsigned long long)st->data_bytes);
	bits = (uint64_t)st_dtypes[k].bits;
	if (elems > UINT64_MAX / bits)
		return ark_error("%s: tensor '%s': shape is too large", path, name);
	bytes = elems * bits / 8 + (elems * bits % 8 != 0);
	if (bytes != e->end - e->begin)
		return ark_error("%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, but dtype %s and "
				 "shape of %llu elements need %llu",
				 path, name, (unsigned long long)e->begin, (unsigned long long)e->end,
				 (unsigned long long)(e->end - e->begin), e->dtype_str, (unsigned long long)elems,
				 (unsigned long long)bytes);
	if (!(e->name = strdup(name)))
		return ark_error("%s: out of memory", path);
	return ARK_OK;
}

int ark_st_open(struct ark_st *st, const char *path)
{
	struct stat sb;
	const unsigned char *p;
	const char *h, *end = NULL, **num = NULL;
	size_t *num_len = NULL;
	cJSON *root = NULL, *j;
	struct ark_st_entry **order = NULL;
	uint64_t hlen = 0, pos = 0;
	int fd, n = 0, n_num = 0, k = 0, meta = 0;

	memset(st, 0, sizeof *st);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return ark_error("%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0) {
		ark_error("%s: cannot stat: %s", path, strerror(errno));
		close(fd);
		return ARK_ERR;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return ark_error("%s: not a regular file", path);
	}
	if (sb.st_size < 8) {
		close(fd);
		return ark_error("%s: not a safetensors file: %lld bytes, shorter than the 8-byte header length",
				 path, (long long)sb.st_size);
	}
	st->map_bytes = (size_t)sb.st_size;
	st->map = mmap(NULL, st->map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (st->map == MAP_FAILED) {
		st->map = NULL;
		ark_error("%s: cannot map: %s", path, strerror(errno));
		goto fail;
	}
	if (!(st->path = strdup(path))) {
		ark_error("%s: out of memory", path);
		goto fail;
	}
	p = st->map;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | p[i];
	if (hlen > ST_MAX_HEADER) {
		ark_error("%s: header length %llu is over the limit of %llu bytes", path, (unsigned long long)hlen,
			  (unsigned long long)ST_MAX_HEADER);
		goto fail;
	}
	if (hlen > st->map_bytes - 8) {
		ark_error("%s: header length %llu is beyond the %llu bytes that follow it (truncated file?)", path,
			  (unsigned long long)hlen, (unsigned long long)(st->map_bytes - 8));
		goto fail;
	}
	h = (const char *)p + 8;
	/* the header is a JSON object from its first byte (padding may follow it, not precede it) */
	if (hlen == 0 || h[0] != '{') {
		ark_error("%s: the header does not start with '{'%s", path,
			  hlen == 0 ? " (it is empty)" : " (a byte-order mark or leading spaces?)");
		goto fail;
	}
	st->data = (unsigned char *)st->map + 8 + hlen;
	st->data_bytes = st->map_bytes - 8 - hlen;

	root = cJSON_ParseWithLengthOpts(h, (size_t)hlen, &end, 0);
	if (!root) {
		ark_error("%s: malformed JSON header near byte %lld of %llu", path, end ? (long long)(end - h) : -1LL,
			  (unsigned long long)hlen);
		goto fail;
	}
	for (const char *q = end; q < h + hlen; q++)
		if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
			ark_error("%s: malformed JSON header: garbage after the object at byte %lld", path,
				  (long long)(q - h));
			goto fail;
		}
	if (!cJSON_IsObject(root)) {
		ark_error("%s: malformed JSON header: not an object", path);
		goto fail;
	}
	n_num = count_numbers(root->child);
	if (!(num = malloc(sizeof *num * (size_t)(n_num + 1))) || !(num_len = malloc(sizeof *num_len * (size_t)(n_num + 1)))) {
		ark_error("%s: out of memory", path);
		goto fail;
	}
	if (st_scan(path, h, (size_t)(end - h), num, num_len, n_num, &k))
		goto fail;
	if (k != n_num) {
		ark_error("%s: malformed JSON header: %d numbers, cJSON found %d", path, k, n_num);
		goto fail;
	}
	k = 0;
	mark_numbers(root->child, num, num_len, &k);

	cJSON_ArrayForEach(j, root) n++;
	if (!(st->e = calloc((size_t)(n ? n : 1), sizeof *st->e)) || !(order = calloc((size_t)(n ? n : 1), sizeof *order)) ||
	    !(st->by_name = calloc((size_t)(n ? n : 1), sizeof *st->by_name))) {
		ark_error("%s: out of memory", path);
		goto fail;
	}
	cJSON_ArrayForEach(j, root)
	{
		if (!strcmp(j->string, "__metadata__")) {
			const cJSON *v;
			if (meta++) {
				ark_error("%s: \"__metadata__\" appears twice in the header", path);
				goto fail;
			}
			if (!cJSON_IsObject(j)) {
				ark_error("%s: \"__metadata__\" is not an object", path);
				goto fail;
			}
			cJSON_ArrayForEach(v, j) if (!cJSON_IsString(v))
			{
				ark_error("%s: \"__metadata__\" value '%s' is not a string", path, v->string);
				goto fail;
			}
			continue;
		}
		if (st_entry(path, j, st, &st->e[st->n]))
			goto fail;
		order[st->n] = st->by_name[st->n] = &st->e[st->n];
		st->n++;
	}
	/* names: each once */
	qsort(st->by_name, (size_t)st->n, sizeof *st->by_name, cmp_name);
	for (int i = 1; i < st->n; i++)
		if (!strcmp(st->by_name[i - 1]->name, st->by_name[i]->name)) {
			ark_error("%s: tensor '%s' appears twice in the header", path, st->by_name[i]->name);
			goto fail;
		}
	/* byte ranges: back to back from 0 to the end of the data section, as the format requires */
	qsort(order, (size_t)st->n, sizeof *order, cmp_begin);
	for (int i = 0, last = -1; i < st->n; i++) {
		const struct ark_st_entry *e = order[i];
		if (e->begin < pos) {
			ark_error("%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap in the data section", path,
				  order[last]->name, (unsigned long long)order[last]->begin,
				  (unsigned long long)order[last]->end, e->name, (unsigned long long)e->begin,
				  (unsigned long long)e->end);
			goto fail;
		}
		if (e->begin > pos) {
			ark_error("%s: bytes [%llu, %llu) of the data section belong to no tensor (a gap before tensor '%s')",
				  path, (unsigned long long)pos, (unsigned long long)e->begin, e->name);
			goto fail;
		}
		if (e->end > e->begin) {
			pos = e->end;
			last = i;
		}
	}
	if (pos != st->data_bytes) {
		ark_error("%s: the data section has %llu bytes, but its tensors end at byte %llu", path,
			  (unsigned long long)st->data_bytes, (unsigned long long)pos);
		goto fail;
	}
	free(num);
	free(num_len);
	free(order);
	cJSON_Delete(root);
	return ARK_OK;
fail:
	free(num);
	free(num_len);
	free(order);
	cJSON_Delete(root);
	ark_st_close(st);
	return ARK_ERR;
}

/* ---- loading into a model ---------------------------------------------------------------------- */

static const char *const st_role_names[] = {"activation", "input", "weight", "output", "internal tensor", "state"};

static const char *role_name(int r)
{
	return r >= 0 && r < (int)(sizeof st_role_names / sizeof st_role_names[0]) ? st_role_names[r] : "?";
}

static const char *article(const char *w)
{
	return strchr("aeiou", w[0]) ? "an" : "a";
}

/* "an input or weight" for a role mask, into buf. */
static const char *roles_str(char *buf, size_t n, unsigned mask)
{
	int cnt = 0, total = 0;
	size_t k = 0;
	buf[0] = 0;
	for (int r = 0; r < ARK_ROLE__COUNT; r++)
		total += !!(mask & (1u << r));
	for (int r = 0; r < ARK_ROLE__COUNT && k < n; r++) {
		if (!(mask & (1u << r)))
			continue;
		const char *sep = cnt == 0 ? "" : cnt == total - 1 ? " or " : ", ";
		if (cnt == 0)
			k += (size_t)snprintf(buf + k, n - k, "%s %s", article(role_name(r)), role_name(r));
		else
			k += (size_t)snprintf(buf + k, n - k, "%s%s", sep, role_name(r));
		cnt++;
	}
	if (!cnt)
		snprintf(buf, n, "any role allowed here");
	return buf;
}

static const char *dims_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

static int cmp_tensor_name(const void *a, const void *b)
{
	return strcmp((*(const struct ark_tensor *const *)a)->name, (*(const struct ark_tensor *const *)b)->name);
}

/* Index of the model's tensor called name, by binary search of by_name[0..n) (sorted by name). */
static int model_find(const struct ark_model *m, const struct ark_tensor *const *by_name, int n, const char *name)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, c = strcmp(by_name[mid]->name, name);
		if (!c)
			return (int)(by_name[mid] - m->tensors);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int ark_st_load(const char *path, const struct ark_model *m, unsigned role_mask, void *const *bufs,
		int *loaded)
{
	struct ark_st st;
	const char *base = st_base(path);
	char s1[160], s2[160], s3[160];
	int *idx = NULL, n_named = 0;
	const struct ark_tensor **by_name = NULL;

	if (loaded)
		*loaded = 0;
	if (ark_st_open(&st, path))
		return ARK_ERR;
	if (!(idx = malloc((size_t)(st.n ? st.n : 1) * sizeof *idx)) ||
	    !(by_name = malloc((size_t)(m->n_tensors > 0 ? m->n_tensors : 1) * sizeof *by_name))) {
		ark_error("%s: out of memory", path);
		goto fail;
	}
	for (int t = 0; t < m->n_tensors; t++)
		if (m->tensors[t].name)
			by_name[n_named++] = &m->tensors[t];
	qsort(by_name, (size_t)n_named, sizeof *by_name, cmp_tensor_name);
	/* check everything first, so a bad file leaves the buffers untouched */
	for (int i = 0; i < st.n; i++) {
		const struct ark_st_entry *e = &st.e[i];
		const struct ark_tensor *t;
		int ti = model_find(m, by_name, n_named, e->name);
		if (ti < 0) {
			ark_error("tensor '%s' of file %s is not a tensor of model '%s'", e->name, base,
				  m->name ? m->name : "?");
			goto fail;
		}
		t = &m->tensors[ti];
		if (t->role >= 32 || !(role_mask & (1u << t->role))) {
			ark_error("tensor '%s' of file %s is %s %s of the model, not %s", e->name, base,
				  article(role_name(t->role)), role_name(t->role), roles_str(s1, sizeof s1, role_mask));
			goto fail;
		}
		const int quant = ark_dtype_quantized(t->dtype);
		if (quant ? strcmp(e->dtype_str, "U8") != 0 : e->dtype != t->dtype) {
			ark_error("tensor '%s' of file %s has dtype %s, the model's is %s (%s%s)", e->name, base,
				  e->dtype_str, ark_dtype_name(t->dtype), st_dtype_str(t->dtype),
				  quant ? ": its GGUF blocks as bytes" : "");
			goto fail;
		}
		int64_t want[ARK_MAX_DIMS];
		st_shape_of(t, want);
		if (e->ndim != t->ndim || memcmp(e->shape, want, sizeof(int64_t) * (size_t)t->ndim)) {
			if (quant)
				ark_error("tensor '%s' of file %s has shape %s, the model's %s %s is stored as U8 %s "
					  "(%d bytes per block of 32 elements along the last axis)", e->name, base,
					  dims_str(s1, sizeof s1, e->ndim, e->shape), ark_dtype_name(t->dtype),
					  dims_str(s2, sizeof s2, t->ndim, t->shape), dims_str(s3, sizeof s3, t->ndim, want),
					  ark_qblock_bytes(t->dtype));
			else
				ark_error("tensor '%s' of file %s has shape %s, the model's is %s", e->name, base,
					  dims_str(s1, sizeof s1, e->ndim, e->shape), dims_str(s2, sizeof s2, t->ndim, t->shape));
			goto fail;
		}
		if (!bufs[ti]) {
			ark_error("tensor '%s' of file %s: no host buffer to load it into", e->name, base);
			goto fail;
		}
		idx[i] = ti;
	}
	for (int i = 0; i < st.n; i++)
		memcpy(bufs[idx[i]], st.data + st.e[i].begin, (size_t)(st.e[i].end - st.e[i].begin));
	if (loaded)
		*loaded = st.n;
	free(by_name);
	free(idx);
	ark_st_close(&st);
	return ARK_OK;
fail:
	free(by_name);
	free(idx);
	ark_st_close(&st);
	return ARK_ERR;
}

/* ---- writing ----------------------------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int k;
	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = 1;
			return;
		}
		if (b->p && b->n + (size_t)k < b->cap) {
			b->n += (size_t)k;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)k;
		char *q = realloc(b->p, cap);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
}

/* name as a JSON string */
static void sb_json_str(struct sbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			sb_printf(b, "\\%c", ch);
		else if (ch < 0x20)
			sb_printf(b, "\\u%04x", ch);
		else
			sb_printf(b, "%c", ch);
	}
	sb_printf(b, "\"");
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int ark_st_write(const char *path, const struct ark_model *m, unsigned role_mask, void *const *bufs)
{
	struct sbuf h = {0};
	uint64_t off = 0, hlen;
	unsigned char len8[8];
	char *tmp = NULL;
	int fd = -1;

	sb_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (int t = 0; t < m->n_tensors; t++) {
		const struct ark_tensor *x = &m->tensors[t];
		if (x->role >= 32 || !(role_mask & (1u << x->role)))
			continue;
		if (!bufs[t]) {
			ark_error("%s: no host buffer for tensor '%s'", path, x->name);
			goto fail;
		}
		uint64_t bytes = ark_tensor_bytes(x);
		int64_t shape[ARK_MAX_DIMS];
		st_shape_of(x, shape);
		sb_printf(&h, ",");
		sb_json_str(&h, x->name);
		sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_str(x->dtype));
		for (int d = 0; d < x->ndim; d++)
			sb_printf(&h, "%s%lld", d ? "," : "", (long long)shape[d]);
		sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
			  (unsigned long long)(off + bytes));
		off += bytes;
	}
	sb_printf(&h, "}");
	while (!h.oom && h.n % 8)
		sb_printf(&h, " ");
	if (h.oom) {
		ark_error("%s: out of memory", path);
		goto fail;
	}
	hlen = h.n;
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)(hlen >> (8 * i));

	if (!(tmp = malloc(strlen(path) + 16))) {
		ark_error("%s: out of memory", path);
		goto fail;
	}
	sprintf(tmp, "%s.tmp.XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0) {
		ark_error("%s: cannot create a temporary file: %s", path, strerror(errno));
		goto fail;
	}
	if (fchmod(fd, 0644) < 0 || write_all(fd, len8, 8) || write_all(fd, h.p, h.n))
		goto io_fail;
	for (int t = 0; t < m->n_tensors; t++) {
		const struct ark_tensor *x = &m->tensors[t];
		if (x->role < 32 && (role_mask & (1u << x->role)))
			if (write_all(fd, bufs[t], (size_t)ark_tensor_bytes(x)))
				goto io_fail;
	}
	if (fsync(fd) < 0)
		goto io_fail;
	if (close(fd) < 0) {
		fd = -1;
		goto io_fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		goto io_fail;
	free(tmp);
	free(h.p);
	return ARK_OK;
io_fail:
	ark_error("%s: cannot write: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
fail:
	free(tmp);
	free(h.p);
	return ARK_ERR;
}
