#include "methods/dejavu/safetensors_writer.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace dynsparse {
namespace {

const char* StName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI32:
      return "I32";
  }
  return "F32";
}

absl::Status WriteAll(std::FILE* f, const void* data, size_t bytes,
                      const std::string& path) {
  if (bytes > 0 && std::fwrite(data, 1, bytes, f) != bytes) {
    return absl::InternalError(absl::StrCat(path, ": write failed"));
  }
  return absl::OkStatus();
}

absl::Status Publish(const std::string& tmp, const std::string& path) {
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot rename from ", tmp, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (t.device() != Device::kCpu) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor '", name, "' is not on the host"));
    }
    header[name] = {{"dtype", StName(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // Align the data region.
  const uint64_t length = text.size();

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(tmp, ": cannot open for writing"));
  }
  absl::Status status = WriteAll(f, &length, sizeof(length), tmp);
  if (status.ok()) status = WriteAll(f, text.data(), text.size(), tmp);
  for (const auto& [name, t] : tensors) {
    if (!status.ok()) break;
    status = WriteAll(f, t.raw_data(), t.bytes(), tmp);
  }
  if (std::fclose(f) != 0 && status.ok()) {
    status = absl::InternalError(absl::StrCat(tmp, ": close failed"));
  }
  if (!status.ok()) return status;
  return Publish(tmp, path);
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(tmp, ": cannot open for writing"));
  }
  absl::Status status = WriteAll(f, text.data(), text.size(), tmp);
  if (std::fclose(f) != 0 && status.ok()) {
    status = absl::InternalError(absl::StrCat(tmp, ": close failed"));
  }
  if (!status.ok()) return status;
  return Publish(tmp, path);
}

}  // namespace dynsparse
