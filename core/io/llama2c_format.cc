#include "core/io/llama2c_format.h"

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

// Far beyond any llama2.c export (Llama-2 70B: dim 8192, 80 layers) while
// keeping every product of two or three of them inside uint64.
constexpr int64_t kMaxWidth = int64_t{1} << 18;
constexpr int64_t kMaxLayers = int64_t{1} << 12;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxSeqLen = int64_t{1} << 24;

struct Field {
  absl::string_view name;
  int64_t value;
  int64_t max;
};

absl::Status HeaderError(absl::string_view label, absl::string_view field,
                         absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(label, ": llama2.c header field '", field, "': ", message));
}

// The product of `factors`, or false on overflow.
bool Product(const std::vector<uint64_t>& factors, uint64_t* out) {
  uint64_t result = 1;
  for (uint64_t f : factors) {
    if (__builtin_mul_overflow(result, f, &result)) return false;
  }
  *out = result;
  return true;
}

}  // namespace

absl::StatusOr<Llama2cHeader> ParseLlama2cHeader(const uint8_t* data,
                                                 size_t size,
                                                 absl::string_view label) {
  if (size >= sizeof(uint32_t)) {
    uint32_t magic;
    std::memcpy(&magic, data, sizeof(magic));
    if (magic == kLlama2cVersionedMagic) {
      int32_t version = -1;
      if (size >= 2 * sizeof(int32_t)) {
        std::memcpy(&version, data + sizeof(magic), sizeof(version));
      }
      return absl::UnimplementedError(absl::StrCat(
          label, ": unsupported llama2.c version ", version,
          " (magic 'ak42'); only the legacy v0 format is supported: export "
          "with llama2.c's export.py --version 0"));
    }
  }
  if (size < kLlama2cHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat(label, ": truncated: ", size, " bytes, shorter than the ",
                     kLlama2cHeaderBytes, "-byte llama2.c header"));
  }
  std::array<int32_t, 7> raw;
  std::memcpy(raw.data(), data, sizeof(raw));
  Llama2cHeader h;
  h.dim = raw[0];
  h.hidden_dim = raw[1];
  h.n_layers = raw[2];
  h.n_heads = raw[3];
  h.n_kv_heads = raw[4];
  h.shared_classifier = raw[5] > 0;
  h.vocab_size = raw[5] < 0 ? -int64_t{raw[5]} : int64_t{raw[5]};
  h.seq_len = raw[6];

  const Field fields[] = {
      {"dim", h.dim, kMaxWidth},
      {"hidden_dim", h.hidden_dim, kMaxWidth},
      {"n_layers", h.n_layers, kMaxLayers},
      {"n_heads", h.n_heads, kMaxWidth},
      {"n_kv_heads", h.n_kv_heads, kMaxWidth},
      {"vocab_size", h.vocab_size, kMaxVocab},
      {"seq_len", h.seq_len, kMaxSeqLen},
  };
  for (const Field& f : fields) {
    if (f.value < 1 || f.value > f.max) {
      return HeaderError(label, f.name,
                         absl::StrCat(f.value, " is outside [1, ", f.max,
                                      "] (not a llama2.c checkpoint?)"));
    }
  }
  if (h.dim % h.n_heads != 0) {
    return HeaderError(label, "n_heads",
                       absl::StrCat(h.n_heads, " does not divide dim ", h.dim));
  }
  if (h.n_heads % h.n_kv_heads != 0) {
    return HeaderError(
        label, "n_kv_heads",
        absl::StrCat(h.n_kv_heads, " does not divide n_heads ", h.n_heads));
  }
  if (h.head_size() % 2 != 0) {  // RoPE rotates pairs.
    return HeaderError(
        label, "n_heads",
        absl::StrCat("head size dim/n_heads = ", h.head_size(), " is odd"));
  }
  return h;
}

absl::StatusOr<std::vector<Llama2cArray>> Llama2cLayout(
    const Llama2cHeader& h, uint64_t file_size, absl::string_view label) {
  struct Spec {
    absl::string_view name;
    std::vector<uint64_t> dims;
  };
  const uint64_t L = h.n_layers, d = h.dim, f = h.hidden_dim, v = h.vocab_size,
                 kv = h.kv_dim(), half = h.head_size() / 2, s = h.seq_len;
  std::vector<Spec> specs = {
      {"token_embedding", {v, d}},
      {"rms_att", {L, d}},
      {"wq", {L, d, d}},
      {"wk", {L, kv, d}},
      {"wv", {L, kv, d}},
      {"wo", {L, d, d}},
      {"rms_ffn", {L, d}},
      {"w1", {L, f, d}},
      {"w2", {L, d, f}},
      {"w3", {L, f, d}},
      {"rms_final", {d}},
      {"freq_cis_real", {s, half}},
      {"freq_cis_imag", {s, half}},
  };
  if (!h.shared_classifier) specs.push_back({"wcls", {v, d}});

  std::vector<Llama2cArray> arrays;
  uint64_t offset = kLlama2cHeaderBytes;
  for (const Spec& spec : specs) {
    Llama2cArray array{spec.name, offset, 0};
    uint64_t bytes = 0, end = 0;
    if (!Product(spec.dims, &array.count) ||
        !Product({array.count, sizeof(float)}, &bytes) ||
        __builtin_add_overflow(offset, bytes, &end)) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, ": llama2.c array '", spec.name, "' size overflows"));
    }
    if (end > file_size) {
      return absl::DataLossError(absl::StrCat(
          label, ": truncated: llama2.c array '", spec.name, "' needs bytes [",
          offset, ",", end, ") but the file has ", file_size));
    }
    arrays.push_back(array);
    offset = end;
  }
  if (offset != file_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": file has ", file_size,
                     " bytes but its llama2.c header "
                     "implies ",
                     offset, " (wrong header, or not a legacy checkpoint?)"));
  }
  return arrays;
}

}  // namespace dynsparse
