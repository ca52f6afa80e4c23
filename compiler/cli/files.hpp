// Files that capstan writes for the user — generated headers, depfiles,
// references that `capstan test --update` replaces, reports — are written
// whole or not at all: a full disk, a size limit or a crash never leaves a
// truncated file where a good one was.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "cli/options.hpp"

namespace capstan::cli {

// Writes `text` to `path` through a temporary file in the same folder,
// flushed to the disk and then renamed over `path` (atomic on POSIX file
// systems). Returns "" on success, else the system's reason ("No space left
// on device"), with `path` as it was and the temporary removed.
std::string writeAtomically(const std::filesystem::path& path, std::string_view text);

// The same, exiting with `capstan: error: cannot write `PATH`: REASON` on failure.
inline void writeOrFail(const std::filesystem::path& path, std::string_view text) {
  if (const std::string reason = writeAtomically(path, text); !reason.empty())
    fail(syntax::DiagKind::CannotWriteFile, path.string(), reason);
}

// `s` as XML text or an attribute value (JUnit, reports, an FMU's
// modelDescription.xml): the markup characters escaped, a control
// character XML 1.0 cannot hold as `?`.
std::string xmlEscape(const std::string& s);

}  // namespace capstan::cli
