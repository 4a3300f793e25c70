/* calib_analytic.c: a calibration table of bench/calibrate's grid (bench/calib_grid.h) with the
 * analytic model's times instead of measured ones, marked "source analytic" (uncalibrated): the
 * placeholder of a GPU not measured yet, in the format bench/calibrate writes.
 *   build/bench/calib_analytic "NVIDIA H100 80GB HBM3" > bench/calib/h100.txt */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/calib_grid.h"
#include "codegen/calib.h"
#include "codegen/graph.h"

int main(int argc, char **argv)
{
	const char *gpu_name = argc > 1 ? argv[1] : "unknown GPU";
	int sms = argc > 2 ? atoi(argv[2]) : 132;
	int n = calib_grid(NULL, 0);
	struct calib_gpoint *p = malloc((size_t)n * sizeof *p);
	if (!p || sms < 1)
		return 1;
	calib_grid(p, n);
	struct part_gpu gpu;
	part_gpu_default(&gpu, sms);
	printf("# arkgen calibration table, in the format of bench/calibrate (arkgen --gpu reads it).\n"
	       "# uncalibrated: generated from the analytic model by bench/calib_analytic.c, not measured:\n"
	       "# run bench/calibrate on the GPU to replace it.\n");
	printf("gpu %s\nsms %d\nthreads 256\ndate -\nsource analytic\n", gpu_name, sms);
	printf("proto task_us %g\nproto hop_us %g\nproto doorbell_us %g\nproto barrier_us %g\n", gpu.task_us, gpu.hop_us,
	       gpu.doorbell_us, gpu.barrier_us);
	printf("proto dram_gbps %g\nproto sm_gbps %g\n", gpu.dram_gbps, gpu.sm_gbps);
	printf("# template dtype layout m n k alone_us busy_us\n");
	for (int i = 0; i < n; i++) {
		int layout = 0;
		while (strcmp(calib_layout_name[layout], p[i].layout))
			layout++;
		struct calib_query q = {p[i].tmpl, p[i].dtype, layout, p[i].m, p[i].n, p[i].k};
		double us[2];
		calib_analytic(&gpu, &q, us);
		printf("%s %s %s %d %d %d %.4g %.4g\n", calib_tmpl_name(p[i].tmpl), dtype_name[p[i].dtype], p[i].layout,
		       p[i].m, p[i].n, p[i].k, us[CALIB_ALONE], us[CALIB_BUSY]);
	}
	free(p);
	return 0;
}
