// CSV rows written whole (POSIX write(2)): numbers and text collect in a
// buffer that goes out only at the end of a row, so a file that a signal,
// a crash or a full disk cuts short ends on a complete row. Numbers as %.15g.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace capstan::sim {

class RowWriter {
 public:
  // Rows are flushed when `flushBytes` have collected (0: after every row,
  // for a reader that follows the file as it grows).
  explicit RowWriter(int fd, std::size_t flushBytes = std::size_t{1} << 16) : fd_(fd), chunk_(flushBytes) {
    // Where the rows start, if a torn row can be cut off there: a regular
    // file written at its offset (not a pipe, not a file opened to append).
    const off_t at = ::lseek(fd_, 0, SEEK_CUR);
    const int flags = ::fcntl(fd_, F_GETFL);
    truncatable_ = at >= 0 && flags >= 0 && !(flags & O_APPEND);
    offset_ = truncatable_ ? static_cast<std::size_t>(at) : 0;
  }
  ~RowWriter() { flush(); }
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  void text(std::string_view s) {
    separate();
    buffer_.append(s);
  }
  void number(double v) {
    char b[32];
    const int n = std::snprintf(b, sizeof b, "%.15g", v);
    text(std::string_view(b, static_cast<std::size_t>(n)));
  }
  // Ends the row (`data`: a data row, counted; else the header).
  void endRow(bool data = true) {
    buffer_ += '\n';
    if (!data) headerEnd_ = buffer_.size();
    fresh_ = true;
    complete_ = buffer_.size();
    if (data) ++pending_;
    if (complete_ >= chunk_) flush();
  }
  // Writes the complete rows buffered so far; false on a write error. The
  // file then ends on the last row that went out whole: a write that stops
  // part way through a row (a full disk, a file size limit) is cut back to
  // it (ftruncate, where the file is a regular file), and the rows that did
  // not go out are dropped and not counted.
  bool flush() {
    std::size_t done = 0;
    while (done < complete_ && !failed_) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, complete_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed_ = true;
        error_ = n < 0 ? errno : ENOSPC;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (failed_) {
      const std::size_t whole = done == 0 ? 0 : buffer_.rfind('\n', done - 1) + 1;  // npos + 1 == 0
      if (whole < done && truncatable_) (void)::ftruncate(fd_, static_cast<off_t>(offset_ + whole));
      for (std::size_t i = 0; i < whole; ++i) rows_ += buffer_[i] == '\n' ? 1 : 0;
      if (headerEnd_ > 0 && whole >= headerEnd_) --rows_;  // the header is no data row
      offset_ += whole;
    } else {
      rows_ += pending_;
      offset_ += complete_;
    }
    headerEnd_ = 0;
    buffer_.erase(0, complete_);
    complete_ = 0;
    pending_ = 0;
    return !failed_;
  }
  // Writes the complete rows buffered so far with write(2) alone, touching
  // no other state: what a handler of a crash signal (SIGSEGV in a C++
  // function the model calls) may do before the program dies, so that the
  // rows computed before the crash are on disk, whole. Async-signal-safe
  // while no row is being appended, which is when a model's code runs.
  void flushBeforeDying() const noexcept {
    for (std::size_t done = 0; done < complete_ && !failed_;) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, complete_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }
  long rowsWritten() const { return rows_; }
  // The data rows complete so far, written or not (what flushBeforeDying
  // writes out, when it can).
  long rowsComplete() const noexcept { return rows_ + pending_; }
  bool failed() const { return failed_; }
  // The system's reason for a failed write ("No space left on device").
  std::string error() const { return failed_ ? std::strerror(error_) : std::string(); }

 private:
  void separate() {
    if (!fresh_) buffer_ += ',';
    fresh_ = false;
  }
  int fd_;
  std::size_t chunk_;
  std::string buffer_;
  std::size_t complete_ = 0;  // bytes of buffer_ that end a row
  std::size_t offset_ = 0;    // the file offset after the last whole row written
  bool truncatable_ = false;
  std::size_t headerEnd_ = 0; // bytes of buffer_ up to the header's end while it is there, else 0
  long pending_ = 0, rows_ = 0;
  bool fresh_ = true, failed_ = false;
  int error_ = 0;
};

// `71,332 rows`
inline std::string rowCount(long rows) {
  const std::string digits = std::to_string(rows);
  std::string count;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) count += ',';
    count += digits[i];
  }
  return count + (rows == 1 ? " row" : " rows");
}

}  // namespace capstan::sim
