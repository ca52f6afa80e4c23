// The integrators a model runs with (capstan/integrators.hpp,
// capstan/cvode.hpp): one enumeration and one table of names, from which
// the command line's choices, the messages that list them and the model's
// `__capstan_integrator` check are all made.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace capstan::sim {

enum class Integrator {
  rk4,     // classical Runge-Kutta, fixed step dt
  euler,   // semi-implicit (symplectic) Euler, fixed step dt
  dopri5,  // Dormand-Prince 5(4), error control, dense output
  cvode,   // SUNDIALS' CVODE: BDF with Newton, for stiff models (-DCAPSTAN_CVODE)
};

struct IntegratorInfo {
  Integrator integrator;
  std::string_view name;    // as the command line and `__capstan_integrator` spell it
  std::string_view method;  // `--stats`' description, unless the integrator reports its own
  bool adaptive;            // error control with a tolerance; else steps of dt
};

inline constexpr std::array<IntegratorInfo, 4> kIntegrators = {{
    {Integrator::rk4, "rk4", "fixed step", false},
    {Integrator::euler, "euler", "fixed step", false},
    {Integrator::dopri5, "dopri5", "Dormand-Prince 5(4), adaptive", true},
    {Integrator::cvode, "cvode", "BDF, Newton, dense LU", true},
}};

inline constexpr const IntegratorInfo& info(Integrator integrator) {
  return kIntegrators[static_cast<std::size_t>(integrator)];
}
inline constexpr std::string_view name(Integrator integrator) { return info(integrator).name; }

inline std::optional<Integrator> parseIntegrator(std::string_view text) {
  for (const IntegratorInfo& i : kIntegrators)
    if (i.name == text) return i.integrator;
  return std::nullopt;
}

// "rk4, euler, dopri5 or cvode" (each name between `quote`s).
inline std::string integratorList(std::string_view quote = "") {
  std::string list;
  for (std::size_t k = 0; k < kIntegrators.size(); ++k) {
    if (k > 0) list += k + 1 == kIntegrators.size() ? " or " : ", ";
    list += std::string(quote) + std::string(kIntegrators[k].name) + std::string(quote);
  }
  return list;
}

// Whether this program was built with `integrator` (cvode needs
// -DCAPSTAN_CVODE and SUNDIALS).
inline constexpr bool builtWith(Integrator integrator) {
#ifdef CAPSTAN_CVODE
  (void)integrator;
  return true;
#else
  return integrator != Integrator::cvode;
#endif
}

}  // namespace capstan::sim
