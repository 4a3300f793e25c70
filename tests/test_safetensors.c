/* test_safetensors.c: safetensors round trips, a hand-written file, and every rejection path of the
 * reader and of loading into a model, each checked for the tensor and reason it names. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ark.h"

static char dir[256];

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/ark_st_XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

/* Removes every file of the directory, then the directory. */
static int teardown(void **state)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	return rmdir(dir);
}

static const char *path_of(const char *name)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
	return p[k];
}

static int count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A file made of the 8-byte length (hlen, or strlen(header) when hlen < 0), header and data. */
static const char *write_raw(const char *name, const char *header, long long hlen, const void *data, size_t n)
{
	const char *p = path_of(name);
	FILE *f = fopen(p, "wb");
	uint64_t len = hlen < 0 ? strlen(header) : (uint64_t)hlen;
	unsigned char l8[8];
	assert_non_null(f);
	for (int i = 0; i < 8; i++)
		l8[i] = (unsigned char)(len >> (8 * i));
	assert_int_equal(fwrite(l8, 1, 8, f), 8);
	assert_int_equal(fwrite(header, 1, strlen(header), f), strlen(header));
	if (n)
		assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return p;
}

#define assert_error_has(s) \
	do { \
		if (!strstr(ark_last_error(), s)) \
			fail_msg("error \"%s\" lacks \"%s\"", ark_last_error(), s); \
	} while (0)

/* ---- a model with tensors of every dtype (int32 ids too) and 1 to 4 dimensions --------------- */

static struct ark_tensor model_t[] = {
	{.name = "x", .dtype = ARK_FP16, .role = ARK_ROLE_INPUT, .ndim = 2, .shape = {2, 3}},
	{.name = "w", .dtype = ARK_BF16, .role = ARK_ROLE_WEIGHT, .ndim = 1, .shape = {5}},
	{.name = "b", .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT, .ndim = 4, .shape = {2, 2, 1, 3}},
	{.name = "h", .dtype = ARK_FP16, .role = ARK_ROLE_ACTIVATION, .ndim = 2, .shape = {2, 3}},
	{.name = "y", .dtype = ARK_FP32, .role = ARK_ROLE_OUTPUT, .ndim = 3, .shape = {2, 1, 3}},
	{.name = "ids", .dtype = ARK_INT32, .role = ARK_ROLE_INPUT, .ndim = 2, .shape = {3, 4}}, /* safetensors I32 */
};
#define NT ((int)(sizeof model_t / sizeof model_t[0]))
static const struct ark_model model = {.name = "m", .n_tensors = NT, .tensors = model_t};
#define M_IN (1u << ARK_ROLE_INPUT)
#define M_W (1u << ARK_ROLE_WEIGHT)
#define M_OUT (1u << ARK_ROLE_OUTPUT)

static size_t tbytes(int t)
{
	return (size_t)ark_tensor_elems(&model_t[t]) * (size_t)ark_dtype_size(model_t[t].dtype);
}

static void alloc_bufs(void **bufs, uint64_t seed)
{
	for (int t = 0; t < NT; t++) {
		bufs[t] = malloc(tbytes(t));
		assert_non_null(bufs[t]);
		if (seed)
			ark_fill_random(bufs[t], model_t[t].dtype, ark_tensor_elems(&model_t[t]), seed + (uint64_t)t, 2.0f);
		else
			memset(bufs[t], 0xab, tbytes(t));
	}
}

static void free_bufs(void **bufs)
{
	for (int t = 0; t < NT; t++)
		free(bufs[t]);
}

/* ---- round trips ------------------------------------------------------------------------------ */

