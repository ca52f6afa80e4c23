#include "cli/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace capstan::cli {

std::string writeAtomically(const std::filesystem::path& path, std::string_view text) {
  const std::filesystem::path temporary = path.string() + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::strerror(errno);
  std::string reason;
  for (std::size_t done = 0; done < text.size() && reason.empty();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) reason = std::strerror(errno);
    else if (n == 0) reason = std::strerror(ENOSPC);
    else done += static_cast<std::size_t>(n);
  }
  if (reason.empty() && ::fsync(fd) != 0 && errno != EINVAL) reason = std::strerror(errno);
  if (::close(fd) != 0 && reason.empty()) reason = std::strerror(errno);
  if (reason.empty() && ::rename(temporary.c_str(), path.c_str()) != 0) reason = std::strerror(errno);
  if (!reason.empty()) ::unlink(temporary.c_str());
  return reason;
}

std::string xmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 has no other control characters than tab and newlines.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') out += '?';
        else out += ch;
    }
  }
  return out;
}

}  // namespace capstan::cli
