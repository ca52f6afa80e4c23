// Physical units: Modelica unit strings ("kg.m2", "m/s2", "N.m/rad") parsed
// into exponents of the SI base dimensions, and the unit algebra used to
// infer the unit of an expression.
//
// An expression's unit is Unknown (a variable declared without a unit, or
// anything computed from one), Literal (a number: it scales in products and
// adapts to the other operand in sums and assignments) or Known. The radian
// is dimensionless, as in SI.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace capstan::sema {

struct Unit {
  enum class Kind { Unknown, Literal, Known };
  // Base dimensions in order: m, kg, s, A, K, mol, cd.
  static constexpr std::size_t kDims = 7;

  Kind kind = Kind::Unknown;
  std::array<double, kDims> exps{};
  double scale = 1.0;  // e.g. 1e-3 for "mm"
  std::string spelling;  // as declared, "" when inferred
  // Scaled by a number somewhere (`-2.0 * u`): the number may carry a unit
  // of its own (a damping constant written inline), so a mismatch is not
  // reported; the unit still propagates for inference.
  bool soft = false;

  static Unit unknown() { return {}; }
  static Unit literal() {
    Unit u;
    u.kind = Kind::Literal;
    return u;
  }
  static Unit dimensionless() {
    Unit u;
    u.kind = Kind::Known;
    u.spelling = "1";
    return u;
  }

  bool known() const { return kind == Kind::Known; }
  // Known and not soft: a mismatch with it is an error.
  bool certain() const { return kind == Kind::Known && !soft; }
  bool isDimensionless() const;
  // Same dimensions and scale (the spelling may differ: "N.m" == "J").
  bool sameAs(const Unit& other) const;
  // The declared spelling, or a canonical one ("kg.m2/s2").
  std::string str() const;
};

// Parses a Modelica unit string; on failure returns nullopt and sets `error`.
// The empty string is not a unit (callers treat it as "no unit").
std::optional<Unit> parseUnit(std::string_view text, std::string& error);

Unit unitMul(const Unit& a, const Unit& b);
Unit unitDiv(const Unit& a, const Unit& b);
Unit unitPow(const Unit& a, double exponent);
// The unit of `a + b` (and of if-branches, min, max, array elements): the
// known one of the two; `ok` is false when both are known and differ.
Unit unitJoin(const Unit& a, const Unit& b, bool& ok);

}  // namespace capstan::sema