static void test_roundtrip(void **state)
{
	void *src[NT], *dst[NT];
	const char *p = path_of("rt.safetensors");
	int loaded = -1;
	struct ark_st st;

	alloc_bufs(src, 11);
	alloc_bufs(dst, 0);
	assert_int_equal(ark_st_write(p, &model, M_IN | M_W | M_OUT, src), ARK_OK);
	assert_int_equal(count_files(), 1); /* no temporary file left */

	assert_int_equal(ark_st_load(p, &model, M_IN | M_W | M_OUT, dst, &loaded), ARK_OK);
	assert_int_equal(loaded, 5);
	for (int t = 0; t < NT; t++)
		if (t == 3) /* the activation was not written, its buffer untouched */
			assert_int_equal(((unsigned char *)dst[t])[0], 0xab);
		else
			assert_memory_equal(src[t], dst[t], tbytes(t));

	/* the header: entries in tensor order, padded to 8 bytes, offsets back to back */
	assert_int_equal(ark_st_open(&st, p), ARK_OK);
	assert_int_equal(st.n, 5);
	assert_int_equal((st.data - (unsigned char *)st.map) % 8, 0);
	const char *names[5] = {"x", "w", "b", "y", "ids"}, *dts[5] = {"F16", "BF16", "F32", "F32", "I32"};
	const int tix[5] = {0, 1, 2, 4, 5};
	uint64_t off = 0;
	for (int i = 0; i < 5; i++) {
		const struct ark_st_entry *e = ark_st_find(&st, names[i]);
		assert_non_null(e);
		assert_string_equal(e->dtype_str, dts[i]);
		assert_int_equal(e->dtype, model_t[tix[i]].dtype);
		assert_int_equal(e->ndim, model_t[tix[i]].ndim);
		assert_memory_equal(e->shape, model_t[tix[i]].shape, sizeof(int64_t) * e->ndim);
		assert_int_equal(e->begin, off);
		off += tbytes(tix[i]);
		assert_int_equal(e->end, off);
		assert_memory_equal(st.data + e->begin, src[tix[i]], tbytes(tix[i]));
	}
	assert_int_equal(st.data_bytes, off);
	assert_null(ark_st_find(&st, "h"));
	ark_st_close(&st);
	assert_null(st.map);

	/* only the weights; overwriting the file in place */
	assert_int_equal(ark_st_write(p, &model, M_W, src), ARK_OK);
	assert_int_equal(ark_st_open(&st, p), ARK_OK);
	assert_int_equal(st.n, 2);
	assert_non_null(ark_st_find(&st, "w"));
	assert_non_null(ark_st_find(&st, "b"));
	ark_st_close(&st);
	assert_int_equal(count_files(), 1);

	unlink(p);
	free_bufs(src);
	free_bufs(dst);
}

static void test_write_errors(void **state)
{
	void *src[NT];
	alloc_bufs(src, 5);
	assert_int_equal(ark_st_write(path_of("no/such/dir.safetensors"), &model, M_W, src), ARK_ERR);
	assert_error_has("no/such/dir.safetensors");
	assert_error_has("temporary file");
	free(src[1]);
	src[1] = NULL;
	assert_int_equal(ark_st_write(path_of("nobuf.safetensors"), &model, M_W, src), ARK_ERR);
	assert_error_has("'w'");
	assert_int_equal(count_files(), 0);
	free_bufs(src);
}

/* ---- a file written by hand ------------------------------------------------------------------- */

