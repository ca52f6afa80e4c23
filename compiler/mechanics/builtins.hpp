// What mechanics knows about each built-in component of SPEC §4: its frame
// connectors and the noun used for it in messages. Parameters, units and
// documentation live in stdlib/Capstan (sema reads those).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "mechanics/mechanism.hpp"

namespace capstan::mechanics {

struct BuiltinInfo {
  std::string_view kind;               // `Body`
  const char* noun;                    // "body"
  std::vector<const char*> connectors; // frames, in order
};

// nullptr for a kind that is not a built-in component.
const BuiltinInfo* builtinInfo(std::string_view kind);
std::optional<JointType> jointType(std::string_view kind);

}  // namespace capstan::mechanics
