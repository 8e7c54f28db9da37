#include "experiments/harness/progress.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace dynsparse {

SweepProgress::SweepProgress(std::ostream& out, bool terminal,
                             size_t total_jobs)
    : out_(out),
      terminal_(terminal),
      total_(total_jobs),
      start_(std::chrono::steady_clock::now()) {}

std::string SweepProgress::FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

void SweepProgress::BeginJob(size_t position, const std::string& description) {
  position_ = position;
  job_ = description;
  metric_.clear();
  fraction_ = 0;
  job_start_ = std::chrono::steady_clock::now();
  Draw();
}

void SweepProgress::Metric(const std::string& metric, int64_t done,
                           int64_t total) {
  metric_ = metric;
  fraction_ =
      total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 0.0;
  // Redrawing on every callback would flood a slow terminal.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ > std::chrono::milliseconds(200)) Draw();
}

void SweepProgress::EndJob(const std::string& outcome) {
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - job_start_)
                             .count();
  if (terminal_) out_ << "\r\033[K";
  out_ << absl::StrFormat("[%d/%d] %s: %s (%.1f s)\n", position_ + 1, total_,
                          job_, outcome, seconds);
  position_ += 1;
  fraction_ = 0;
  out_.flush();
}

void SweepProgress::Finish() {
  if (terminal_) out_ << "\r\033[K" << std::flush;
}

void SweepProgress::Draw() {
  if (!terminal_ || total_ == 0) return;
  last_draw_ = std::chrono::steady_clock::now();
  const double elapsed =
      std::chrono::duration<double>(last_draw_ - start_).count();
  const double done = (static_cast<double>(position_) + fraction_) / total_;
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(done * kWidth);
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  std::string eta = "?";
  if (done > 0.001) eta = FormatDuration(elapsed / done - elapsed);
  std::string line = absl::StrFormat("[%s] %d/%d jobs  ETA %s  %s", bar,
                                     position_, total_, eta, job_);
  if (!metric_.empty()) {
    absl::StrAppendFormat(&line, "  %s %d%%", metric_,
                          static_cast<int>(fraction_ * 100));
  }
  out_ << "\r\033[K" << line << std::flush;
}

}  // namespace dynsparse
