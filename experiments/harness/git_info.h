// The git commit the binary was built from ("abc123def456", with "-dirty"
// when tracked files differed from it, "unknown" outside a checkout).
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_GIT_INFO_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_GIT_INFO_H_

#include <string>

namespace dynsparse {

std::string BuildGitSha();

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_GIT_INFO_H_
