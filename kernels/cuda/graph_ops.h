// The data-movement ops of the model graph on CUDA: embedding gathers, KV
// cache row writes, unit masks, dtype conversion for cuBLAS inputs and a
// device-side argmax. Index arguments (ids, positions, unit ids) are device
// i32 pointers, so a captured CUDA graph reads fresh values on each replay.
#ifndef DYNSPARSE_KERNELS_CUDA_GRAPH_OPS_H_
#define DYNSPARSE_KERNELS_CUDA_GRAPH_OPS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "kernels/cuda/device_context.h"

namespace dynsparse::cuda {

// out[i, :] = table[ids[i], :]: table [rows, width] f32/f16/bf16, out f32
// [n, width], ids device i32 [n] (each in [0, rows); checked by the caller).
absl::Status EmbedRows(DeviceContext& ctx, const Tensor& table,
                       const int32_t* ids, Tensor* out);

// cache[positions[i], :] = rows[i, :] (f32 rows, same width; an f16 cache
// gets them rounded).
absl::Status WriteCacheRows(DeviceContext& ctx, const Tensor& rows,
                            const int32_t* positions, Tensor* cache);

// Zeroes, in each row of x (f32 [rows, units * unit_width]), every unit not
// listed among that row's `per_row` ids in `keep` (device i32
// [rows * per_row]). `flags` is device scratch of rows * units bytes.
absl::Status MaskUnitsDevice(DeviceContext& ctx, const int32_t* keep,
                             int64_t per_row, int64_t unit_width,
                             uint8_t* flags, Tensor* x);

// dst = src converted (f32 -> f16/bf16/f32), same element count.
absl::Status ConvertF32(DeviceContext& ctx, const Tensor& src, Tensor* dst);

// out[r] = index of the largest element of row r of x (f32 [rows, cols]);
// ties pick the lowest index, as the CPU sampler does. out: device i32.
absl::Status ArgmaxRows(DeviceContext& ctx, const Tensor& x, int32_t* out);

}  // namespace dynsparse::cuda

#endif  // DYNSPARSE_KERNELS_CUDA_GRAPH_OPS_H_
