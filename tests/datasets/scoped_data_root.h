// Sets DYNSPARSE_DATA (or unsets it) for one scope and restores what was
// there before, for tests of the paths that read the shared data folder.
#ifndef DYNSPARSE_TESTS_DATASETS_SCOPED_DATA_ROOT_H_
#define DYNSPARSE_TESTS_DATASETS_SCOPED_DATA_ROOT_H_

#include <cstdlib>
#include <optional>
#include <string>

namespace dynsparse::testing {

class ScopedDataRoot {
 public:
  // nullopt unsets the variable.
  explicit ScopedDataRoot(const std::optional<std::string>& value) {
    if (const char* old = std::getenv("DYNSPARSE_DATA")) saved_ = old;
    Set(value);
  }
  ~ScopedDataRoot() { Set(saved_); }
  ScopedDataRoot(const ScopedDataRoot&) = delete;
  ScopedDataRoot& operator=(const ScopedDataRoot&) = delete;

 private:
  static void Set(const std::optional<std::string>& value) {
    if (value) {
      setenv("DYNSPARSE_DATA", value->c_str(), 1);
    } else {
      unsetenv("DYNSPARSE_DATA");
    }
  }

  std::optional<std::string> saved_;
};

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_DATASETS_SCOPED_DATA_ROOT_H_
