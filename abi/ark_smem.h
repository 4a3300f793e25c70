/* ark_smem.h: dynamic shared memory every tile template needs, in bytes: the smem column of the
 * template catalog (ark_task.h's TMPL_ROWS). Constant expressions of ARK_THREADS (threads per CTA),
 * which the includer defines before it uses them: a generated file as a number, arkgen as the
 * variable it checks --smem with (codegen/tiling.c), so both evaluate the same expressions. Plain C
 * macros, no code. */
#ifndef ARK_SMEM_H
#define ARK_SMEM_H

#define ARK_MAX_(a, b) ((a) > (b) ? (a) : (b))

/* ---- matmul (templates/op_matmul.cuh, which describes the paths) ---------------------------- */
#ifndef ARK_MM_SMALL_M
#define ARK_MM_SMALL_M 16 /* the most rows a streaming tile takes (16-bit: ARK_MM_STREAMS16 below) */
#endif
/* A matmul of fp16/bf16 with a b of the same dtype streams b (tiles of all of M rows) only up to
 * these many rows: ARK_MM_STREAM_KN with b [K, N], ARK_MM_STREAM_NK with b [N, K] (transpose_b), and
 * b [N, K] of up to 8 rows from K = ARK_MM_STREAM_NK8_K, of up to 16 from ARK_MM_STREAM_NK16_K;
 * above, every tile of it runs on the tensor cores, the last tile of a few rows of a large M too.
 * The streaming tile's work grows with its rows, the tensor-core tile's hardly, but the latter has
 * the smaller fixed cost: in the H200 table (bench/calib/h200.txt, every SM busy) b [N, K] 8 x 16 x
 * 4096 streams in 15.2 us against 24.3 on the mma tile, 8 x 128 x 4096 in 49.0 against 61.4, but 8
 * x 16 x 1024 takes 10.4 against 8.8, 16 x 32 x 4096 27.1 against 24.9 (bench/NOTES.md). fp32,
 * quantized b and a fused norm keep the streaming paths up to ARK_MM_SMALL_M. K is the matmul's
 * whole K, which arkgen and the tile both know. */
#ifndef ARK_MM_STREAM_KN /* a probe may set them (bench/mm_probe); arkgen and the loop kernel agree */
#define ARK_MM_STREAM_KN 8
#endif
#ifndef ARK_MM_STREAM_NK
#define ARK_MM_STREAM_NK 4
#endif
#define ARK_MM_STREAM_NK8_K 2048
#define ARK_MM_STREAM_NK16_K 8192
#define ARK_MM_STREAMS16(M, K, tb)                                                                  \
	((tb) ? (M) <= ARK_MM_STREAM_NK || ((M) <= 8 && (K) >= ARK_MM_STREAM_NK8_K) ||             \
			((M) <= 16 && (K) >= ARK_MM_STREAM_NK16_K)                                 \
	      : (M) <= ARK_MM_STREAM_KN)
/* An fp32 matmul of more rows than ARK_MM_STREAM32 runs every tile of it, the last of a few rows too,
 * on the FMA tile of shared-memory stages (ark_mm_ffma); one of at most ARK_MM_STREAM32 rows streams
 * b, or takes the FMA tile where its rows are not aligned. The streaming tile reads a row of a from
 * shared memory for every weight it streams, and runs out of shared-memory bandwidth as rows grow: in
 * the H100 table a 16 x 64 x 4096 fp32 tile streams in 92-104 us with every SM busy, ~10 GB/s an SM,
 * where the FMA tile does 32 x 64 x 4096 in 96 (8 x 8 sums a thread from 16-byte reads). */
#define ARK_MM_STREAM32 8
#define ARK_MM_FFMA(M) ((M) > ARK_MM_STREAM32)
#ifndef ARK_MM_RING_BYTES
#define ARK_MM_RING_BYTES 65536 /* streaming: cp.async ring (per-thread 16-byte slots) */
#endif
#ifndef ARK_MM_A_BYTES
#define ARK_MM_A_BYTES (ARK_THREADS * 128 > 32768 ? ARK_THREADS * 128 : 32768) /* streaming: chunk of a */
#endif
#define ARK_MM_TC 4 /* stream_nk: output columns one warp computes at once */
#define ARK_MM_SACC_BYTES (128 * ARK_MM_SMALL_M * 4) /* stream_nk: fp32 sums [MB][tn] */
/* streaming, a fused rmsnorm of a: each row's 1 / rms [MB] and the warps' partial sums [warps][MB] */
#define ARK_MM_PRE_BYTES (ARK_MM_SMALL_M * (ARK_THREADS / 32 + 1) * 4)
#define ARK_MM_STREAM_SMEM (ARK_MM_RING_BYTES + ARK_MM_A_BYTES + ARK_MM_SACC_BYTES + ARK_MM_PRE_BYTES)

#define ARK_MM_MAX_STAGES 8 /* mma: deepest pipeline (small tiles) */
#define ARK_MM_WARPS 8      /* mma: warps that compute (the others only load) */
#ifndef ARK_MM_STG_CH
#define ARK_MM_STG_CH 4 /* mma: staged 16-byte vectors per thread and operand per stage */
#endif
/* mma: the largest stage, a 128 x 128 tile 32 deep ([128][40] of a, [128][40] or [32][136] of b), at
 * least twice; ffma: a 128 x 128 fp32 tile as deep as ARK_MM_STG_CH vectors a thread allow ([128][36]
 * of a and of b at 256 threads), twice. The shared memory of the streaming path, which is larger,
 * holds more stages. */
