#include "mechanics/builtins.hpp"

namespace capstan::mechanics {
namespace {

const std::vector<BuiltinInfo>& table() {
  static const std::vector<BuiltinInfo> kTable = [] {
    std::vector<BuiltinInfo> rows = {
#define CAPSTAN_COMPONENT_ROW(Name, noun, ...) {#Name, ComponentKind::Name, noun, {__VA_ARGS__}, std::nullopt},
        CAPSTAN_COMPONENT_KINDS(CAPSTAN_COMPONENT_ROW)
#undef CAPSTAN_COMPONENT_ROW
    };
#define CAPSTAN_JOINT_ROW(Name) \
  rows.push_back({jointTypeName(JointType::Name), ComponentKind::Name, "joint", {"frame_a", "frame_b"}, JointType::Name});
    CAPSTAN_JOINT_TYPES(CAPSTAN_JOINT_ROW)
#undef CAPSTAN_JOINT_ROW
    return rows;
  }();
  return kTable;
}

}  // namespace

const BuiltinInfo* builtinInfo(std::string_view kind) {
  for (const BuiltinInfo& info : table())
    if (info.kind == kind) return &info;
  return nullptr;
}

const BuiltinInfo& builtinInfo(ComponentKind kind) {
  for (const BuiltinInfo& info : table())
    if (info.id == kind) return info;
  return table().front();  // not reached: every enumerator has its row
}

std::optional<ComponentKind> componentKind(std::string_view kind) {
  const BuiltinInfo* info = builtinInfo(kind);
  return info ? std::optional<ComponentKind>(info->id) : std::nullopt;
}

std::optional<JointType> jointType(std::string_view kind) {
  const BuiltinInfo* info = builtinInfo(kind);
  return info ? info->joint : std::nullopt;
}

std::vector<ComponentKind> surfaceKinds() {
  std::vector<ComponentKind> kinds;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (kinds.push_back(SurfaceTraits<std::variant_alternative_t<I, cable::Surface>>::kind), ...);
  }(std::make_index_sequence<std::variant_size_v<cable::Surface>>{});
  return kinds;
}

}  // namespace capstan::mechanics
