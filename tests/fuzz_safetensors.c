/* fuzz_safetensors.c: libFuzzer target for the safetensors reader: any bytes as a file through
 * ark_st_open must give either a table that holds what the format promises or an error, never a
 * crash, hang, leak or undefined behaviour; a table whose tensors all have arkgen dtypes must then
 * load, through ark_st_load, into a model made of them, byte for byte. The first run into an
 * empty corpus folder writes a few valid files there (ark_st_write) to start from. */
#define _GNU_SOURCE /* memfd_create */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ark.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define CHECK(c)                                                                              \
	do {                                                                                  \
		if (!(c)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                              \
		}                                                                             \
	} while (0)

/* Seeds: every arkgen dtype, 1 to 4 dimensions, an empty tensor, a file with no tensor. */
static void write_seeds(const char *dir)
{
	static uint8_t bytes[4096];
	struct ark_tensor t[] = {
		{ .name = "x", .dtype = ARK_FP16, .role = ARK_ROLE_WEIGHT, .ndim = 2, .shape = { 2, 3 } },
		{ .name = "w.bias", .dtype = ARK_BF16, .role = ARK_ROLE_WEIGHT, .ndim = 1, .shape = { 5 } },
		{ .name = "b", .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT, .ndim = 4, .shape = { 2, 2, 1, 3 } },
		{ .name = "e", .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT, .ndim = 2, .shape = { 0, 3 } },
	};
	void *bufs[] = { bytes, bytes, bytes, bytes };
	char path[512];
	for (size_t i = 0; i < sizeof bytes; i++)
		bytes[i] = (uint8_t)(i * 37);
	for (int n = 0; n <= 4; n++) {
		struct ark_model m = { .name = "seed", .n_tensors = n, .tensors = t };
		snprintf(path, sizeof path, "%s/seed%d.safetensors", dir, n);
		ark_st_write(path, &m, 1u << ARK_ROLE_WEIGHT, bufs);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	for (int i = 1; i < *argc; i++) {
		DIR *d = (*argv)[i][0] != '-' ? opendir((*argv)[i]) : NULL;
		if (!d)
			continue;
		struct dirent *e;
		int files = 0;
		while ((e = readdir(d)))
			files += e->d_name[0] != '.';
		closedir(d);
		if (!files)
			write_seeds((*argv)[i]);
		break;
	}
	return 0;
}

/* The input as a file: a memfd, named through /proc. */
static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fd < 0) {
		fd = memfd_create("fuzz.safetensors", 0);
		CHECK(fd >= 0);
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	CHECK(ftruncate(fd, 0) == 0);
	CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);

	struct ark_st st;
	if (ark_st_open(&st, path)) {
		CHECK(st.map == NULL && st.e == NULL && st.n == 0);
		CHECK(ark_last_error()[0]);
		return 0;
	}
	/* what an accepted file promises: ranges inside the data section and tiling it; names found */
	uint64_t covered = 0;
	int arkable = 1;
	for (int i = 0; i < st.n; i++) {
		const struct ark_st_entry *e = &st.e[i];
		CHECK(e->begin <= e->end && e->end <= st.data_bytes);
		covered += e->end - e->begin;
		CHECK(ark_st_find(&st, e->name) == e);
		CHECK(strcmp(e->name, "__metadata__"));
		arkable &= e->dtype >= 0 && e->ndim <= ARK_MAX_DIMS;
	}
	CHECK(covered == st.data_bytes);
	CHECK(st.data + st.data_bytes == (unsigned char *)st.map + st.map_bytes);

	/* loading into a model made of the file's tensors copies each one's bytes */
	if (arkable && st.n) {
		struct ark_tensor *t = calloc((size_t)st.n, sizeof *t);
		void **bufs = calloc((size_t)st.n, sizeof *bufs);
		CHECK(t && bufs);
		for (int i = 0; i < st.n; i++) {
			const struct ark_st_entry *e = &st.e[i];
			t[i] = (struct ark_tensor){ .name = e->name, .dtype = (uint8_t)e->dtype, .role = ARK_ROLE_INPUT,
						    .ndim = (uint8_t)e->ndim };
			memcpy(t[i].shape, e->shape, sizeof(int64_t) * (size_t)e->ndim);
			bufs[i] = malloc(e->end - e->begin + 1);
			CHECK(bufs[i]);
		}
		struct ark_model m = { .name = "fuzz", .n_tensors = st.n, .tensors = t };
		int loaded = -1;
		CHECK(ark_st_load(path, &m, 1u << ARK_ROLE_INPUT, bufs, &loaded) == ARK_OK);
		CHECK(loaded == st.n);
		for (int i = 0; i < st.n; i++) {
			CHECK(!memcmp(bufs[i], st.data + st.e[i].begin, st.e[i].end - st.e[i].begin));
			free(bufs[i]);
		}
		free(bufs);
		free(t);
	}
	ark_st_close(&st);
	return 0;
}
