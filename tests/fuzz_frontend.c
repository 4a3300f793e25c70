/* fuzz_frontend.c: libFuzzer target for the front end: any bytes through cfg_load_string + graph_check
 * must give either a graph or a diagnostic, never a crash, hang, leak or undefined behaviour. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/diag.h"
#include "codegen/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/* libconfig 1.5 leaks a string token's buffer when a syntax error follows it: its leak, not ours. */
const char *__lsan_default_suppressions(void)
{
	return "leak:libconfig.so\n";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* libconfig's @include reads other files: not the front end's code, and it could block on a device. */
	if (memmem(data, size, "@include", 8))
		return 0;
	if (!diag_out)
		diag_out = fopen("/dev/null", "w");
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	struct graph g;
	diag_reset();
	int rc = cfg_load_string(&g, "fuzz.cfg", text);
	if (!rc)
		rc = graph_check(&g);
	if (!rc) {
		graph_dump(&g, diag_out);
		graph_dot(&g, diag_out);
		for (int i = 0; i < g.n_tensors; i++)
			ARK_ASSERT(g.tensors[i].ndim > 0 && g.tensors[i].ndim <= ARK_MAX_DIMS);
	} else {
		ARK_ASSERT(diag_errors() > 0);
	}
	graph_free(&g);
	free(text);
	return 0;
}
