#include "mechanics/builtins.hpp"

#include <array>

namespace capstan::mechanics {
namespace {

const std::vector<BuiltinInfo>& table() {
  static const std::vector<BuiltinInfo> kTable = {
      {"World", "world", {"frame_b"}},
      {"Body", "body", {"frame_a"}},
      {"FixedTranslation", "fixed translation", {"frame_a", "frame_b"}},
      {"FixedFrame", "fixed frame", {"frame_a", "frame_b"}},
      {"Weld", "joint", {"frame_a", "frame_b"}},
      {"Revolute", "joint", {"frame_a", "frame_b"}},
      {"Prismatic", "joint", {"frame_a", "frame_b"}},
      {"Cylindrical", "joint", {"frame_a", "frame_b"}},
      {"Universal", "joint", {"frame_a", "frame_b"}},
      {"Ball", "joint", {"frame_a", "frame_b"}},
      {"Free", "joint", {"frame_a", "frame_b"}},
      {"Sphere", "sphere", {"frame_a"}},
      {"Cylinder", "cylinder", {"frame_a"}},
      {"Ellipsoid", "ellipsoid", {"frame_a"}},
      {"Torus", "torus", {"frame_a"}},
      {"HalfSpace", "half-space", {"frame_a"}},
      {"SphereOnSphereContact", "contact", {}},
      {"Bushing", "bushing", {"frame_a", "frame_b"}},
      {"Spring", "spring", {"frame_a", "frame_b"}},
      {"ViaPoint", "via point", {"frame_a"}},
      {"Wrap", "wrap", {}},
      {"Cable", "cable", {"frame_a", "frame_b"}},
      {"CableSpring", "cable spring", {}},
      {"CableActuator", "cable actuator", {}},
  };
  return kTable;
}

}  // namespace

const BuiltinInfo* builtinInfo(std::string_view kind) {
  for (const BuiltinInfo& info : table())
    if (info.kind == kind) return &info;
  return nullptr;
}

std::optional<JointType> jointType(std::string_view kind) {
  static constexpr std::array<std::pair<std::string_view, JointType>, 7> kJoints{{
      {"Weld", JointType::Weld},
      {"Revolute", JointType::Revolute},
      {"Prismatic", JointType::Prismatic},
      {"Cylindrical", JointType::Cylindrical},
      {"Universal", JointType::Universal},
      {"Ball", JointType::Ball},
      {"Free", JointType::Free},
  }};
  for (const auto& [name, type] : kJoints)
    if (name == kind) return type;
  return std::nullopt;
}

}  // namespace capstan::mechanics
