#include "progress.h"

#include <unistd.h>

namespace rudnn::tools {

Progress::Progress(std::size_t total, std::string label, std::FILE* out)
    : total_(total),
      label_(std::move(label)),
      out_(out),
      tty_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::advance(std::size_t n, const std::string& item) {
  std::lock_guard lock(mutex_);
  done_ += n;
  draw(item);
}

void Progress::draw(const std::string& item) {
  const double elapsed = elapsed_seconds();
  const double eta = done_ ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0.0;
  const int percent = total_ ? static_cast<int>(100 * done_ / total_) : 100;
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::fprintf(out_, "\r%s [%.*s%*s] %zu/%zu  %.1fs elapsed  ETA %.1fs  %-40.40s", label_.c_str(), filled,
                 "##############################", kWidth - filled, "", done_, total_, elapsed, eta, item.c_str());
  } else if (percent / 10 != last_decile_) {
    last_decile_ = percent / 10;
    std::fprintf(out_, "%s: %zu/%zu (%d%%), %.1fs elapsed, ETA %.1fs\n", label_.c_str(), done_, total_, percent,
                 elapsed, eta);
  }
  std::fflush(out_);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  std::fprintf(out_, "%s%s: %zu/%zu done in %.1f s\n", tty_ ? "\r\033[K" : "", label_.c_str(), done_, total_,
               elapsed_seconds());
  std::fflush(out_);
}

}  // namespace rudnn::tools
