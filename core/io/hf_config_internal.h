// Pieces of the config.json parser shared by its per-family files.
#ifndef DYNSPARSE_CORE_IO_HF_CONFIG_INTERNAL_H_
#define DYNSPARSE_CORE_IO_HF_CONFIG_INTERNAL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/io/json_fields.h"
#include "core/model_config.h"

namespace dynsparse::hf_config_internal {

// Bounds that keep every derived shape product far inside int64.
inline constexpr int64_t kMaxWidth = int64_t{1} << 20;  // hidden, ffn, heads
inline constexpr int64_t kMaxLayers = int64_t{1} << 16;
inline constexpr int64_t kMaxVocab = (int64_t{1} << 31) - 1;  // i32 token ids
inline constexpr int64_t kMaxPositions = int64_t{1} << 30;

// A required integer in [1, max].
absl::StatusOr<int64_t> PositiveInt(const JsonFields& fields,
                                    absl::string_view field, int64_t max);
// An optional integer in [1, max], `fallback` when absent.
absl::StatusOr<int64_t> PositiveIntOr(const JsonFields& fields,
                                      absl::string_view field, int64_t fallback,
                                      int64_t max);
absl::StatusOr<Activation> ParseActivation(const JsonFields& fields,
                                           absl::string_view field,
                                           absl::string_view fallback);

// Architecture-specific fields; `config` arrives with architecture,
// model_type, vocab size, dtype and token ids filled in.
absl::Status ParseOptFields(const JsonFields& fields, ModelConfig* config);
absl::Status ParseLlamaFields(const JsonFields& fields, ModelConfig* config);
// rope_theta and scaling from rope_parameters (5.x) or rope_theta and
// rope_scaling (4.x).
absl::Status ParseRopeFields(const JsonFields& fields, ModelConfig* config);

}  // namespace dynsparse::hf_config_internal

#endif  // DYNSPARSE_CORE_IO_HF_CONFIG_INTERNAL_H_