static void test_handwritten(void **state)
{
	const float a[2] = {1.5f, -2.25f};
	const int64_t i64 = 7;
	unsigned char data[16];
	struct ark_st st;
	memcpy(data, a, 8);
	memcpy(data + 8, &i64, 8);
	const char *p = write_raw("hand.safetensors",
				  "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
				  "\"__metadata__\":{\"format\":\"pt\"},"
				  "\"i\":{\"dtype\":\"I64\",\"shape\":[1,1],\"data_offsets\":[8,16]}}   ",
				  -1, data, sizeof data);
	assert_int_equal(ark_st_open(&st, p), ARK_OK);
	assert_int_equal(st.n, 2);
	assert_string_equal(st.e[0].name, "a");
	assert_int_equal(st.e[0].dtype, ARK_FP32);
	assert_int_equal(st.e[0].ndim, 1);
	assert_int_equal(st.e[0].shape[0], 2);
	assert_string_equal(st.e[1].name, "i");
	assert_int_equal(st.e[1].dtype, -1); /* allowed in the file */
	assert_string_equal(st.e[1].dtype_str, "I64");
	assert_int_equal(st.e[1].ndim, 2);
	assert_int_equal(st.e[1].begin, 8);
	assert_int_equal(st.data_bytes, 16);
	assert_true(ark_st_find(&st, "i") == &st.e[1]);
	assert_null(ark_st_find(&st, "__metadata__"));
	ark_st_close(&st);

	/* loading it: 'a' fits, but the model would have to want 'i' with an I64 dtype */
	struct ark_tensor t[2] = {
		{.name = "a", .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT, .ndim = 1, .shape = {2}},
		{.name = "i", .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT, .ndim = 2, .shape = {1, 1}},
	};
	struct ark_model m = {.name = "hm", .n_tensors = 2, .tensors = t};
	float ba[2] = {0, 0}, bi[1] = {0};
	void *bufs[2] = {ba, bi};
	int loaded = -1;
	assert_int_equal(ark_st_load(p, &m, M_W, bufs, &loaded), ARK_ERR);
	assert_error_has("tensor 'i' of file hand.safetensors has dtype I64, the model's is fp32");
	assert_true(ba[0] == 0); /* nothing loaded on a failure */

	/* the same with only 'a' */
	p = write_raw("hand2.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, a,
		      8);
	assert_int_equal(ark_st_load(p, &m, M_W, bufs, &loaded), ARK_OK);
	assert_int_equal(loaded, 1);
	assert_true(ba[0] == 1.5f && ba[1] == -2.25f);
	assert_true(bi[0] == 0);
}

/* ---- checkpoint names: dots, and names that differ only by a dot ------------------------------ */

static void test_dotted_names(void **state)
{
	const float a[2] = {0.5f, -1.0f}, b[3] = {2.0f, 3.0f, 4.0f};
	unsigned char data[20];
	memcpy(data, a, 8);
	memcpy(data + 8, b, 12);
	const char *p = write_raw("bert.safetensors",
				  "{\"encoder.layer.0.attention.self.query.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
				  "\"data_offsets\":[0,8]},"
				  "\"encoder.layer.0.attention.self.query_bias\":{\"dtype\":\"F32\",\"shape\":[3],"
				  "\"data_offsets\":[8,20]}}",
				  -1, data, sizeof data);
	struct ark_tensor t[2] = {
		{.name = "encoder.layer.0.attention.self.query_bias", .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT,
		 .ndim = 1, .shape = {3}},
		{.name = "encoder.layer.0.attention.self.query.bias", .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT,
		 .ndim = 1, .shape = {2}},
	};
	struct ark_model m = {.name = "bert", .n_tensors = 2, .tensors = t};
	float b0[3] = {0, 0, 0}, b1[2] = {0, 0};
	void *bufs[2] = {b0, b1};
	int loaded = -1;
	assert_int_equal(ark_st_load(p, &m, M_W, bufs, &loaded), ARK_OK);
	assert_int_equal(loaded, 2);
	assert_memory_equal(b0, b, sizeof b);
	assert_memory_equal(b1, a, sizeof a);

	/* written back under the same names */
	const char *q = path_of("bert2.safetensors");
	struct ark_st st;
	assert_int_equal(ark_st_write(q, &m, M_W, bufs), ARK_OK);
	assert_int_equal(ark_st_open(&st, q), ARK_OK);
	const struct ark_st_entry *e = ark_st_find(&st, "encoder.layer.0.attention.self.query.bias");
	assert_non_null(e);
	assert_int_equal(e->shape[0], 2);
	assert_memory_equal(st.data + e->begin, a, sizeof a);
	assert_null(ark_st_find(&st, "encoder.layer.0.attention.self"));
	ark_st_close(&st);
}

