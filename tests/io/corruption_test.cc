// Damaged files must produce errors, never crashes or out-of-bounds reads:
// every truncation and a fixed set of random byte corruptions of small valid
// files are opened and fully loaded. Most useful under DYNSPARSE_SANITIZE.
#include <random>
#include <string>

#include "core/io/hf_config.h"
#include "core/io/model_loader.h"
#include "core/io/safetensors.h"
#include "gtest/gtest.h"
#include "tests/io/safetensors_writer.h"
#include "tests/io/temp_dir.h"
#include "tests/io/tiny_checkpoints.h"

namespace dynsparse {
namespace {

using ::dynsparse::testing::TempDir;
using ::dynsparse::testing::WriteFileOrDie;

// Opens `bytes` as a safetensors file and loads every tensor in every dtype;
// returns whether the open succeeded.
bool OpenAndLoadAll(const std::string& path, const std::string& bytes) {
  WriteFileOrDie(path, bytes);
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  if (!file.ok()) return false;
  for (const std::string& name : file->Names()) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32}) {
      absl::StatusOr<Tensor> t = file->Load(name, dtype);
      if (t.ok()) (void)t->ToF32Vector();  // Touch every byte.
    }
  }
  return true;
}

std::string ValidSafetensors() {
  return testing::SerializeSafetensors(
      {testing::F32Tensor("a", {2, 2}, {1, 2, 3, 4}),
       testing::StTensor{"b", "F16", {3}, std::string(6, '\x3c')},
       testing::StTensor{"c", "I64", {1}, std::string(8, '\0')}},
      {{"format", "pt"}});
}

TEST(CorruptionTest, EveryTruncatedSafetensorsFileFailsCleanly) {
  TempDir dir;
  const std::string bytes = ValidSafetensors();
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(OpenAndLoadAll(dir.File("t.safetensors"), bytes.substr(0, n)))
        << "truncated to " << n << " bytes";
  }
  EXPECT_TRUE(OpenAndLoadAll(dir.File("t.safetensors"), bytes));
}

TEST(CorruptionTest, RandomlyCorruptedSafetensorsNeverCrash) {
  TempDir dir;
  const std::string valid = ValidSafetensors();
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 1500; ++trial) {
    std::string bytes = valid;
    const int edits = 1 + trial % 4;
    for (int e = 0; e < edits; ++e) {
      // Favour the length field and header, where structure lives.
      const size_t at = rng() % (trial % 2 ? bytes.size() : 8 + 64);
      bytes[at % bytes.size()] = static_cast<char>(rng());
    }
    OpenAndLoadAll(dir.File("c.safetensors"), bytes);
  }
}

TEST(CorruptionTest, RandomlyCorruptedConfigsNeverCrash) {
  const std::string valid = testing::MakeTinyOpt({}).config.dump();
  std::mt19937 rng(99);
  const std::string alphabet = "{}[]\":,0123456789-.eEtrufalsn \\";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = valid;
    for (int e = 0; e < 1 + trial % 3; ++e) {
      text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
    }
    (void)ParseHfConfig(text, "config.json");
  }
}

TEST(CorruptionTest, EveryTruncatedHfFolderFailsCleanly) {
  TempDir dir;
  const testing::TinyCheckpoint ckpt = testing::MakeTinyLlama({});
  testing::WriteHfFolder(dir.path(), ckpt);
  const std::string bytes = testing::SerializeSafetensors(ckpt.tensors);
  for (size_t n = 0; n < bytes.size(); n += 97) {
    WriteFileOrDie(dir.File("model.safetensors"), bytes.substr(0, n));
    EXPECT_FALSE(LoadHfModel(dir.path(), LoadOptions{}).ok()) << n;
  }
}

}  // namespace
}  // namespace dynsparse
