// A short content id of a checkpoint's weights. DejaVu's calibration data
// and predictors are tied to one set of weights, not just an architecture:
// predictors trained on a base model are wrong for its fine-tune of the same
// shape, and nothing else would notice. The id digests the stored bytes of
// every tensor (a few KiB sampled from each), so loading in another dtype
// keeps it, while re-saving in another dtype or changing any tensor's start,
// middle or end changes it.
#ifndef DYNSPARSE_CORE_IO_WEIGHTS_ID_H_
#define DYNSPARSE_CORE_IO_WEIGHTS_ID_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/io/tensor_source.h"

namespace dynsparse {

// Every tensor's name, dtype, shape and sampled bytes, in name order.
std::string WeightsIdOfTensors(const TensorSource& source);
// A whole-file checkpoint (llama2.c): its size and sampled bytes.
std::string WeightsIdOfBytes(absl::Span<const uint8_t> bytes);
// random:SPEC weights are a function of the spec and the seed.
std::string WeightsIdOfRandom(absl::string_view spec, uint64_t seed);

}  // namespace dynsparse

#endif  // DYNSPARSE_CORE_IO_WEIGHTS_ID_H_