/* ---- files the reader must reject ------------------------------------------------------------- */

struct bad_case {
	const char *header;
	long long hlen; /* < 0: the header's length */
	size_t data_bytes;
	const char *expect[2];
};

static void test_bad_files(void **state)
{
	static const struct bad_case cases[] = {
		/* truncated: the header length is beyond the file */
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 1000, 8,
		 {"header length 1000 is beyond the 62 bytes that follow it", "truncated"}},
		{"{}", 1ll << 40, 0, {"header length 1099511627776 is over the limit of 104857600 bytes", NULL}},
		{"{}", (100ll << 20) + 1, 0, {"header length 104857601 is over the limit of 104857600 bytes", NULL}},
		/* what cJSON lets through */
		{"{\"x\\u0000evil\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8,
		 {"\"x\\u0000evil\" holds a NUL character", NULL}},
		{"{\"a\":{\"dtype\":\"F32\\u0000\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, {"NUL character", NULL}},
		{"{\"a\x01\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, {"raw control character 0x01", NULL}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.0]}}", -1, 8, {"'a'", "[begin, end]"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,0.8e1]}}", -1, 8, {"'a'", "[begin, end]"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-0,8]}}", -1, 8, {"'a'", "[begin, end]"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,08]}}", -1, 8, {"'a'", "[begin, end]"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2E0],\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "dimension 0"}},
		{"\xef\xbb\xbf{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, {"does not start with '{'", NULL}},
		{"  {\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, {"does not start with '{'", NULL}},
		{"", -1, 0, {"does not start with '{' (it is empty)", NULL}},
		{"{\"a\":{\"dtype\":\"F99\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "unknown dtype 'F99'"}},
		/* byte ranges must tile the data section */
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", -1, 12, {"bytes [4, 8)", "before tensor 'b'"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", -1, 8, {"bytes [0, 4)", "before tensor 'a'"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 12,
		 {"the data section has 12 bytes, but its tensors end at byte 8", NULL}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		 "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", -1, 8, {"'a'", "overlap"}},
		{"{\"__metadata__\":{},\"__metadata__\":{}}", -1, 0, {"\"__metadata__\" appears twice", NULL}},
		{"{\"a\":{\"dtype\":\"F32\",", -1, 0, {"malformed JSON", NULL}},
		{"[1, 2]", -1, 0, {"does not start with '{'", NULL}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", -1, 8, {"garbage", NULL}},
		{"{\"a\":5}", -1, 0, {"'a'", "not an object"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,80]}}", -1, 8, {"'a'", "out of the data section"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", -1, 8, {"'a'", "end before"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "hold 8 bytes"}},
		{"{\"a\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,4]}}", -1, 8, {"'a'", "need 8"}},
		{"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "missing \"dtype\""}},
		{"{\"a\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "\"dtype\" is not a string"}},
		{"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "missing \"shape\""}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "dimension 1"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "dimension 0"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}", -1, 8, {"'a'", "not an array"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", -1, 8, {"'a'", "missing \"data_offsets\""}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", -1, 8, {"'a'", "[begin, end]"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", -1, 8,
		 {"'a'", "too large"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		 "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", -1, 12, {"'a'", "overlap"}},
		{"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		 "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", -1, 16, {"'a'", "twice"}},
		{"{\"__metadata__\":[1]}", -1, 0, {"__metadata__", NULL}},
	};
	unsigned char data[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	struct ark_st st;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct bad_case *c = &cases[i];
		const char *p = write_raw("bad.safetensors", c->header, c->hlen, data, c->data_bytes);
		if (ark_st_open(&st, p) != ARK_ERR)
			fail_msg("case %zu (%s) was accepted", i, c->header);
		assert_null(st.map); /* cleaned up */
		assert_error_has("bad.safetensors");
		for (int k = 0; k < 2; k++)
			if (c->expect[k] && !strstr(ark_last_error(), c->expect[k]))
				fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, ark_last_error(), c->expect[k]);
		/* loading reports the same */
		void *bufs[NT] = {0};
		assert_int_equal(ark_st_load(p, &model, M_W, bufs, NULL), ARK_ERR);
		assert_error_has("bad.safetensors");
		unlink(p);
	}

	/* shorter than the 8-byte length */
	const char *p = path_of("short.safetensors");
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	fputs("abc", f);
	fclose(f);
	assert_int_equal(ark_st_open(&st, p), ARK_ERR);
	assert_error_has("short.safetensors");
	assert_error_has("shorter than");
	unlink(p);

	assert_int_equal(ark_st_open(&st, path_of("missing.safetensors")), ARK_ERR);
	assert_error_has("missing.safetensors: cannot open");
}

