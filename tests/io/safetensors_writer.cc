#include "tests/io/safetensors_writer.h"

#include <nlohmann/json.hpp>

namespace dynsparse::testing {

std::string SerializeSafetensors(
    const std::vector<StTensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string data;
  for (const StTensor& t : tensors) {
    header[t.name] = {
        {"dtype", t.dtype},
        {"shape", t.shape},
        {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  return RawSafetensors(text, data);
}

std::string RawSafetensors(absl::string_view header, absl::string_view data,
                           int64_t length_field) {
  const uint64_t length =
      length_field < 0 ? header.size() : static_cast<uint64_t>(length_field);
  std::string out(sizeof(length), '\0');
  std::memcpy(out.data(), &length, sizeof(length));
  out.append(header.data(), header.size());
  out.append(data.data(), data.size());
  return out;
}

}  // namespace dynsparse::testing
