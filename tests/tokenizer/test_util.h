// Helpers shared by the tokenizer tests.
#ifndef DYNSPARSE_TESTS_TOKENIZER_TEST_UTIL_H_
#define DYNSPARSE_TESTS_TOKENIZER_TEST_UTIL_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace dynsparse::testing {

inline std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// A fresh, empty directory under the test temp dir.
inline std::string MakeTempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("dynsparse_tok_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_TOKENIZER_TEST_UTIL_H_
