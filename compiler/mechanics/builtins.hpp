// What mechanics knows about each built-in component of SPEC §4: its kind,
// frame connectors and the noun used for it in messages, one row each.
// Parameters, units and documentation live in stdlib/Capstan (sema reads
// those).
//
// A new kind is a row in CAPSTAN_COMPONENT_KINDS (a joint: a row in the
// runtime's CAPSTAN_JOINT_TYPES, mechanism.hpp); the compiler then asks for
// its handlers: Builder::checkComponents switches over every kind (no
// `default`: a kind without a case does not compile under -Werror=switch),
// and a cable surface needs a SurfaceTraits specialization (below).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "capstan/cable/types.hpp"
#include "mechanics/mechanism.hpp"

namespace capstan::mechanics {

// X(Name, noun, connectors...); the joints come from CAPSTAN_JOINT_TYPES.
#define CAPSTAN_COMPONENT_KINDS(X)                             \
  X(World, "world", "frame_b")                                 \
  X(Body, "body", "frame_a")                                   \
  X(FixedTranslation, "fixed translation", "frame_a", "frame_b") \
  X(FixedFrame, "fixed frame", "frame_a", "frame_b")           \
  X(Sphere, "sphere", "frame_a")                               \
  X(Cylinder, "cylinder", "frame_a")                           \
  X(Ellipsoid, "ellipsoid", "frame_a")                         \
  X(Torus, "torus", "frame_a")                                 \
  X(HalfSpace, "half-space", "frame_a")                        \
  X(SphereOnSphereContact, "contact")                          \
  X(HuntCrossleyContact, "compliant contact")                  \
  X(Bushing, "bushing", "frame_a", "frame_b")                  \
  X(Spring, "spring", "frame_a", "frame_b")                    \
  X(ViaPoint, "via point", "frame_a")                          \
  X(Wrap, "wrap")                                              \
  X(Cable, "cable", "frame_a", "frame_b")                      \
  X(CableSpring, "cable spring")                               \
  X(CableActuator, "cable actuator")                           \
  X(Visual, "visual", "frame_a")                               \
  X(Coupler, "coupler")

enum class ComponentKind {
#define CAPSTAN_COMPONENT_ENUMERATOR(Name, ...) Name,
  CAPSTAN_COMPONENT_KINDS(CAPSTAN_COMPONENT_ENUMERATOR)
#undef CAPSTAN_COMPONENT_ENUMERATOR
#define CAPSTAN_JOINT_KIND_ENUMERATOR(Name) Name,
  CAPSTAN_JOINT_TYPES(CAPSTAN_JOINT_KIND_ENUMERATOR)
#undef CAPSTAN_JOINT_KIND_ENUMERATOR
};

// The shapes a `Visual` draws (its `shape` parameter; `capstan view`).
inline constexpr std::string_view kVisualShapes[] = {"box", "sphere", "cylinder", "capsule", "mesh"};

struct BuiltinInfo {
  std::string_view kind;                // `Body`
  ComponentKind id;                     // ComponentKind::Body
  const char* noun;                     // "body"
  std::vector<const char*> connectors;  // frames, in order
  std::optional<JointType> joint;       // a joint's type
};

// nullptr for a kind that is not a built-in component.
const BuiltinInfo* builtinInfo(std::string_view kind);
const BuiltinInfo& builtinInfo(ComponentKind kind);
std::optional<ComponentKind> componentKind(std::string_view kind);
std::optional<JointType> jointType(std::string_view kind);

// ------------------------------------------------------------ cable surfaces

// The surfaces a cable wraps over: one specialization per alternative of
// capstan::cable::Surface, which says the component kind and how the
// geometry is built from the component's parameters. `arguments(read)`
// returns the constructor's arguments in order, each read with
// `read.scalar(name)` or `read.vec3(name)`: numbers for the interpreter, C++
// text for the generated code (ParameterReader). Every parameter it reads
// must be positive (checked in mechanics).
template <class ScalarValue, class VectorValue>
struct ParameterReader {
  std::function<ScalarValue(const char* name)> scalar;
  std::function<VectorValue(const char* name)> vec3;
};

template <class Geometry>
struct SurfaceTraits;  // no definition: a surface without one does not compile

// A surface built from its `radius` alone.
struct RadiusSurface {
  template <class Read>
  static auto arguments(Read& read) {
    return std::tuple{read.scalar("radius")};
  }
};

template <>
struct SurfaceTraits<geometry::Sphere<double>> : RadiusSurface {
  using Geometry = geometry::Sphere<double>;
  static constexpr ComponentKind kind = ComponentKind::Sphere;
  static constexpr const char* cppType = "capstan::geometry::Sphere<double>";
};

template <>
struct SurfaceTraits<geometry::Cylinder<double>> : RadiusSurface {
  using Geometry = geometry::Cylinder<double>;
  static constexpr ComponentKind kind = ComponentKind::Cylinder;
  static constexpr const char* cppType = "capstan::geometry::Cylinder<double>";
};

template <>
struct SurfaceTraits<geometry::Ellipsoid<double>> {
  using Geometry = geometry::Ellipsoid<double>;
  static constexpr ComponentKind kind = ComponentKind::Ellipsoid;
  static constexpr const char* cppType = "capstan::geometry::Ellipsoid<double>";
  template <class Read>
  static auto arguments(Read& read) {
    return std::tuple{read.vec3("semiAxes")};
  }
};

template <>
struct SurfaceTraits<geometry::Torus<double>> {
  using Geometry = geometry::Torus<double>;
  static constexpr ComponentKind kind = ComponentKind::Torus;
  static constexpr const char* cppType = "capstan::geometry::Torus<double>";
  template <class Read>
  static auto arguments(Read& read) {
    return std::tuple{read.scalar("majorRadius"), read.scalar("minorRadius")};  // in order (braces)
  }
};

// f(SurfaceTraits<G>{}) for the surface of component kind `kind`; returns
// false when `kind` is not a surface.
template <class F>
bool visitSurface(ComponentKind kind, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return ((SurfaceTraits<std::variant_alternative_t<I, cable::Surface>>::kind == kind
                 ? (f(SurfaceTraits<std::variant_alternative_t<I, cable::Surface>>{}), true)
                 : false) ||
            ...);
  }(std::make_index_sequence<std::variant_size_v<cable::Surface>>{});
}

// The kinds a cable can wrap over, for references (`Wrap.surface`).
std::vector<ComponentKind> surfaceKinds();

}  // namespace capstan::mechanics
