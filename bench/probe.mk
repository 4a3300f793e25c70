# probe.mk: rules of the template probes (included by the top-level Makefile). `make bench-probe`
# builds $(B)/bench/stream_probe (batch-1 streaming rate of the matmul tile templates under several
# tilings of a 4096x4096 bf16 layer and of q4_1 and q8_0 ones, against a plain contiguous read; then the matmul phases of a
# llama1b decode layer on cold weights, each tile's time split by ARK_MM_STAMP) and $(B)/bench/chain_probe (the
# elementwise-chain template alone, one CTA: latency per step) and $(B)/bench/loop_probe (the loop
# kernel's protocol costs: dispatch, signal, hop, a small task, barrier) and $(B)/bench/mm_probe (the
# matmul tiles against cuBLAS on the same shapes, side by side; links cuBLAS from the CUDA toolkit) and
# $(B)/bench/decode_probe (the DECODE tile alone, one task per CTA, one task or a whole layer) and
# $(B)/bench/wgmma_probe (the phases of the warpgroup-MMA matmul tile, stamped by its SM's clock) and
# $(B)/bench/ring_probe (an SM's rate on weights held in L2, read as the streaming tile's ring reads them)
# and $(B)/bench/icache_probe (the cost of fetching straight-line code of 4-256 KB run once) and
# $(B)/bench/bulk_probe (cold weights streamed by one CTA an SM: 16-byte cp.async rings against
# one-dimensional bulk copies) and $(B)/bench/tma_probe (a 16-bit tile's stages from L2: cp.async and
# two-dimensional bulk tensor copies, rings of several kinds against a consumer).

.PHONY: bench-probe
bench-probe: $(B)/bench/stream_probe $(B)/bench/chain_probe $(B)/bench/mm_probe

$(B)/bench/stream_probe: bench/stream_probe.cu bench/bench_cuda.h $(wildcard templates/*.cuh abi/*.h abi/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -DARK_TILES_FP16=0 -DARK_TILES_FP32=0 -DARK_TILES_QUANT=1 \
		$(INC) $< -o $@

# $(B)/bench/icache_probe: what an SM pays to fetch straight-line code it runs once, by its size.
bench-probe: $(B)/bench/icache_probe
$(B)/bench/icache_probe: bench/icache_probe.cu bench/bench_cuda.h
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -Ibench $< -o $@

# $(B)/bench/bulk_probe: cold weights, one CTA an SM: the streaming tile's cp.async ring against bulk copies.
bench-probe: $(B)/bench/bulk_probe
$(B)/bench/bulk_probe: bench/bulk_probe.cu bench/bench_cuda.h bench/bench_async.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -Ibench $< -o $@

# $(B)/bench/ring_probe: how fast an SM takes in weights held in L2 through the streaming tile's ring.
bench-probe: $(B)/bench/ring_probe
$(B)/bench/ring_probe: bench/ring_probe.cu bench/bench_cuda.h
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -Ibench $< -o $@

$(B)/bench/chain_probe: bench/chain_probe.cu bench/bench_cuda.h $(wildcard templates/*.cuh abi/*.h abi/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -DARK_TILES_FP16=0 -DARK_TILES_BF16=0 \
		$(INC) $< -o $@

# $(B)/bench/loop_probe: the loop kernel's protocol costs (bench/loop_probe.h, shared with calibrate).
bench-probe: $(B)/bench/loop_probe
$(B)/bench/loop_probe: bench/loop_probe.cu bench/loop_probe.h $(wildcard templates/*.cuh abi/*.h abi/*.cuh) $(B)/libarkrt.a
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(INC) $< $(B)/libarkrt.a -lcjson -lpthread -o $@

$(B)/bench/mm_probe: bench/mm_probe.cu bench/bench_cuda.h bench/bench_fill.cuh bench/bench_mm.cuh $(wildcard templates/*.cuh abi/*.h abi/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -DARK_TILES_FP16=0 -DARK_TILES_FP32=0 \
		$(INC) -Ibench $< -lcublas -o $@

bench-probe: $(B)/bench/decode_probe
$(B)/bench/decode_probe: bench/decode_probe.cu bench/bench_cuda.h bench/bench_fill.cuh $(wildcard templates/*.cuh abi/*.h abi/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -DARK_TILES_FP32=0 -DARK_TILES_BF16=0 \
		$(INC) -Ibench $< -o $@

bench-probe: $(B)/bench/wgmma_probe
$(B)/bench/wgmma_probe: bench/wgmma_probe.cu bench/bench_cuda.h bench/bench_async.cuh bench/bench_fill.cuh bench/bench_mm.cuh $(wildcard templates/*.cuh abi/*.h abi/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -DARK_TILES_FP16=0 -DARK_TILES_FP32=0 \
		$(INC) -Ibench $< -o $@

# $(B)/bench/tma_probe: a 16-bit tile's stages from L2: cp.async and bulk tensor copies, rings of several
# kinds against a consumer.
bench-probe: $(B)/bench/tma_probe
$(B)/bench/tma_probe: bench/tma_probe.cu bench/bench_cuda.h bench/bench_async.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -Ibench $< -o $@