/* ---- a header of 80,000 entries --------------------------------------------------------------- */

static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 80,000 one-element F16 tensors t0 ... t79999; with dup, the last one is called t0 again. */
static const char *write_many(const char *name, int n, int dup)
{
	size_t cap = (size_t)n * 80 + 16, k = 0;
	char *h = malloc(cap);
	assert_non_null(h);
	k += (size_t)snprintf(h + k, cap - k, "{");
	for (int i = 0; i < n; i++)
		k += (size_t)snprintf(h + k, cap - k, "%s\"t%d\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
				      i ? "," : "", dup && i == n - 1 ? 0 : i, 2 * i, 2 * i + 2);
	snprintf(h + k, cap - k, "}");
	unsigned char *data = calloc((size_t)n, 2);
	assert_non_null(data);
	const char *p = write_raw(name, h, -1, data, (size_t)n * 2);
	free(h);
	free(data);
	return p;
}

/* Names are sorted once, not compared pairwise: opening, finding every name and finding the
 * duplicate take well under the bound here (the pairwise check took 20 s, the lookups 17 s). */
static void test_large_header(void **state)
{
	enum { N = 80000 };
	struct ark_st st;
	char name[16];
	const char *p = write_many("many.safetensors", N, 0);
	double t0 = seconds();
	assert_int_equal(ark_st_open(&st, p), ARK_OK);
	assert_int_equal(st.n, N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "t%d", i);
		const struct ark_st_entry *e = ark_st_find(&st, name);
		assert_non_null(e);
		assert_int_equal(e->begin, 2 * i);
		assert_true(e == &st.e[i]); /* entries stay in file order */
	}
	assert_null(ark_st_find(&st, "t80000"));
	assert_null(ark_st_find(&st, ""));
	ark_st_close(&st);
	p = write_many("many_dup.safetensors", N, 1);
	assert_int_equal(ark_st_open(&st, p), ARK_ERR);
	assert_error_has("tensor 't0' appears twice in the header");
	double dt = seconds() - t0;
	if (dt > 10)
		fail_msg("two headers of %d entries took %.1f s", N, dt);
	unlink(path_of("many.safetensors"));
	unlink(path_of("many_dup.safetensors"));
}

/* ---- files that do not fit the model ---------------------------------------------------------- */

/* ---- block-quantized weights: U8 bytes of the blocks, [rows, last / 32 * block bytes] ---------- */

