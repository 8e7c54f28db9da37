// Tiny, fully specified HF checkpoints (config.json + tensors) for loader
// tests. Every tensor holds distinct values, so a test can tell which
// checkpoint tensor landed in which ModelWeights slot.
#ifndef DYNSPARSE_TESTS_IO_TINY_CHECKPOINTS_H_
#define DYNSPARSE_TESTS_IO_TINY_CHECKPOINTS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tests/io/safetensors_writer.h"

namespace dynsparse::testing {

struct TinyCheckpoint {
  nlohmann::json config;
  std::vector<StTensor> tensors;

  // nullptr when absent.
  StTensor* Find(absl::string_view name);
  void Remove(absl::string_view name);
  // The values written for `name` (an F32 tensor).
  std::vector<float> Values(absl::string_view name) const;
  int64_t TotalBytes() const;
  // Stores every tensor as BF16 (rounded to nearest even).
  void StoreAsBF16();
};

struct TinyLlamaSpec {
  std::string architecture = "LlamaForCausalLM";
  int64_t hidden = 16;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t intermediate = 24;
  int64_t layers = 2;
  int64_t vocab = 32;
  bool tied = false;
  bool attention_bias = false;  // Llama only; Qwen2 always has q/k/v bias.
  bool mlp_bias = false;
};
TinyCheckpoint MakeTinyLlama(const TinyLlamaSpec& spec);

struct TinyOptSpec {
  int64_t hidden = 16;
  int64_t heads = 4;
  int64_t ffn = 32;
  int64_t layers = 2;
  int64_t vocab = 40;
  int64_t max_positions = 24;
  int64_t word_embed_proj_dim = 16;  // != hidden adds project_in/out.
  bool pre_norm = true;
  bool tied = true;
  std::string prefix = "model.decoder.";
};
TinyCheckpoint MakeTinyOpt(const TinyOptSpec& spec);

// <dir>/config.json and <dir>/model.safetensors.
void WriteHfFolder(const std::string& dir, const TinyCheckpoint& checkpoint);
// The tensors split round-robin over `shards` files plus an index.
void WriteShardedHfFolder(const std::string& dir,
                          const TinyCheckpoint& checkpoint, int shards);

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_IO_TINY_CHECKPOINTS_H_
