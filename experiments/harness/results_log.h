// The results log of a run folder: JSON lines appended with one write and an
// fsync per (job, metric) group, so a killed run loses at most the job in
// flight. Each shard appends to its own file (results.jsonl, or
// results-shardI-of-N.jsonl) and reads every results*.jsonl of the folder to
// know what is finished.
//
// Line kinds: "start" (a job begins), "result" (one metric row; a
// (job, metric) group of k rows carries row 0..k-1 of k), "interrupted" (the
// job was in flight when a previous process died), "end" (the job is done).
// On open, a torn last line
// and an incomplete trailing group are dropped from this process's file.
#ifndef DYNSPARSE_EXPERIMENTS_HARNESS_RESULTS_LOG_H_
#define DYNSPARSE_EXPERIMENTS_HARNESS_RESULTS_LOG_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dynsparse {

// The complete lines of one results file: a torn last line and result groups
// with missing rows are left out (and counted in *dropped when given).
absl::StatusOr<std::vector<nlohmann::json>> ReadResultsFile(
    const std::string& path, int* dropped = nullptr);

// results*.jsonl files of `dir`, sorted.
std::vector<std::string> ListResultsFiles(const std::string& dir);

// "job#metric_index": the identity of one result group.
std::string PairKey(const std::string& job_key, size_t metric_index);

class ResultsLog {
 public:
  // Repairs and opens DIR/FILE_NAME for appending and reads the folder.
  // Lines of another config hash are an error: mixing them would merge
  // numbers measured under different settings.
  static absl::StatusOr<ResultsLog> Open(const std::string& dir,
                                         const std::string& file_name,
                                         const std::string& config_hash);
  ResultsLog(ResultsLog&& other) noexcept;
  ResultsLog& operator=(ResultsLog&&) = delete;
  ~ResultsLog();

  // A group whose rows all succeeded; with `errors_count`, failed groups too.
  bool Finished(const std::string& pair_key, bool errors_count) const;
  // The job started and never ended: it was running when a process died.
  bool WasInFlight(const std::string& job_key) const;

  // Appends the lines with one write() and fsync.
  absl::Status Append(const std::vector<nlohmann::json>& lines);

  int dropped_lines() const { return dropped_; }
  const std::string& path() const { return path_; }

 private:
  ResultsLog() = default;
  void Note(const nlohmann::json& line);

  std::string path_;
  int fd_ = -1;
  int lock_fd_ = -1;  // flock'd .FILE.lock beside the log.
  int dropped_ = 0;
  std::set<std::string> ok_pairs_;
  std::set<std::string> error_pairs_;
  std::map<std::string, std::string> last_marker_;  // job -> kind
};

}  // namespace dynsparse

#endif  // DYNSPARSE_EXPERIMENTS_HARNESS_RESULTS_LOG_H_
