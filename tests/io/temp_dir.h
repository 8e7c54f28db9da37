// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the object goes out of scope.
#ifndef DYNSPARSE_TESTS_IO_TEMP_DIR_H_
#define DYNSPARSE_TESTS_IO_TEMP_DIR_H_

#include <string>

#include "absl/strings/string_view.h"

namespace dynsparse::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(absl::string_view name) const;

 private:
  std::string path_;
};

// Writes `bytes` to `path`, replacing it; fails the test on error.
void WriteFileOrDie(const std::string& path, absl::string_view bytes);

}  // namespace dynsparse::testing

#endif  // DYNSPARSE_TESTS_IO_TEMP_DIR_H_