#define ARK_MM_MMA_STAGE (128 * 40 * 2 + 128 * 40 * 2)
#define ARK_MM_FFMA_STAGE (2 * 128 * (4 * ARK_MM_STG_CH * ARK_THREADS / 128 + 4) * 4)
#define ARK_MM_MMA_SMEM (2 * ARK_MAX_(ARK_MM_MMA_STAGE, ARK_MM_FFMA_STAGE))

/* MATMUL and MATMUL_PARTIAL: the largest of the paths */
#define ARK_SMEM_MATMUL ARK_MAX_(ARK_MM_STREAM_SMEM, ARK_MM_MMA_SMEM)
#define ARK_SMEM_REDUCE 0

/* ---- the others ----------------------------------------------------------------------------- */
#define ARK_SMEM_ELEMENTWISE 0          /* ELEMENTWISE, EW_CHAIN (op_elementwise.cuh) */
#define ARK_SMEM_ROWS (ARK_THREADS / 32 * 4) /* SOFTMAX, LAYERNORM, RMSNORM, L2NORM: a float per warp (op_rows.cuh) */
#define ARK_SMEM_COPY 0                 /* op_copy.cuh */
#define ARK_SMEM_EMBEDDING (ARK_THREADS * 4) /* EMBEDDING: the ids of up to ARK_THREADS rows (op_view.cuh) */
/* STRIDED (op_view.cuh): a transposed box of at most ARK_STRIDED_BOX x ARK_STRIDED_BOX elements of 4
 * bytes or less, its rows one longer */
#define ARK_STRIDED_BOX 64
#define ARK_SMEM_STRIDED (ARK_STRIDED_BOX * (ARK_STRIDED_BOX + 1) * 4)
#define ARK_SMEM_COMM 0                 /* SUM, GATHER, SEND_LL, SUM_LL (op_comm.cuh) */
#define ARK_SMEM_REDUCE_MEAN (2 * ARK_THREADS * 4) /* REDUCE_MEAN: a sum and a count per thread (op_reduce.cuh) */
/* REDUCE_MEAN: the elements a thread loads before it adds them (op_reduce.cuh), which its price
 * counts round trips by (codegen/tile.c, reduce_mean_us) */
#define ARK_RM_BATCH 8

/* ATTENTION (op_attention.cuh). Tensor cores: Q [BQ][LD], K and V [BK][LD] (16-bit, LD = 128 + 8),
 * a flag per key of the block, BQ and BK at most 128; the fp32 partial outputs of the 8 warps reuse
 * that space after the last key block. SIMT (fp32): Q [BQ][Dh], K [BK][Dh + 1], V [BK][Dh], flags, fp32,
 * BQ <= 128, BK = 32, Dh <= 128: smaller. At most the matmul's need, so attention raises no model's. */
#define ARK_ATT_LD (128 + 8)
#define ARK_SMEM_ATTENTION (128 * ARK_ATT_LD * 2 + 2 * 128 * ARK_ATT_LD * 2 + 128 * 4)

/* DECODE (op_decode.cuh): q of at most ARK_DEC_ROWS rows [ARK_DEC_ROWS][128] fp32, their scores for a
 * block of ARK_DEC_BK keys [ARK_DEC_ROWS][ARK_DEC_BK], per row its max, sum and rescale, and the key
 * groups' outputs [ARK_THREADS][ARK_DEC_ROWS] summed at the end. ARGMAX: a value and an index per warp. */
#define ARK_DEC_ROWS 16
#define ARK_DEC_BK 128
#define ARK_SMEM_DECODE (ARK_DEC_ROWS * 128 * 4 + ARK_DEC_ROWS * ARK_DEC_BK * 4 + 3 * ARK_DEC_ROWS * 4 + \
			 ARK_THREADS * ARK_DEC_ROWS * 4)
/* A DECODE task of more than ARK_DEC_ROWS query rows (16-bit) runs the attention tile's tensor cores
 * (op_decode.cuh): the template needs the larger of the two. */
#define ARK_SMEM_DECODE_TILE (ARK_SMEM_DECODE > ARK_SMEM_ATTENTION ? ARK_SMEM_DECODE : ARK_SMEM_ATTENTION)
#define ARK_SMEM_ARGMAX (ARK_THREADS / 32 * 8)
#define ARK_ROPE_TABLE 256 /* ROPE: pairs of a head whose angles a row's table holds (rotary_dim / 2 at most) */
#define ARK_SMEM_ROPE (ARK_ROPE_TABLE * 2 * 4) /* a row's cos and sin of every pair of a head (op_decode.cuh) */

/* DEQUANT (op_quant.cuh): two buffers of a chunk of ARK_THREADS blocks (at most 34 bytes each, q8_0),
 * each with room for the 16-byte boundary below the chunk's first block and the last 4-byte word read. */
#define ARK_DQ_BLOCKS ARK_THREADS
#define ARK_DQ_BUF_BYTES ((ARK_DQ_BLOCKS * 34 + 32 + 15) / 16 * 16)
#define ARK_SMEM_DEQUANT (2 * ARK_DQ_BUF_BYTES)

#endif
