// DejaVu's files as a user's disk may hold them: a predictor folder
// (predictors.json + predictors.safetensors) or a calibration folder
// (calibration.json + one layer's samples and label bitmaps), checked against
// tests/fixtures/models/opt-prenorm's config.
// Input: byte 0 even = predictors, odd = calibration; then a 4-byte
// little-endian length and that much JSON; the rest is the predictors'
// safetensors, or for calibration another 4-byte length, the layer's f16
// samples and then its label bitmaps. DYNSPARSE_FUZZ_VERBOSE=1 prints each
// input's status (to check that seeds reach the tensor and sample reads).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include "core/io/hf_config.h"
#include "methods/dejavu/calibration.h"
#include "methods/dejavu/predictor_set.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace dynsparse;

// Splits a 4-byte length and that many bytes off the front of `in` (fewer
// when the input is shorter).
std::string_view TakeChunk(std::string_view& in) {
  if (in.size() < 4) {
    in = {};
    return {};
  }
  const uint32_t n = static_cast<uint8_t>(in[0]) |
                     static_cast<uint8_t>(in[1]) << 8 |
                     static_cast<uint8_t>(in[2]) << 16 |
                     static_cast<uint32_t>(static_cast<uint8_t>(in[3])) << 24;
  in.remove_prefix(4);
  const std::string_view chunk = in.substr(0, n);
  in.remove_prefix(chunk.size());
  return chunk;
}

const ModelConfig& Config() {
  static const ModelConfig* config = [] {
    auto c = LoadHfConfig(std::string(DYNSPARSE_SOURCE_DIR) +
                          "/tests/fixtures/models/opt-prenorm/config.json");
    if (!c.ok()) {
      std::cerr << c.status() << "\n";
      std::abort();
    }
    return new ModelConfig(*std::move(c));
  }();
  return *config;
}

absl::Status LoadPredictorFolder(std::string_view in) {
  const std::string dir = fuzz::ScratchDir() + "/predictors";
  std::filesystem::create_directories(dir);
  fuzz::WriteScratchFile("predictors/predictors.json", TakeChunk(in));
  fuzz::WriteScratchFile("predictors/predictors.safetensors", in);
  return LoadPredictors(dir, Config()).status();
}

absl::Status ReadCalibrationFolder(std::string_view in) {
  std::filesystem::create_directories(fuzz::ScratchDir() + "/calibration");
  fuzz::WriteScratchFile("calibration/calibration.json", TakeChunk(in));
  fuzz::WriteScratchFile("calibration/layer1.mlp_x.f16", TakeChunk(in));
  fuzz::WriteScratchFile("calibration/layer1.mlp_y.bits", in);
  auto data = OpenCalibration(fuzz::ScratchDir(), Config());
  if (!data.ok()) return data.status();
  return ReadLayerSamples(*data, Config(), 1, false).status();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in = fuzz::AsText(data, size);
  const bool predictors = data[0] % 2 == 0;
  in.remove_prefix(1);
  const absl::Status status =
      predictors ? LoadPredictorFolder(in) : ReadCalibrationFolder(in);
  static const bool verbose = std::getenv("DYNSPARSE_FUZZ_VERBOSE") != nullptr;
  if (verbose) {
    std::cerr << (predictors ? "predictors: " : "calibration: ") << status
              << "\n";
  }
  return 0;
}
