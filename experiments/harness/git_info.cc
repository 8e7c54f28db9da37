#include "experiments/harness/git_info.h"

#include "git_stamp.h"  // Generated in the build folder by git_stamp.cmake.

namespace dynsparse {

std::string BuildGitSha() { return DYNSPARSE_GIT_SHA; }

}  // namespace dynsparse
