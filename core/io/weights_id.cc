#include "core/io/weights_id.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dynsparse {
namespace {

// Bytes read from each end and from the middle of a tensor: a fine-tune
// changes every region, and three pages per tensor keep a 7B id cheap.
constexpr size_t kSampleBytes = 4096;

// FNV-1a, 64 bit: not cryptographic (the id guards against mix-ups, not
// attackers), dependency-free and stable across platforms.
class Fnv1a64 {
 public:
  void Add(absl::Span<const uint8_t> bytes) {
    for (uint8_t b : bytes) hash_ = (hash_ ^ b) * 0x100000001b3ull;
  }
  void Add(absl::string_view text) {
    Add(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(text.data()),
                            text.size()));
    Add(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>("\0"), 1));
  }
  void Add(uint64_t value) {
    uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(value >> (8 * i));
    Add(absl::MakeConstSpan(le));
  }
  // The first, middle and last kSampleBytes (all of a small tensor).
  void AddSampled(absl::Span<const uint8_t> bytes) {
    Add(uint64_t{bytes.size()});
    if (bytes.size() <= 3 * kSampleBytes) {
      Add(bytes);
      return;
    }
    Add(bytes.subspan(0, kSampleBytes));
    Add(bytes.subspan((bytes.size() - kSampleBytes) / 2, kSampleBytes));
    Add(bytes.subspan(bytes.size() - kSampleBytes));
  }
  std::string Id() const { return absl::StrFormat("fnv1a64:%016x", hash_); }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace

std::string WeightsIdOfTensors(const TensorSource& source) {
  Fnv1a64 h;
  for (const std::string& name : source.Names()) {
    const SafetensorsEntry* entry = source.Find(name);
    if (entry == nullptr) continue;
    h.Add(name);
    h.Add(static_cast<uint64_t>(entry->dtype));
    for (int64_t dim : entry->shape) h.Add(static_cast<uint64_t>(dim));
    h.AddSampled(source.RawBytes(name));
  }
  return h.Id();
}

std::string WeightsIdOfBytes(absl::Span<const uint8_t> bytes) {
  Fnv1a64 h;
  h.AddSampled(bytes);
  return h.Id();
}

std::string WeightsIdOfRandom(absl::string_view spec, uint64_t seed) {
  Fnv1a64 h;
  h.Add(spec);
  h.Add(seed);
  return absl::StrCat("random-", h.Id());
}

}  // namespace dynsparse
