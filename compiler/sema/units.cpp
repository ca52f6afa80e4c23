#include "sema/units.hpp"

#include <cmath>
#include <cstdlib>

namespace capstan::sema {
namespace {

struct Symbol {
  std::string_view name;
  std::array<double, Unit::kDims> exps;  // m, kg, s, A, K, mol, cd
  double scale;
};

// SI base and derived units (coherent), plus a few common non-coherent ones.
constexpr Symbol kSymbols[] = {
    {"m", {1, 0, 0, 0, 0, 0, 0}, 1},     {"kg", {0, 1, 0, 0, 0, 0, 0}, 1},
    {"g", {0, 1, 0, 0, 0, 0, 0}, 1e-3},  {"s", {0, 0, 1, 0, 0, 0, 0}, 1},
    {"A", {0, 0, 0, 1, 0, 0, 0}, 1},     {"K", {0, 0, 0, 0, 1, 0, 0}, 1},
    {"mol", {0, 0, 0, 0, 0, 1, 0}, 1},   {"cd", {0, 0, 0, 0, 0, 0, 1}, 1},
    {"rad", {0, 0, 0, 0, 0, 0, 0}, 1},   {"sr", {0, 0, 0, 0, 0, 0, 0}, 1},
    {"deg", {0, 0, 0, 0, 0, 0, 0}, 0.017453292519943295},
    {"N", {1, 1, -2, 0, 0, 0, 0}, 1},    {"J", {2, 1, -2, 0, 0, 0, 0}, 1},
    {"W", {2, 1, -3, 0, 0, 0, 0}, 1},    {"Pa", {-1, 1, -2, 0, 0, 0, 0}, 1},
    {"Hz", {0, 0, -1, 0, 0, 0, 0}, 1},   {"V", {2, 1, -3, -1, 0, 0, 0}, 1},
    {"C", {0, 0, 1, 1, 0, 0, 0}, 1},     {"Ohm", {2, 1, -3, -2, 0, 0, 0}, 1},
    {"min", {0, 0, 1, 0, 0, 0, 0}, 60},  {"h", {0, 0, 1, 0, 0, 0, 0}, 3600},
    {"l", {3, 0, 0, 0, 0, 0, 0}, 1e-3},
};

struct Prefix {
  char symbol;
  double scale;
};
constexpr Prefix kPrefixes[] = {{'p', 1e-12}, {'n', 1e-9}, {'u', 1e-6}, {'m', 1e-3}, {'c', 1e-2},
                                {'d', 1e-1},  {'k', 1e3},  {'M', 1e6},  {'G', 1e9}};

const Symbol* findSymbol(std::string_view s) {
  for (const Symbol& sym : kSymbols) {
    if (sym.name == s) return &sym;
  }
  return nullptr;
}

class Parser {
 public:
  Parser(std::string_view text, std::string& error) : t_(text), error_(error) {}

  std::optional<Unit> parse() {
    Unit u;
    u.kind = Unit::Kind::Known;
    if (!expression(u)) return std::nullopt;
    if (pos_ != t_.size()) return fail("unexpected `" + std::string(1, t_[pos_]) + "`");
    return u;
  }

 private:
  std::optional<Unit> fail(std::string message) {
    error_ = std::move(message);
    return std::nullopt;
  }

  // expression := product ('/' (factor | '(' expression ')'))*
  bool expression(Unit& u) {
    if (!product(u)) return false;
    while (pos_ < t_.size() && t_[pos_] == '/') {
      ++pos_;
      Unit d;
      d.kind = Unit::Kind::Known;
      if (pos_ < t_.size() && t_[pos_] == '(') {
        ++pos_;
        if (!expression(d)) return false;
        if (pos_ >= t_.size() || t_[pos_] != ')') {
          fail("missing `)`");
          return false;
        }
        ++pos_;
      } else if (!factor(d)) {
        return false;
      }
      u = unitDiv(u, d);
    }
    return true;
  }

  // product := factor ('.' factor)*  |  "1"
  bool product(Unit& u) {
    if (pos_ < t_.size() && t_[pos_] == '1' &&
        (pos_ + 1 == t_.size() || t_[pos_ + 1] == '/' || t_[pos_ + 1] == ')')) {
      ++pos_;
      return true;
    }
    if (pos_ < t_.size() && t_[pos_] == '(') {
      ++pos_;
      if (!expression(u)) return false;
      if (pos_ >= t_.size() || t_[pos_] != ')') {
        fail("missing `)`");
        return false;
      }
      ++pos_;
    } else if (!factor(u)) {
      return false;
    }
    while (pos_ < t_.size() && t_[pos_] == '.') {
      ++pos_;
      Unit f;
      f.kind = Unit::Kind::Known;
      if (!factor(f)) return false;
      u = unitMul(u, f);
    }
    return true;
  }

