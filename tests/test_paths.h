// Paths tests read: the repository (fixtures) and the shared data folder.
#ifndef DYNSPARSE_TESTS_TEST_PATHS_H_
#define DYNSPARSE_TESTS_TEST_PATHS_H_

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace dynsparse::testing {

inline std::string SourcePath(const std::string& relative) {
  return std::string(DYNSPARSE_SOURCE_DIR) + "/" + relative;
}

inline std::string FixturePath(const std::string& relative) {
  return SourcePath("tests/fixtures/" + relative);
}

// $DYNSPARSE_DATA/<relative>, or "" when the variable is unset.
inline std::string DataPath(const std::string& relative) {
  const char* root = std::getenv("DYNSPARSE_DATA");
  if (root == nullptr || *root == '\0') return "";
  return std::string(root) + "/" + relative;
}

}  // namespace dynsparse::testing

// Skips the test, with the reason, when DYNSPARSE_DATA is not set.
#define DS_REQUIRE_DATA()                                                 \
  do {                                                                    \
    if (::dynsparse::testing::DataPath("").empty()) {                     \
      GTEST_SKIP() << "DYNSPARSE_DATA is unset: point it at shared/data " \
                      "(.ci/run sets ../shared/data) to run this test";   \
    }                                                                     \
  } while (0)

#endif  // DYNSPARSE_TESTS_TEST_PATHS_H_
