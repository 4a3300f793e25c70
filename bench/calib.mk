# calib.mk: rules of the calibration (included by the top-level Makefile). `make calibrate` builds
# $(B)/bench/calibrate, which measures the tile templates and the loop kernel's protocol on the GPU
# and writes the table arkgen --gpu reads (bench/calib/<gpu>.txt); without a GPU it says so and
# exits 0. bench/calib_analytic.c (built by `make bench`) writes the analytic model's table instead.

.PHONY: calibrate
calibrate: $(B)/bench/calibrate

$(B)/bench/calibrate: bench/calibrate.cu bench/calib_grid.h $(wildcard templates/*.cuh abi/*.h abi/*.cuh) $(B)/libarkrt.a
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(INC) $< $(B)/libarkrt.a -lcjson -lpthread -o $@
