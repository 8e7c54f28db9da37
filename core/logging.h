// Minimal logging and invariant checks.
//
// Debian's Abseil has no absl/log and glog would add global state and a
// dependency for two features, so dynsparse keeps its own: human-readable
// messages go to stderr (stdout is reserved for --json output), and DS_CHECK
// aborts on programmer errors only. User-facing failures use absl::Status.
#ifndef DYNSPARSE_CORE_LOGGING_H_
#define DYNSPARSE_CORE_LOGGING_H_

#include <sstream>
#include <string_view>

namespace dynsparse {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. Set once by the CLI
// (--verbose/--quiet).
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

namespace internal {

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line, bool fatal = false);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  bool fatal_;
  std::ostringstream stream_;
};

// Swallows the stream expression when the level is filtered out.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace dynsparse

#define DS_LOG(level)                                                          \
  (::dynsparse::LogLevel::k##level < ::dynsparse::MinLogLevel())               \
      ? (void)0                                                                \
      : ::dynsparse::internal::LogVoidify() &                                  \
            ::dynsparse::internal::LogMessage(::dynsparse::LogLevel::k##level, \
                                              __FILE__, __LINE__)              \
                .stream()

// Aborts with a message when an internal invariant is broken.
#define DS_CHECK(cond)                                                      \
  (cond) ? (void)0                                                          \
         : ::dynsparse::internal::LogVoidify() &                            \
               ::dynsparse::internal::LogMessage(                           \
                   ::dynsparse::LogLevel::kError, __FILE__, __LINE__, true) \
                       .stream()                                            \
                   << "Check failed: " #cond " "

#define DS_CHECK_EQ(a, b) \
  DS_CHECK((a) == (b)) << "(" << (a) << " vs " << (b) << ") "
#define DS_CHECK_LE(a, b) \
  DS_CHECK((a) <= (b)) << "(" << (a) << " vs " << (b) << ") "
#define DS_CHECK_LT(a, b) \
  DS_CHECK((a) < (b)) << "(" << (a) << " vs " << (b) << ") "

#endif  // DYNSPARSE_CORE_LOGGING_H_
