#include "experiments/harness/results_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/io/json_util.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "experiments/harness/json_fields.h"

namespace dynsparse {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const std::string& data,
                      const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write failed", path);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return Errno("fsync failed", path);
  return absl::OkStatus();
}

// Drops result groups that lack rows: only a crash mid-write makes them.
std::vector<json> DropIncompleteGroups(std::vector<json> lines, int* dropped) {
  std::vector<json> kept;
  std::vector<json> group;
  int64_t expected = 0;
  auto flush = [&] {
    if (static_cast<int64_t>(group.size()) == expected) {
      for (json& g : group) kept.push_back(std::move(g));
    } else {
      *dropped += static_cast<int>(group.size());
    }
    group.clear();
    expected = 0;
  };
  for (json& line : lines) {
    const bool result = StrField(line, "kind") == "result";
    const int64_t row = result ? IntField(line, "row", int64_t{-1}) : -1;
    if (!group.empty() &&
        (!result || row != static_cast<int64_t>(group.size()) ||
         StrField(line, "pair") != StrField(group[0], "pair"))) {
      flush();
    }
    if (result) {
      if (group.empty()) {
        expected = IntField(line, "rows", int64_t{1});
        if (row != 0) {  // A group's tail without its head.
          ++*dropped;
          continue;
        }
      }
      group.push_back(std::move(line));
      if (static_cast<int64_t>(group.size()) == expected) flush();
    } else {
      kept.push_back(std::move(line));
    }
  }
  if (!group.empty()) flush();
  return kept;
}

}  // namespace

std::string PairKey(const std::string& job_key, size_t metric_index) {
  return absl::StrCat(job_key, "#", metric_index);
}

absl::StatusOr<std::vector<nlohmann::json>> ReadResultsFile(
    const std::string& path, int* dropped) {
  int local_dropped = 0;
  if (dropped == nullptr) dropped = &local_dropped;
  *dropped = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errno("cannot open", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<json> lines;
  size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ++line_number;
    if (end == std::string::npos) {  // Torn: the write never finished.
      ++*dropped;
      break;
    }
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto parsed = ParseJson(line, path);
    json value = parsed.ok() ? *std::move(parsed) : json();
    if (!value.is_object()) {
      if (start >= text.size()) {  // A torn last line that got its newline.
        ++*dropped;
        break;
      }
      return absl::DataLossError(
          absl::StrCat(path, ":", line_number,
                       ": not a JSON object; the file is damaged mid-way "
                       "(fix or remove that line)"));
    }
    lines.push_back(std::move(value));
  }
  int incomplete = 0;
  lines = DropIncompleteGroups(std::move(lines), &incomplete);
  *dropped += incomplete;
  return lines;
}

std::vector<std::string> ListResultsFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && name.starts_with("results") &&
        name.ends_with(".jsonl")) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

absl::StatusOr<ResultsLog> ResultsLog::Open(const std::string& dir,
                                            const std::string& file_name,
                                            const std::string& config_hash) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(dir, ": cannot create the folder: ", ec.message()));
  }
  ResultsLog log;
  log.path_ = (fs::path(dir) / file_name).string();

  // One writer per results file: a second run of the same shard into the
  // same folder would duplicate work and race the repair below. The lock
  // lives on a file that is never renamed and dies with the process.
  const std::string lock_path =
      (fs::path(dir) / ("." + file_name + ".lock")).string();
  log.lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0644);
  if (log.lock_fd_ < 0) return Errno("cannot create", lock_path);
  if (::flock(log.lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        log.path_,
        ": another dynsparse run is writing it (same folder and shard); "
        "wait for it or use another --out"));
  }

  // Repair our own file first: rewrite it without the torn tail.
  if (fs::exists(log.path_, ec)) {
    ASSIGN_OR_RETURN(std::vector<json> kept,
                     ReadResultsFile(log.path_, &log.dropped_));
    if (log.dropped_ > 0) {
      DS_LOG(Warning) << log.path_ << ": dropped " << log.dropped_
                      << " torn line(s) left by a killed run";
      std::string text;
      for (const json& line : kept) absl::StrAppend(&text, line.dump(), "\n");
      const std::string tmp = log.path_ + ".repair";
      const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) return Errno("cannot create", tmp);
      absl::Status written = WriteAll(fd, text, tmp);
      ::close(fd);
      RETURN_IF_ERROR(written);
      fs::rename(tmp, log.path_, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat(log.path_, ": cannot replace: ", ec.message()));
      }
    }
  }
  for (const std::string& file : ListResultsFiles(dir)) {
    // Other shards may be writing now: read them, never repair them.
    ASSIGN_OR_RETURN(std::vector<json> lines, ReadResultsFile(file));
    for (const json& line : lines) {
      const std::string hash = StrField(line, "config_hash");
      if (!hash.empty() && hash != config_hash) {
        return absl::FailedPreconditionError(absl::StrCat(
            file, " holds results of another config (hash ", hash,
            "; this one is ", config_hash,
            "): use another --out folder, or remove the file to start over"));
      }
      if (file == log.path_)
        log.Note(line);
      else if (StrField(line, "kind") == "result")
        log.Note(line);
    }
  }
  log.fd_ = ::open(log.path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log.fd_ < 0) return Errno("cannot open for appending", log.path_);
  return log;
}

void ResultsLog::Note(const nlohmann::json& line) {
  const std::string kind = StrField(line, "kind");
  const std::string job = StrField(line, "job");
  if (kind == "result") {
    const std::string pair = StrField(line, "pair");
    if (StrField(line, "status") == "ok") {
      ok_pairs_.insert(pair);
      error_pairs_.erase(pair);
    } else if (!ok_pairs_.count(pair)) {
      error_pairs_.insert(pair);
    }
    last_marker_[job] = "result";
  } else if (kind == "start" || kind == "interrupted" || kind == "end") {
    last_marker_[job] = kind;
  }
}

ResultsLog::ResultsLog(ResultsLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      lock_fd_(other.lock_fd_),
      dropped_(other.dropped_),
      ok_pairs_(std::move(other.ok_pairs_)),
      error_pairs_(std::move(other.error_pairs_)),
      last_marker_(std::move(other.last_marker_)) {
  other.fd_ = -1;
  other.lock_fd_ = -1;
}

ResultsLog::~ResultsLog() {
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // Releases the flock.
}

bool ResultsLog::Finished(const std::string& pair_key,
                          bool errors_count) const {
  return ok_pairs_.count(pair_key) ||
         (errors_count && error_pairs_.count(pair_key));
}

bool ResultsLog::WasInFlight(const std::string& job_key) const {
  auto it = last_marker_.find(job_key);
  return it != last_marker_.end() &&
         (it->second == "start" || it->second == "result");
}

absl::Status ResultsLog::Append(const std::vector<nlohmann::json>& lines) {
  std::string text;
  for (const json& line : lines) {
    absl::StrAppend(&text, line.dump(), "\n");
    Note(line);
  }
  return WriteAll(fd_, text, path_);
}

}  // namespace dynsparse
