// CudaBackendOptions: what a CudaBackend runs, as plain data (no CUDA
// headers), so the DYNSPARSE_CUDA_* switches (cuda_switches.h) are parsed and
// tested without a GPU.
#ifndef DYNSPARSE_KERNELS_CUDA_CUDA_BACKEND_OPTIONS_H_
#define DYNSPARSE_KERNELS_CUDA_CUDA_BACKEND_OPTIONS_H_

#include <cstdint>

#include "kernels/cuda/flash_prefill_config.h"

namespace dynsparse::cuda {

struct CudaBackendOptions {
  int device = 0;
  bool cuda_graphs = true;  // Capture and replay single-token steps.
  // Prefills of at least this many rows run attention on tensor cores (f16
  // operands, attention.h); shorter ones, and decode, stay in f32.
  // DYNSPARSE_CUDA_TC_ATTENTION_ROWS=N overrides it (A/B timing).
  int64_t tensor_core_attention_rows = 256;
  // The same for attention over a key list (a LazyLLM step's live keys).
  // Keyed attention of any row count runs on the tensor-core split kernels,
  // a decode step's new row too: the split-K decode kernel gives each row
  // its own blocks (2 / 4 / 8 rows over 16k f16 keys: 223 / 432 / 856 us),
  // the pipelined kernel streams the keys once for all rows (97-99 us for
  // 1-8 rows; H100, results/bench/h100_run143). LazyLLM keys=cached decode
  // at 4k / 8k / 16k: 6.78 / 7.91 / 9.82 -> 6.58 / 7.60 / 9.31 ms
  // (h100_run144). DYNSPARSE_CUDA_TC_KEYED_ATTENTION_ROWS=N overrides it
  // (9: the decode kernel below 9 rows, as before).
  int64_t tensor_core_keyed_attention_rows = 1;
  // A dense decode attention (at most 8 rows, no key list) over at least
  // this many keys takes the pipelined tensor-core split kernel too, and the
  // step runs eagerly: that kernel's grid follows the key count, so a
  // captured graph would not stay valid (0: never). One row over 4k / 8k /
  // 16k f16 keys: 31 / 55 / 103 us there against 37 / 68 / 121 on the decode
  // kernel (2k: 19.6 / 20.6); Llama-2-7B dense decode at 4k / 8k / 16k 6.09
  // / 6.98 / 8.71 -> 6.04 / 6.77 / 8.29 ms (H100, results/bench/h100_run144).
  // DYNSPARSE_CUDA_TC_DECODE_KEYS=N overrides it.
  int64_t tensor_core_decode_attention_keys = 4096;
  // Prefills whose (query tile, head) grid leaves SMs idle split the keys
  // over more blocks (attention.h key_splits): a token step that revives a
  // few dozen rows over ~1000 live keys. DYNSPARSE_CUDA_SPLIT_ATTENTION=0
  // turns it off (A/B timing).
  bool split_prefill_attention = true;
  // Those split tensor-core prefills stream their keys through a cp.async
  // ring (pipelined_attention.h). DYNSPARSE_CUDA_PIPELINED_SPLITS=0 restores
  // the staged kernel (A/B timing).
  bool pipelined_split_attention = true;
  // Tensor-core prefills without key splits run the FlashAttention-2-style
  // kernel (flash_prefill.h) instead of PrefillAttention's.
  // DYNSPARSE_CUDA_FLASH_PREFILL=0 restores the old kernel (A/B timing).
  bool flash_prefill_attention = true;
  // Its block shape; DYNSPARSE_CUDA_FLASH_CONFIG=4x2|4x3|8x1 overrides it.
  FlashPrefillConfig flash_prefill_config;
  // RopeWriteKv as one kernel, decode attention merging its chunks in the
  // same launch, the ungated MLP's activation in the up GEMV's epilogue
  // (LinearActivate) and, at batch 1, SwiGLU's activation in the up/gate GEMV
  // epilogue and its product in the down GEMV's input (GatedMlp): four
  // launches fewer per decode layer. The
  // environment variable DYNSPARSE_CUDA_FUSE=0 turns it off (A/B timing).
  bool fused_ops = true;
  // With fused_ops: a decode row's RoPE and KV-cache write inside its decode
  // attention (RopeWriteKvAttention, one launch instead of two per layer).
  // DYNSPARSE_CUDA_FUSE_ATTENTION=0 keeps them apart (A/B timing).
  bool fused_decode_attention = true;
  // ... for KV caches of at most this many rows (0: any). The fused kernel
  // saves a launch but is slower on the multi-wave grids of long caches
  // (H200, h200_run7_rope, per layer: -1.8 us at 129 keys, even at 1k,
  // +2.3 us at 4k, +16 us at 16k), likely from its registers (109 vs 80:
  // 2 blocks per SM instead of 3). DYNSPARSE_CUDA_FUSE_ATTENTION_MAX_KEYS=N
  // overrides it.
  int64_t fused_decode_attention_max_keys = 2048;
  // Keys per block of the split-K decode attention (16, 32 or 64; head_dim
  // 128 only, attention.h). DYNSPARSE_CUDA_DECODE_CHUNK=N overrides it.
  int64_t decode_chunk_keys = 64;
  // With fused_ops, dense decode without norm launches (Backend::
  // FusesInputNorm): the q/k/v, up/gate and lm_head GEMVs apply the
  // block's RMSNorm/LayerNorm while loading x, and the o-proj and down GEMVs
  // add into the residual in their epilogue. DYNSPARSE_CUDA_FUSE_NORM=0
  // restores the AddNorm route (A/B timing).
  bool fuse_norm = true;
  // With fuse_norm: of the residual-adding one-row GEMV (the o-projection;
  // OPT's fc2 too), only blocks whose index is a multiple of this load their
  // weights before the PDL wait (0: none; GemvOptions::early_loads_every).
  // H100, run 192: none +1.8% (Llama-2-7B decode), every second tied.
  // DYNSPARSE_CUDA_ACCUMULATE_EARLY_EVERY=N overrides it (A/B timing).
  int64_t accumulate_early_every = 1;
  // On that route the up/gate GEMV writes act(gate) * up (gemv.h
  // gated_pairs) for the down GEMV. DYNSPARSE_CUDA_GATED_PAIRS=0 forms the
  // product in the down GEMV's load instead (GatedGemv; A/B timing).
  bool gated_pairs = true;
  // Prefill norms write their output in the weights' f16/bf16 for the cuBLAS
  // GEMMs that read it (Backend::ProjectionInputDType), instead of f32 that
  // a conversion pass then rounds: same bits, one pass fewer per block.
  // DYNSPARSE_CUDA_ROUNDED_NORM=0 restores the f32 output (A/B timing).
  bool rounded_norm_output = true;
  // Backend::BeginSideWork .. EndSideWork on a second stream (DejaVu's
  // lookahead predictors beside the attention / MLP sub-block; LazyLLM's
  // probe, its TopCount and their download beside the attention).
  // DYNSPARSE_CUDA_SIDE_WORK=0 issues that work in line (A/B timing).
  bool side_work = true;
  // Rows a warp computes in the lazy K/V and head-column O-projection
  // kernels of DejaVu's sparse attention: 0 lets each kernel pick
  // (sparse_ops.h). DYNSPARSE_CUDA_SPARSE_ROWS=2|4 fixes it for both (A/B
  // timing; the tests run each).
  int64_t sparse_rows_per_warp = 0;
  // Lazy K/V completion of f16 weights on tensor cores (lazy_kv_mma.cu: a
  // head's owed tokens ride along with its new one). DYNSPARSE_CUDA_LAZY_MMA=0
  // keeps it on CUDA cores (A/B timing).
  bool lazy_kv_tensor_cores = true;
  // Blocks per SM the tensor-core lazy K/V kernel is built for: 3, or 2
  // (128 registers: a head owing 9-16 tokens keeps two k blocks of loads in
  // flight); 0 picks 2 when the kept heads' blocks fit at 2 an SM.
  // DYNSPARSE_CUDA_LAZY_MMA_BLOCKS=0|2|3 (A/B timing).
  int64_t lazy_kv_mma_blocks_per_sm = 0;
  // A captured decode step holds kernel nodes only (host_copies.h): its
  // staged indices (token ids, positions, the lazy K/V step) reach the GPU
  // through one copy kernel before its first kernel, and its logits leave
  // through a copy kernel, instead of copy-engine nodes between kernels.
  // DYNSPARSE_CUDA_STAGE_ONCE=0 keeps the per-op copy nodes (A/B timing).
  bool stage_once = true;
  // TopK of rows of >= 4096 scores on a cluster of 8 blocks (topk.cu; the
  // one-block kernel took 22 us of OPT-66B's MLP selection).
  // DYNSPARSE_CUDA_TOPK_CLUSTER=0 keeps one block a row (A/B timing).
  bool topk_cluster = true;
  // DejaVu's sparse MLP of a decode row as one launch (sparse_mlp.h) plus
  // the split reduction, instead of the up gather, the transposed gather and
  // the reduction: 0 never, 1 where it measured faster (hidden <= 9216:
  // OPT-13B/30B/66B and Llama-2-7B's gated MLP; above, from 8192 kept units:
  // OPT-175B at keep 0.25 151.8 vs 158.3 us, while keep 0.1 ran 67.7 vs 66.3,
  // results/bench/h200_run107, h200_run47, h200_run54; and wherever the grid
  // of one block an SM holds the units: OPT-175B keep 0.1 84.9-86.8 against
  // the gathers' 87.8-91.2 us on two H100s, h100_run179, h100_run180), 2
  // wherever it applies. DYNSPARSE_CUDA_FUSED_MLP=0|1|2 (A/B timing).
  int64_t fused_sparse_mlp = 1;
  // Its clusters: 4, 8, 12 or 16 column blocks a split, or 0 for the first
  // size whose one wave holds the kept units, in the order 16, 8, 4 for gated
  // MLPs, 16 (while a split holds at most 288 units), 12, 8, 4 for others
  // from hidden 7168 and 12, 8, 4 below (CudaBackend::FusedMlpLaunch;
  // measured in h200_run107 .. h200_run116).
  // DYNSPARSE_CUDA_MLP_CLUSTER=0|4|8|12|16.
  int64_t fused_sparse_mlp_cluster = 0;
  // The fused sparse MLP reads its ids and starts its first weight copies
  // before its PDL wait, overlapping the kernel ahead of it, where the ids
  // are not that kernel's output (CudaBackend::GatherMlp).
  // DYNSPARSE_CUDA_EARLY_MLP=0 turns it off (A/B timing).
  bool early_mlp_copies = true;
  // The fused sparse MLP sums its splits in its own launch (the last block of
  // each column block) instead of a ReduceSplits launch after it. Off: on an
  // H100 (run 176) it tied at OPT-66B keep 0.1 (14 splits, 51.1 against 50.9
  // us) and lost where a split sum walks many splits (62 at OPT-66B keep
  // 0.25: 125.8 against 117.4 us). DYNSPARSE_CUDA_MLP_SUM_IN_KERNEL=1 turns
  // it on (A/B timing).
  bool fused_mlp_sum_in_kernel = false;
  // The fused sparse MLP on a grid of one block an SM (half the blocks, each
  // alone on its SM; the same cluster order) wherever its one wave holds the
  // units, before the grid of two. On H100s, keep 0.1: OPT-175B 84.9 against
  // 89.2-89.8 us, OPT-66B 50.1 against 50.8-50.9 (run 179); alone, OPT-13B's
  // MLP lost 3% and Llama-2-7B's tied (run 180), but in DejaVu decode both
  // gained: 2.970 against 3.022 ms, 4.957 against 5.020 (run 183).
  // DYNSPARSE_CUDA_MLP_ONE_BLOCK=0 turns it off (A/B timing).
  bool fused_mlp_one_block_an_sm = true;
  // A step of 2-8 rows (bench --batch, a LazyLLM step's revived rows) runs
  // q/k/v and up/gate as one GEMV each, as one row does, writing each
  // weight's own [rows, out] output (GemvOptions::segment_ends), instead of
  // one GEMV a weight. DYNSPARSE_CUDA_ROW_GROUPS=0 turns it off (A/B
  // timing).
  bool fused_row_groups = true;
  // With fused_ops and fuse_norm, a dense decode row runs every decoder
  // layer in one persistent kernel (decode_stack.h) where the shape allows
  // it. Off by default: it is still slower than the kernels of each layer
  // (H200, results/bench/h200_run66: Llama-2-7B 4.74 vs 3.88 ms, OPT-6.7B
  // 4.36 vs 4.11 ms). DYNSPARSE_CUDA_DECODE_STACK=1 turns it on.
  bool decode_stack = false;
  // StartRead downloads at once and FinishRead waits for that download only
  // (LazyLLM's probe of the next layer, read while this layer's MLP runs).
  // DYNSPARSE_CUDA_EARLY_READS=0 defers the whole read to FinishRead, a
  // ReadNow there (A/B timing).
  bool early_reads = true;
  // LazyLLM's choice of the tokens to keep runs on the device next to the
  // probe (Backend::TopCount, top_count.h), so the host downloads the kept
  // indices instead of selecting from every score while the device waits.
  // DYNSPARSE_CUDA_TOP_COUNT=0 selects on the host (A/B timing).
  bool top_count = true;
  // ... by TopKRows (sparse_ops.h: value bins, a cluster of 8 from 4096
  // scores) instead of the radix select of top_count.h: the same choice.
  // H100 (results/bench/h100_run153, h100_run156), Llama-2-7B keys=cached
  // decode at 4k / 8k / 16k: 6.489 / 7.272 / 8.819-8.828 ms against 6.525 /
  // 7.295 / 8.859-8.890 by the radix select (run 156: 0.3-0.6% again).
  // DYNSPARSE_CUDA_TOP_COUNT_BINS=0 takes the radix select (A/B timing).
  bool top_count_bins = true;
  // KV caches in f16 (Backend::KvCacheDtype; kv_access.cuh): every decode
  // attention reads half the bytes, and the tensor-core kernels stage the
  // rows as they are. The persistent decode stack reads f32 only, so with
  // decode_stack the caches stay f32. DYNSPARSE_CUDA_KV_F16=0 keeps f32 caches
  // (A/B timing and accuracy).
  bool f16_kv_cache = true;
  // A decode attention over a cache of up to 512 rows merges its key chunks
  // in a cluster through distributed shared memory (attention.h
  // cluster_merge) instead of through global memory and a counter (H200,
  // results/bench/h200_run119: attention 10.8 -> 9.0 us a layer, Llama-2-7B
  // decode 3.92 -> 3.86 ms, OPT-6.7B 4.13 -> 4.09 ms).
  // DYNSPARSE_CUDA_ATTENTION_CLUSTER=0 merges through global memory (A/B
  // timing).
  bool cluster_decode_attention = true;
  // The fused decode attention loads its cached keys and values before its
  // PDL wait (attention.h early_kv_loads) instead of only prefetching them
  // into L2 (H200, results/bench/h200_run122: Llama-2-7B decode 3.90 -> 3.82
  // ms, OPT-6.7B 4.11 -> 4.04 ms). DYNSPARSE_CUDA_EARLY_KV=0 turns it off
  // (A/B timing).
  bool early_kv_loads = true;
};

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_CUDA_BACKEND_OPTIONS_H_