static void test_quantized(void **state)
{
	struct ark_tensor t[3] = {
		{.name = "w4", .dtype = ARK_Q4_1, .role = ARK_ROLE_WEIGHT, .ndim = 2, .shape = {3, 64}},  /* U8 [3, 40] */
		{.name = "w8", .dtype = ARK_Q8_0, .role = ARK_ROLE_WEIGHT, .ndim = 2, .shape = {2, 96}},  /* U8 [2, 102] */
		{.name = "tab", .dtype = ARK_Q8_0, .role = ARK_ROLE_WEIGHT, .ndim = 1, .shape = {32}},    /* U8 [34] */
	};
	struct ark_model m = {.name = "qm", .n_tensors = 3, .tensors = t};
	unsigned char src[3][204], dst[3][204];
	void *sb[3] = {src[0], src[1], src[2]}, *db[3] = {dst[0], dst[1], dst[2]};
	const size_t bytes[3] = {120, 204, 34};
	int loaded = -1;
	struct ark_st st;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ark_tensor_bytes(&t[i]), bytes[i]);
		ark_fill_random_quant(src[i], t[i].dtype, i == 2 ? 1 : t[i].shape[0], t[i].shape[t[i].ndim - 1], 7 + i, 1.0f);
	}
	memset(dst, 0, sizeof dst);
	const char *p = path_of("q.safetensors");
	assert_int_equal(ark_st_write(p, &m, M_W, sb), ARK_OK);
	assert_int_equal(ark_st_open(&st, p), ARK_OK);
	const struct ark_st_entry *e = ark_st_find(&st, "w4");
	assert_string_equal(e->dtype_str, "U8");
	assert_int_equal(e->ndim, 2);
	assert_true(e->shape[0] == 3 && e->shape[1] == 40);
	e = ark_st_find(&st, "w8");
	assert_true(e->shape[0] == 2 && e->shape[1] == 102 && e->end - e->begin == 204);
	e = ark_st_find(&st, "tab");
	assert_true(e->ndim == 1 && e->shape[0] == 34);
	ark_st_close(&st);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_OK);
	assert_int_equal(loaded, 3);
	for (int i = 0; i < 3; i++)
		assert_memory_equal(src[i], dst[i], bytes[i]);
	unlink(p);

	/* the blocks as written by hand, as a converter from GGUF writes them */
	p = write_raw("q.safetensors", "{\"w4\":{\"dtype\":\"U8\",\"shape\":[3,40],\"data_offsets\":[0,120]}}", -1,
		      src[0], 120);
	memset(dst, 0, sizeof dst);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_OK);
	assert_memory_equal(src[0], dst[0], 120);

	/* another dtype than U8: the elements' own (F16), or bytes of another kind (I8) */
	p = write_raw("q.safetensors", "{\"w4\":{\"dtype\":\"F16\",\"shape\":[3,64],\"data_offsets\":[0,384]}}", -1,
		      (unsigned char[384]){0}, 384);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_ERR);
	assert_string_equal(ark_last_error(),
			    "tensor 'w4' of file q.safetensors has dtype F16, the model's is q4_1 (U8: its GGUF blocks as bytes)");
	p = write_raw("q.safetensors", "{\"w8\":{\"dtype\":\"I8\",\"shape\":[2,102],\"data_offsets\":[0,204]}}", -1,
		      src[1], 204);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_ERR);
	assert_error_has("has dtype I8, the model's is q8_0 (U8");

	/* U8 in the model's element shape, a byte count that is not whole blocks, other rows */
	p = write_raw("q.safetensors", "{\"w4\":{\"dtype\":\"U8\",\"shape\":[3,64],\"data_offsets\":[0,192]}}", -1,
		      (unsigned char[192]){0}, 192);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_ERR);
	assert_string_equal(ark_last_error(), "tensor 'w4' of file q.safetensors has shape [3, 64], the model's q4_1 [3, 64] "
					      "is stored as U8 [3, 40] (20 bytes per block of 32 elements along the last axis)");
	p = write_raw("q.safetensors", "{\"w8\":{\"dtype\":\"U8\",\"shape\":[2,100],\"data_offsets\":[0,200]}}", -1,
		      src[1], 200);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_ERR);
	assert_error_has("is stored as U8 [2, 102] (34 bytes per block");
	p = write_raw("q.safetensors", "{\"w8\":{\"dtype\":\"U8\",\"shape\":[1,102],\"data_offsets\":[0,102]}}", -1,
		      src[1], 102);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_ERR);
	assert_error_has("has shape [1, 102], the model's q8_0 [2, 96] is stored as U8 [2, 102]");
	/* the bytes of the entry must be those of its shape (the file itself is refused) */
	p = write_raw("q.safetensors", "{\"w4\":{\"dtype\":\"U8\",\"shape\":[3,40],\"data_offsets\":[0,119]}}", -1,
		      src[0], 119);
	assert_int_equal(ark_st_load(p, &m, M_W, db, &loaded), ARK_ERR);
	assert_error_has("hold 119 bytes, but dtype U8 and shape of 120 elements need 120");
	assert_true(dst[1][0] == 0 && dst[1][1] == 0); /* nothing loaded on a failure */
	unlink(p);
}

