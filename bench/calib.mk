# calib.mk: rules of the calibration (included by the top-level Makefile). `make calibrate` builds
# $(B)/bench/calibrate, which measures the tile templates and the loop kernel's protocol on the GPU
# and writes the table arkgen --gpu reads (bench/calib/<gpu>.txt); without a GPU it says so and
# exits 0. bench/calib_analytic.c (built by `make bench`) writes the analytic model's table instead.
# `make calibrate-split` builds it once per dtype instead ($(B)/bench/calibrate_fp16, _bf16, _fp32:
# ptxas with sm_90a needs more than 23 GB for the three in one kernel, ~5 GB for one); each measures
# its dtype's points, and -a joins the tables (README, Benchmarks).

.PHONY: calibrate calibrate-split
calibrate: $(B)/bench/calibrate
calibrate-split: $(B)/bench/calibrate_fp16 $(B)/bench/calibrate_bf16 $(B)/bench/calibrate_fp32

# CALIB_TILES='SOFTMAX LAYERNORM': only these templates built (and NOP, BARRIER and COPY, which the
# protocol's schedules run), for `calibrate -t` after a change to them (README, Benchmarks)
calib_used = $(if $(CALIB_TILES),'-DARK_TILES_USED=($(foreach t,$(CALIB_TILES) NOP BARRIER COPY,ARK_TILE_BIT($(t)) |) 0)')

CALIB_DEPS := bench/calibrate.cu bench/calib_grid.h $(wildcard templates/*.cuh abi/*.h abi/*.cuh) $(B)/libarkrt.a

$(B)/bench/calibrate: $(CALIB_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(calib_used) $(INC) $< $(B)/libarkrt.a -lcjson -lpthread -o $@

# one dtype's tiles: the other two left out of the tile dispatch (ARK_TILES_*, templates/ark_tiles.cuh)
calib_only = $(foreach d,FP16 BF16 FP32,-DARK_TILES_$(d)=$(if $(filter $(1),$(d)),1,0))
$(B)/bench/calibrate_%: $(CALIB_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(calib_used) $(call calib_only,$(shell echo $* | tr a-z A-Z)) $(INC) $< $(B)/libarkrt.a -lcjson -lpthread -o $@
