// Builds the pipeline components of a tokenizer.json (normalizer,
// pre-tokenizer, post-processor, decoder) from their JSON objects. An unknown
// "type" or an unsupported regex is an error naming the file and field.
#ifndef DYNSPARSE_CORE_TOKENIZER_HF_JSON_COMPONENTS_H_
#define DYNSPARSE_CORE_TOKENIZER_HF_JSON_COMPONENTS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/tokenizer/decoders.h"
#include "core/tokenizer/json_reader.h"
#include "core/tokenizer/normalizers.h"
#include "core/tokenizer/post_processors.h"
#include "core/tokenizer/pre_tokenizers.h"

namespace dynsparse::tok {

// Each returns nullptr for a missing or null value.
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const JsonRef& j);
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(
    const JsonRef& j);
absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(
    const JsonRef& j);
absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const JsonRef& j);

}  // namespace dynsparse::tok

#endif  // DYNSPARSE_CORE_TOKENIZER_HF_JSON_COMPONENTS_H_
