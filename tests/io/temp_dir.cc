#include "tests/io/temp_dir.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dynsparse::testing {

TempDir::TempDir() {
  const char* root = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(root != nullptr && *root ? root : "/tmp",
                                     "/dynsparse_io_test_XXXXXX");
  const char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp failed for " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::File(absl::string_view name) const {
  return absl::StrCat(path_, "/", name);
}

void WriteFileOrDie(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(out.good()) << "cannot write " << path;
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "short write to " << path;
}

}  // namespace dynsparse::testing
