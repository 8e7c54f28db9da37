// Sweep progress on stderr: a redrawn bar with ETA when stderr is a terminal,
// otherwise one plain line per finished job (readable in cluster logs).
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_PROGRESS_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace dynsparse {

class SweepProgress {
 public:
  SweepProgress(std::ostream& out, bool terminal, size_t total_jobs);
  void BeginJob(size_t position, const std::string& description);
  void Metric(const std::string& metric, int64_t done, int64_t total);
  void EndJob(const std::string& outcome);
  void Finish();

  // "1h02m", "3m05s", "12s".
  static std::string FormatDuration(double seconds);

 private:
  void Draw();

  std::ostream& out_;
  bool terminal_;
  size_t total_;
  size_t position_ = 0;  // Jobs finished in this process.
  double fraction_ = 0;  // Of the current job.
  std::string job_;
  std::string metric_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point job_start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_PROGRESS_H_