static void test_model_mismatch(void **state)
{
	uint16_t x[6] = {0x3c00, 0xc000, 0x3800, 0x4200, 0xb400, 0x2e66}; /* fp16 [2, 3] */
	void *bufs[NT];
	int loaded = -1;
	const char *p;

	alloc_bufs(bufs, 0);

	/* a good input file first */
	p = write_raw("in.safetensors", "{\"x\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]}}", -1, x, 12);
	assert_int_equal(ark_st_load(p, &model, M_IN | M_W, bufs, &loaded), ARK_OK);
	assert_int_equal(loaded, 1);
	assert_memory_equal(bufs[0], x, 12);

	/* the role must be allowed */
	assert_int_equal(ark_st_load(p, &model, M_W, bufs, &loaded), ARK_ERR);
	assert_string_equal(ark_last_error(), "tensor 'x' of file in.safetensors is an input of the model, not a weight");
	assert_int_equal(loaded, 0);

	p = write_raw("in.safetensors",
		      "{\"x\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
		      "\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[12,24]}}",
		      -1, (unsigned char[24]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, 24);
	memset(bufs[0], 0xab, 12);
	assert_int_equal(ark_st_load(p, &model, M_IN | M_W, bufs, &loaded), ARK_ERR);
	assert_string_equal(ark_last_error(),
			    "tensor 'h' of file in.safetensors is an activation of the model, not an input or weight");
	assert_int_equal(((unsigned char *)bufs[0])[0], 0xab); /* 'x' was not loaded either */

	/* unknown name */
	p = write_raw("w.safetensors", "{\"zz\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, x, 4);
	assert_int_equal(ark_st_load(p, &model, M_W, bufs, &loaded), ARK_ERR);
	assert_error_has("tensor 'zz' of file w.safetensors is not a tensor of model 'm'");

	/* dtype mismatch: w is bf16 */
	p = write_raw("w.safetensors", "{\"w\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[0,10]}}", -1, x, 10);
	assert_int_equal(ark_st_load(p, &model, M_W, bufs, &loaded), ARK_ERR);
	assert_error_has("tensor 'w' of file w.safetensors has dtype F16, the model's is bf16");

	/* shape mismatch: same element count, other shape */
	p = write_raw("w.safetensors", "{\"b\":{\"dtype\":\"F32\",\"shape\":[2,6],\"data_offsets\":[0,48]}}", -1,
		      (float[12]){1, 2, 3}, 48);
	assert_int_equal(ark_st_load(p, &model, M_W, bufs, &loaded), ARK_ERR);
	assert_error_has("tensor 'b' of file w.safetensors has shape [2, 6], the model's is [2, 2, 1, 3]");

	/* the model's tensor has no buffer */
	p = write_raw("w.safetensors", "{\"w\":{\"dtype\":\"BF16\",\"shape\":[5],\"data_offsets\":[0,10]}}", -1, x, 10);
	void *saved = bufs[1];
	bufs[1] = NULL;
	assert_int_equal(ark_st_load(p, &model, M_W, bufs, &loaded), ARK_ERR);
	assert_error_has("'w'");
	bufs[1] = saved;
	assert_int_equal(ark_st_load(p, &model, M_W, bufs, &loaded), ARK_OK);
	assert_memory_equal(bufs[1], x, 10);

	free_bufs(bufs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_handwritten),
		cmocka_unit_test(test_dotted_names),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_large_header),
		cmocka_unit_test(test_model_mismatch),
		cmocka_unit_test(test_quantized),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, setup, teardown);
}