  // factor := symbol [integer exponent], e.g. `m2`, `s-2`
  bool factor(Unit& u) {
    const std::size_t start = pos_;
    while (pos_ < t_.size() && std::isalpha(static_cast<unsigned char>(t_[pos_]))) ++pos_;
    const std::string_view name = t_.substr(start, pos_ - start);
    if (name.empty()) {
      fail(pos_ < t_.size() ? "expected a unit symbol at `" + std::string(1, t_[pos_]) + "`"
                            : "expected a unit symbol at the end");
      return false;
    }
    const Symbol* sym = findSymbol(name);
    double prefixScale = 1.0;
    if (!sym && name.size() > 1) {
      for (const Prefix& p : kPrefixes) {
        if (name[0] == p.symbol && (sym = findSymbol(name.substr(1)))) {
          prefixScale = p.scale;
          break;
        }
      }
    }
    if (!sym) {
      fail("unknown unit symbol `" + std::string(name) + "`");
      return false;
    }
    int exponent = 1;
    if (pos_ < t_.size() && (t_[pos_] == '-' || t_[pos_] == '+' || std::isdigit(static_cast<unsigned char>(t_[pos_])))) {
      const std::size_t es = pos_;
      if (t_[pos_] == '-' || t_[pos_] == '+') ++pos_;
      const std::size_t digits = pos_;
      while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_;
      if (pos_ == digits) {
        fail("expected an exponent after `" + std::string(t_.substr(start, pos_ - start)) + "`");
        return false;
      }
      exponent = std::atoi(std::string(t_.substr(es, pos_ - es)).c_str());
    }
    Unit f;
    f.kind = Unit::Kind::Known;
    f.exps = sym->exps;
    f.scale = sym->scale * prefixScale;
    u = unitMul(u, unitPow(f, exponent));
    return true;
  }

  std::string_view t_;
  std::string& error_;
  std::size_t pos_ = 0;
};

std::string formatExponent(double e) {
  if (e == std::round(e)) return std::to_string(static_cast<long>(e));
  std::string s = std::to_string(e);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}

}  // namespace

bool Unit::isDimensionless() const {
  if (!known()) return false;
  for (double e : exps) {
    if (e != 0) return false;
  }
  return true;
}

bool Unit::sameAs(const Unit& other) const {
  if (exps != other.exps) return false;
  return std::abs(scale - other.scale) <= 1e-12 * std::max(std::abs(scale), std::abs(other.scale));
}

std::string Unit::str() const {
  if (!spelling.empty()) return spelling;
  if (!known()) return "?";
  static constexpr std::string_view names[kDims] = {"m", "kg", "s", "A", "K", "mol", "cd"};
  // Conventional order: kg, m, s, then the rest.
  static constexpr std::size_t order[kDims] = {1, 0, 2, 3, 4, 5, 6};
  std::string num, den;
  for (std::size_t k : order) {
    const double e = exps[k];
    if (e > 0) num += (num.empty() ? "" : ".") + std::string(names[k]) + (e == 1 ? "" : formatExponent(e));
    if (e < 0) den += (den.empty() ? "" : ".") + std::string(names[k]) + (e == -1 ? "" : formatExponent(-e));
  }
  std::string s = num.empty() ? "1" : num;
  if (!den.empty()) s += "/" + (den.find('.') != std::string::npos ? "(" + den + ")" : den);
  if (scale != 1.0) s = std::to_string(scale) + "*" + s;
  return s;
}

std::optional<Unit> parseUnit(std::string_view text, std::string& error) {
  if (text.empty()) {
    error = "empty unit";
    return std::nullopt;
  }
  std::optional<Unit> u = Parser(text, error).parse();
  if (u) u->spelling = std::string(text);
  return u;
}

Unit unitMul(const Unit& a, const Unit& b) {
  if (a.kind == Unit::Kind::Unknown || b.kind == Unit::Kind::Unknown) return Unit::unknown();
  if (a.kind == Unit::Kind::Literal || b.kind == Unit::Kind::Literal) {
    if (a.kind == Unit::Kind::Literal && b.kind == Unit::Kind::Literal) return a;
    Unit r = a.kind == Unit::Kind::Literal ? b : a;
    r.soft = true;
    return r;
  }
  Unit r;
  r.kind = Unit::Kind::Known;
  r.soft = a.soft || b.soft;
  for (std::size_t i = 0; i < Unit::kDims; ++i) r.exps[i] = a.exps[i] + b.exps[i];
  r.scale = a.scale * b.scale;
  return r;
}

Unit unitPow(const Unit& a, double exponent) {
  if (a.kind != Unit::Kind::Known) return a.kind == Unit::Kind::Literal ? Unit::literal() : Unit::unknown();
  Unit r;
  r.kind = Unit::Kind::Known;
  r.soft = a.soft;
  for (std::size_t i = 0; i < Unit::kDims; ++i) r.exps[i] = a.exps[i] * exponent;
  r.scale = std::pow(a.scale, exponent);
  return r;
}

Unit unitDiv(const Unit& a, const Unit& b) {
  if (b.kind == Unit::Kind::Literal) return unitMul(a, b);
  if (a.kind == Unit::Kind::Literal && b.kind == Unit::Kind::Known) {
    Unit r = unitPow(b, -1);
    r.soft = true;
    return r;
  }
  return unitMul(a, unitPow(b, -1));
}

Unit unitJoin(const Unit& a, const Unit& b, bool& ok) {
  ok = true;
  if (a.kind == Unit::Kind::Literal) return b;
  if (b.kind == Unit::Kind::Literal) return a;
  if (a.kind == Unit::Kind::Unknown || b.kind == Unit::Kind::Unknown) return Unit::unknown();
  if (a.sameAs(b)) {
    Unit r = a.soft ? b : a;
    return r;
  }
  if (a.soft || b.soft) return a.soft ? b : a;
  ok = false;
  return a;
}

}  // namespace capstan::sema
