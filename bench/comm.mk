# comm.mk: rules of the GPU-to-GPU communication benchmarks (included by the top-level Makefile).
# `make bench-comm` builds $(B)/bench/bench_comm (latency/throughput of three transports between GPU 0
# and GPU 1, linking the DMA engine of libarkrt) and $(B)/bench/bench_nccl (ncclAllReduce); no GPU
# is needed to build. Run them with bench/comm.sh.

NCCL_HOME    ?= $(CUDA_HOME)
NCCL_INC     ?= $(NCCL_HOME)/include
NCCL_LIB     ?= $(NCCL_HOME)/lib
COMM_NVFLAGS := -O3 -std=c++17 $(GENCODE) -lineinfo -Xcompiler -Wall
COMM_INC     := $(INC)

.PHONY: bench-comm
bench-comm: $(B)/bench/bench_comm $(B)/bench/bench_nccl

$(B)/bench/bench_comm: bench/bench_comm.cu bench/bench_cuda.h dma/dma.h dma/dma_device.cuh abi/ark_memorder.cuh $(B)/libarkrt.a
	@mkdir -p $(dir $@)
	$(NVCC) $(COMM_NVFLAGS) $(COMM_INC) $< $(B)/libarkrt.a -lpthread -o $@

$(B)/bench/bench_nccl: bench/bench_nccl.cu bench/bench_cuda.h
	@mkdir -p $(dir $@)
	$(NVCC) $(COMM_NVFLAGS) -I$(NCCL_INC) $< -L$(NCCL_LIB) -Xlinker -rpath=$(NCCL_LIB) -lnccl -lpthread -o $@
