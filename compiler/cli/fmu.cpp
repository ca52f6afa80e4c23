// `capstan fmu`: the model as an FMI 2.0 or 3.0 FMU (Model Exchange and
// Co-Simulation): modelDescription.xml written from the layout and the
// column table, the binary built like simulate's program around
// capstan/sim/fmu2.hpp (cli/driver.hpp), the sources beside it, all in one
// zip archive written whole.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <capstan/sim/columns.hpp>
#include <capstan/sim/integrator.hpp>
#include "cli/driver.hpp"
#include "cli/external.hpp"
#include "cli/files.hpp"
#include "cli/generate.hpp"
#include "cli/options.hpp"
#include "codegen/interpret.hpp"
#include "syntax/diagnostics.hpp"
#include "syntax/numbers.hpp"

namespace capstan::cli {
namespace fs = std::filesystem;

namespace {

// ------------------------------------------------------------------ zip

// CRC-32 (ISO 3309, the zip format's), bytewise with a table.
std::uint32_t crc32(const std::string& bytes) {
  static const auto table = [] {
    std::vector<std::uint32_t> t(256);
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (const unsigned char b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// A zip archive of `files` (path in the archive, bytes), stored
// uncompressed (PKWARE's APPNOTE: local headers, the central directory,
// its end record), dated 1980-01-01 so that the same FMU gives the same
// bytes; `executable` entries carry Unix mode 0755.
std::string zipArchive(const std::vector<std::pair<std::string, std::string>>& files,
                       const std::set<std::string>& executable) {
  std::string out, directory;
  const auto u16 = [](std::string& s, unsigned v) {
    s += char(v & 0xFF);
    s += char((v >> 8) & 0xFF);
  };
  const auto u32 = [](std::string& s, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) s += char((v >> (8 * k)) & 0xFF);
  };
  constexpr unsigned kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
  for (const auto& [name, bytes] : files) {
    const std::uint32_t crc = crc32(bytes), offset = std::uint32_t(out.size()), size = std::uint32_t(bytes.size());
    u32(out, 0x04034b50);
    u16(out, 20);  // version needed: 2.0
    u16(out, 0);   // flags
    u16(out, 0);   // stored
    u16(out, 0);   // time
    u16(out, kDosDate);
    u32(out, crc);
    u32(out, size);
    u32(out, size);
    u16(out, unsigned(name.size()));
    u16(out, 0);
    out += name;
    out += bytes;
    u32(directory, 0x02014b50);
    u16(directory, (3 << 8) | 20);  // made by: Unix, 2.0
    u16(directory, 20);
    u16(directory, 0);
    u16(directory, 0);
    u16(directory, 0);
    u16(directory, kDosDate);
    u32(directory, crc);
    u32(directory, size);
    u32(directory, size);
    u16(directory, unsigned(name.size()));
    u16(directory, 0);  // extra
    u16(directory, 0);  // comment
    u16(directory, 0);  // disk
    u16(directory, 0);  // internal attributes
    u32(directory, std::uint32_t(executable.count(name) ? 0100755 : 0100644) << 16);
    u32(directory, offset);
    directory += name;
  }
  const std::uint32_t at = std::uint32_t(out.size());
  out += directory;
  u32(out, 0x06054b50);
  u16(out, 0);
  u16(out, 0);
  u16(out, unsigned(files.size()));
  u16(out, unsigned(files.size()));
  u32(out, std::uint32_t(directory.size()));
  u32(out, at);
  u16(out, 0);
  return out;
}

// ------------------------------------------------------ modelDescription

struct Variable {
  std::string name, causality, variability, initial, unit, description;
  double start = 0.0;
  bool hasStart = false;
  int derivativeOf = 0;  // 1-based index of the state, for a derivative
};

struct Interfaces {
  bool modelExchange = true, coSimulation = true;
};

}  // namespace

int fmu(const Options& opts) {
  if (opts.output.empty()) usageError(syntax::DiagKind::UsageMissing, "fmu", "an output file: `-o Model.fmu`");
  if (!opts.fmiVersion.empty() && opts.fmiVersion != "2" && opts.fmiVersion != "3")
    fail(syntax::DiagKind::FmiVersionUnsupported, opts.fmiVersion);
  const int version = opts.fmiVersion == "3" ? 3 : 2;
  Interfaces asked;
  if (!opts.fmiInterfaces.empty()) {
    asked = {false, false};
    std::stringstream list(opts.fmiInterfaces);
    for (std::string item; std::getline(list, item, ',');) {
      if (item == "me") asked.modelExchange = true;
      else if (item == "cs") asked.coSimulation = true;
      else usageError(syntax::DiagKind::UsageOptionValue, "--interface", "`me`, `cs` or `me,cs`");
    }
  }
  const auto loaded = load(opts);
  if (!loaded) return 1;
  const codegen::ModelLayout layout = layoutOrExit(opts, *loaded);
  std::vector<std::vector<double>> values;
  parseSettings(opts, *loaded, layout, values);
  // Model Exchange leaves the integration to the importer, whose integrator
  // knows nothing of the constraints: their drift would grow unchecked.
  std::string noModelExchange;
  if (layout.constraintRows > 0) {
    if (opts.derivatives) fail(syntax::DiagKind::DerivativesWithConstraints);
    noModelExchange = "the model has constraints, whose drift Model Exchange would leave to the importer's "
                      "integrator; its Co-Simulation projects onto them after every step";
    if (!opts.fmiInterfaces.empty() && asked.modelExchange)
      fail(syntax::DiagKind::FmuModelExchangeConstraints, layout.className);
    if (asked.modelExchange) warn(syntax::DiagKind::FmuCoSimulationOnly, layout.className);
    asked.modelExchange = false;
  }
  if (!asked.coSimulation && !asked.modelExchange)
    usageError(syntax::DiagKind::UsageOptionValue, "--interface", "`me`, `cs` or `me,cs`");
  // Directional derivatives of Model Exchange's derivatives with respect to
  // its states, from the generated analytical derivatives: where they cover
  // the dynamics.
  if (opts.derivatives) {
    // Every external function needs a derivative, but those that are one.
    const auto& functions = loaded->flat->functions;
    for (const sema::FlatFunction& f : functions) {
      const bool isDerivative = std::any_of(functions.begin(), functions.end(), [&](const sema::FlatFunction& g) {
        return g.derivative >= 0 && &functions[std::size_t(g.derivative)] == &f;
      });
      if (f.derivative < 0 && !isDerivative)
        fail(syntax::DiagKind::DerivativesOfExternal,
             "`capstan fmu --derivatives` of a model that calls `" + f.name + "`: its derivative");
    }
  }
  const bool directional = opts.derivatives && asked.modelExchange;

  // The start state and the column table as the generated code will have them.
  codegen::Interpreter interp(*loaded->flat, *loaded->mech, layout, values);
  if (opts.derivatives) requireFrictionlessCables(layout, interp);
  codegen::InterpretedModel model(interp);
  Eigen::VectorXd q0, u0;
  interp.initialState(q0, u0);
  std::vector<std::pair<std::string, std::string>> columns;
  capstan::sim::columnNames(model, {}, [&](std::string_view name, std::string_view unit) {
    columns.emplace_back(std::string(name), std::string(unit));
  });
  const int nq = layout.nq, nu = layout.nu, n = nq + nu;
  const std::size_t outputs = columns.size() - 1 - std::size_t(n);

  // der(q) is u for every joint without a quaternion, so der(q_k) depends
  // on u_k alone and linearly (speedOf[k]: u's index, or -1 where it
  // depends on more).
  std::vector<int> speedOf(std::size_t(nq), -1);
  for (const codegen::JointLayout& j : layout.joints)
    if (j.nq() == j.nu())
      for (int k = 0; k < j.nq(); ++k) speedOf[std::size_t(j.qIndex() + k)] = j.uIndex() + k;
  std::vector<Variable> variables;
  std::vector<std::pair<std::string, double>> parameters = settingsForDriver(layout, values);
  for (std::size_t p = 0, at = 0; p < layout.parameters.size(); ++p) {
    const codegen::RuntimeParameter& rp = layout.parameters[p];
    for (std::size_t k = 0; k < rp.size(); ++k, ++at)
      variables.push_back({parameters[at].first, "parameter", "tunable", "exact", rp.unit, rp.description,
                           parameters[at].second, true, 0});
  }
  const bool assembled = layout.constraintRows > 0;  // the start state moves onto the constraints
  // Model Exchange's event indicators (the generated eventIndicators): zero
  // where a contact's or a cable's force switches on or off.
  std::vector<codegen::ModelLayout::EventIndicator> indicators;
  if (asked.modelExchange) indicators = layout.eventIndicators(*loaded->flat);
  for (int k = 0; k < n; ++k)
    variables.push_back({columns[std::size_t(1 + k)].first, "local", "continuous", assembled ? "approx" : "exact",
                         columns[std::size_t(1 + k)].second, k < nq ? "generalized coordinate" : "generalized speed",
                         k < nq ? q0[k] : u0[k - nq], true, 0});
  const int firstState = int(parameters.size()) + 1;  // 1-based
  for (int k = 0; k < n; ++k)
    variables.push_back({"der(" + columns[std::size_t(1 + k)].first + ")", "local", "continuous", "calculated", "", "",
                         0.0, false, firstState + k});
  for (std::size_t k = 0; k < outputs; ++k)
    variables.push_back({columns[1 + std::size_t(n) + k].first, "output", "continuous", "calculated",
                         columns[1 + std::size_t(n) + k].second, "", 0.0, false, 0});

  const auto& ex = loaded->flat->experiment;
  const double start = ex && ex->startTime ? *ex->startTime : 0.0;
  std::string integrator = ex && ex->integrator ? *ex->integrator : "dopri5";
  if (integrator == "cvode") {
    warn(syntax::DiagKind::FmuWithoutCvode, layout.className);
    integrator = "dopri5";
  }
  const double tolerance = ex && ex->tolerance ? *ex->tolerance : 1e-8;

  std::set<std::string> units;
  for (const Variable& v : variables)
    if (!v.unit.empty()) units.insert(v.unit);
  if (version == 3) units.insert("s");  // the independent variable's
  if (version == 3 && !indicators.empty()) units.insert("m");  // the event indicators'
  std::ostringstream body;
  body << "  <UnitDefinitions>\n";
  for (const std::string& u : units) body << "    <Unit name=\"" << xmlEscape(u) << "\"/>\n";
  body << "  </UnitDefinitions>\n";
  body << "  <DefaultExperiment startTime=\"" << syntax::exactNumber(start) << "\"";
  if (ex && ex->stopTime) body << " stopTime=\"" << syntax::exactNumber(*ex->stopTime) << "\"";
  body << " tolerance=\"" << syntax::exactNumber(tolerance) << "\"";
  if (ex && ex->interval) body << " stepSize=\"" << syntax::exactNumber(*ex->interval) << "\"";
  body << "/>\n  <ModelVariables>\n";
  const int firstDerivative = firstState + n, firstOutput = firstDerivative + n;

  // The ModelStructure's dependencies, from the generated code's structure
  // (Model Exchange, where the states are knowns): what the traced qdot,
  // udot, outputs and energies read of the states and the time. An unknown
  // whose traced code does not show them (udot and the potential energy
  // with cables, a cable's columns) lists none, which FMI reads as "depends
  // on every known"; so does one that reads the time in FMI 2.0, which has
  // no variable to name it.
  Options plain = opts;
  plain.derivatives = plain.symbolicDerivatives = false;
  const Generated generated = generate(plain, *loaded, layout, HeaderUse::Driver, asked.modelExchange);
  auto listed = [&](const std::optional<codegen::ir::Dependency>& d) {
    std::string out;
    if (!d || (d->time && version == 2)) return out;
    out = " dependencies=\"";
    for (std::size_t k = 0; k < d->states.size(); ++k)
      out += (k ? " " : "") + std::to_string(firstState - (version == 2 ? 0 : 1) + d->states[k]);
    if (d->time) out += (d->states.empty() ? "" : " ") + std::to_string(variables.size());
    return out + "\"";
  };
  std::vector<std::string> outputDependencies(outputs), derivativeDependencies(static_cast<std::size_t>(n));
  if (const auto& deps = generated.dependencies) {
    for (int k = 0; k < nq; ++k)
      derivativeDependencies[std::size_t(k)] =
          speedOf[std::size_t(k)] >= 0
              ? listed(codegen::ir::Dependency{{nq + speedOf[std::size_t(k)]}, false}) + " dependenciesKind=\"constant\""
              : listed(deps->qdot.at(std::size_t(k)));
    if (deps->udot)
      for (int k = 0; k < nu; ++k) derivativeDependencies[std::size_t(nq + k)] = listed(deps->udot->at(std::size_t(k)));
    // The output columns: the model's outputs, each cable's three, the two energies (sim::ColumnTable).
    for (std::size_t k = 0; k < deps->outputs.size(); ++k) outputDependencies[k] = listed(deps->outputs[k]);
    outputDependencies[outputs - 2] = listed(deps->kinetic_energy);
    outputDependencies[outputs - 1] = listed(deps->potential_energy);
  }
  if (version == 2) {
    for (std::size_t k = 0; k < variables.size(); ++k) {
      const Variable& v = variables[k];
      body << "    <!-- index " << k + 1 << " -->\n";
      body << "    <ScalarVariable name=\"" << xmlEscape(v.name) << "\" valueReference=\"" << k << "\"";
      if (!v.description.empty()) body << " description=\"" << xmlEscape(v.description) << "\"";
      body << " causality=\"" << v.causality << "\" variability=\"" << v.variability << "\" initial=\"" << v.initial
           << "\">\n      <Real";
      if (!v.unit.empty()) body << " unit=\"" << xmlEscape(v.unit) << "\"";
      if (v.hasStart) body << " start=\"" << syntax::exactNumber(v.start) << "\"";
      if (v.derivativeOf > 0) body << " derivative=\"" << v.derivativeOf << "\"";
      body << "/>\n    </ScalarVariable>\n";
    }
    body << "  </ModelVariables>\n  <ModelStructure>\n    <Outputs>\n";
    for (std::size_t k = 0; k < outputs; ++k)
      body << "      <Unknown index=\"" << firstOutput + int(k) << "\"" << outputDependencies[k] << "/>\n";
    body << "    </Outputs>\n    <Derivatives>\n";
    for (int k = 0; k < n; ++k)
      body << "      <Unknown index=\"" << firstDerivative + k << "\"" << derivativeDependencies[std::size_t(k)] << "/>\n";
    body << "    </Derivatives>\n    <InitialUnknowns>\n";
    for (std::size_t k = 0; k < outputs; ++k) body << "      <Unknown index=\"" << firstOutput + int(k) << "\"/>\n";
    if (assembled)
      for (int k = 0; k < n; ++k) body << "      <Unknown index=\"" << firstState + k << "\"/>\n";
    for (int k = 0; k < n; ++k) body << "      <Unknown index=\"" << firstDerivative + k << "\"/>\n";
    body << "    </InitialUnknowns>\n  </ModelStructure>\n";
  } else {
    // FMI 3.0: value references in the same order (index - 1), a
    // derivative names its state by value reference, and the time is the
    // independent variable, after the outputs.
    for (std::size_t k = 0; k < variables.size(); ++k) {
      const Variable& v = variables[k];
      body << "    <Float64 name=\"" << xmlEscape(v.name) << "\" valueReference=\"" << k << "\"";
      if (!v.description.empty()) body << " description=\"" << xmlEscape(v.description) << "\"";
      body << " causality=\"" << v.causality << "\" variability=\"" << v.variability << "\" initial=\"" << v.initial
           << "\"";
      if (!v.unit.empty()) body << " unit=\"" << xmlEscape(v.unit) << "\"";
      if (v.hasStart) body << " start=\"" << syntax::exactNumber(v.start) << "\"";
      if (v.derivativeOf > 0) body << " derivative=\"" << v.derivativeOf - 1 << "\"";
      body << "/>\n";
    }
    body << "    <Float64 name=\"time\" valueReference=\"" << variables.size()
         << "\" causality=\"independent\" variability=\"continuous\" unit=\"s\" description=\"the simulation time\"/>\n";
    // The event indicators (Model Exchange): variables of their own, after the time.
    for (std::size_t k = 0; k < indicators.size(); ++k)
      body << "    <Float64 name=\"" << xmlEscape(indicators[k].name) << "\" valueReference=\"" << variables.size() + 1 + k
           << "\" causality=\"local\" variability=\"continuous\" initial=\"calculated\" unit=\"m\""
           << " description=\"event indicator: " << xmlEscape(indicators[k].description) << "\"/>\n";
    body << "  </ModelVariables>\n  <ModelStructure>\n";
    for (std::size_t k = 0; k < outputs; ++k)
      body << "    <Output valueReference=\"" << firstOutput - 1 + int(k) << "\"" << outputDependencies[k] << "/>\n";
    for (int k = 0; k < n; ++k)
      body << "    <ContinuousStateDerivative valueReference=\"" << firstDerivative - 1 + k << "\""
           << derivativeDependencies[std::size_t(k)] << "/>\n";
    for (std::size_t k = 0; k < outputs; ++k) body << "    <InitialUnknown valueReference=\"" << firstOutput - 1 + int(k) << "\"/>\n";
    if (assembled)
      for (int k = 0; k < n; ++k) body << "    <InitialUnknown valueReference=\"" << firstState - 1 + k << "\"/>\n";
    for (int k = 0; k < n; ++k) body << "    <InitialUnknown valueReference=\"" << firstDerivative - 1 + k << "\"/>\n";
    for (std::size_t k = 0; k < indicators.size(); ++k)
      body << "    <EventIndicator valueReference=\"" << variables.size() + 1 + k << "\"/>\n";
    body << "  </ModelStructure>\n";
  }

  // The GUID: of the variables, the model's code and whether the binary
  // has the directional derivatives, so that an FMU whose binary and
  // description disagree is refused when it is instantiated.
  const std::string code = generated.header + (directional ? "\n// with directional derivatives\n" : "");
  const std::uint64_t h1 = fnv1a(body.str() + code), h2 = fnv1a(code + body.str(), 0x84222325cbf29ce4ull);
  char guid[48];
  std::snprintf(guid, sizeof guid, "{%08llx-%04llx-%04llx-%04llx-%012llx}", (unsigned long long)(h1 >> 32),
                (unsigned long long)((h1 >> 16) & 0xFFFF), (unsigned long long)(h1 & 0xFFFF),
                (unsigned long long)(h2 >> 48), (unsigned long long)(h2 & 0xFFFFFFFFFFFFull));
  const std::string id = layout.className;
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<!-- Written by capstan " << CAPSTAN_VERSION << " (`capstan fmu`) from model " << xmlEscape(id)
      << ". Value references: the runtime parameters' elements, q, u, der(q), der(u), then the outputs"
      << (version == 3 ? " and the time" : "") << ". -->\n";
  if (version == 2) {
    xml << "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"" << xmlEscape(loaded->flat->name) << "\" guid=\""
        << guid << "\" generationTool=\"capstan " << CAPSTAN_VERSION << "\" variableNamingConvention=\"structured\""
        << " numberOfEventIndicators=\"" << indicators.size() << "\">\n";
    const std::string common = " canGetAndSetFMUstate=\"true\" canSerializeFMUstate=\"true\""
                               " canNotUseMemoryManagementFunctions=\"true\"";
    if (asked.modelExchange)
      xml << "  <ModelExchange modelIdentifier=\"" << id << "\" completedIntegratorStepNotNeeded=\"true\"" << common
          << " providesDirectionalDerivative=\"" << (directional ? "true" : "false") << "\"/>\n";
    // Co-Simulation's directional derivatives are its outputs' with respect
    // to its inputs, of which the FMU has none.
    if (asked.coSimulation)
      xml << "  <CoSimulation modelIdentifier=\"" << id << "\" canHandleVariableCommunicationStepSize=\"true\""
          << " maxOutputDerivativeOrder=\"0\"" << common << " providesDirectionalDerivative=\"false\"/>\n";
  } else {
    xml << "<fmiModelDescription fmiVersion=\"3.0\" modelName=\"" << xmlEscape(loaded->flat->name)
        << "\" instantiationToken=\"" << guid << "\" generationTool=\"capstan " << CAPSTAN_VERSION
        << "\" variableNamingConvention=\"structured\">\n";
    const std::string common = " canGetAndSetFMUState=\"true\" canSerializeFMUState=\"true\"";
    if (asked.modelExchange)
      xml << "  <ModelExchange modelIdentifier=\"" << id << "\" needsCompletedIntegratorStep=\"false\"" << common
          << " providesDirectionalDerivatives=\"" << (directional ? "true" : "false") << "\"/>\n";
    if (asked.coSimulation)
      xml << "  <CoSimulation modelIdentifier=\"" << id << "\" canHandleVariableCommunicationStepSize=\"true\""
          << " maxOutputDerivativeOrder=\"0\" hasEventMode=\"true\"" << common
          << " providesDirectionalDerivatives=\"false\"/>\n";
  }
  xml << body.str() << "</fmiModelDescription>\n";

  // The binary's variables: what modelDescription.xml says, for the code.
  std::ostringstream vars;
  vars << "// Written by capstan (`capstan fmu`): the FMU's variables, as its modelDescription.xml lists them\n"
       << "// (capstan/sim/fmu.hpp says how they are numbered), and the model's generated class.\n#pragma once\n\n"
       << "#include <array>\n#include <cstddef>\n\n#include \"" << id << ".hpp\"\n\n"
       << "namespace capstan::fmu_model {\n\nstruct Parameter {\n  const char* name;\n  double start;\n};\n\n"
       << "inline constexpr const char* kGuid = \"" << guid << "\";\n"
       << "inline constexpr std::array<Parameter, " << parameters.size() << "> kParameters = {{\n";
  for (const auto& [name, value] : parameters) vars << "    {\"" << name << "\", " << syntax::exactNumber(value) << "},\n";
  vars << "}};\ninline constexpr std::size_t kOutputs = " << outputs << ";\n"
       << "inline constexpr bool kModelExchange = " << (asked.modelExchange ? "true" : "false") << ";\n"
       << "inline constexpr const char* kNoModelExchange = \"" << noModelExchange << "\";\n"
       << "inline constexpr const char* kIntegrator = \"" << integrator << "\";\n"
       << "inline constexpr bool kDirectionalDerivatives = " << (directional ? "true" : "false") << ";\n"
       << "inline constexpr int kFmiVersion = " << version << ";\n"
       << "inline constexpr std::size_t kEventIndicators = " << indicators.size() << ";\n"
       << "inline constexpr double kTolerance = " << syntax::exactNumber(tolerance) << ";\n"
       << "inline constexpr double kInterval = " << syntax::exactNumber(ex && ex->interval ? *ex->interval : 0.0) << ";\n\n"
       << "}  // namespace capstan::fmu_model\n";

  // Where the archive goes, before the build: a folder that does not exist
  // is said now, not after the compiler's seconds.
  {
    std::error_code ec;
    const fs::path folder = fs::absolute(opts.output, ec).parent_path();
    if (!fs::is_directory(folder, ec)) fail(syntax::DiagKind::CannotWriteFile, opts.output, std::string("No such file or directory"));
  }
  DriverRequest build;
  build.product = DriverRequest::Product::Fmu;
  build.fmiVersion = version;
  build.purpose = "fmu";
  build.derivatives = opts.derivatives;
  build.extraFiles = {{"capstan_fmu_variables.hpp", vars.str()},
                      {"engine.cpp", "// The simulation engine (capstan/sim/program_run.hpp).\n"
                                     "#include <capstan/sim/program_run.hpp>\n"}};
  if (!layout.cables.empty())
    build.extraFiles.emplace_back("cable_solver.cpp", "// The cable path solver (capstan/cable/model.hpp).\n"
                                                      "#include <capstan/cable/model_solve.hpp>\n");
  const fs::path binary = buildDriver(opts, *loaded, layout, build);

  // The archive: the description, the binary, and the sources it was built from.
  std::vector<std::pair<std::string, std::string>> files = {{"modelDescription.xml", xml.str()}};
  const std::string binaryName = (version == 2 ? "binaries/linux64/" : "binaries/x86_64-linux/") + id + ".so";
  files.emplace_back(binaryName, readFile(binary));
  std::vector<std::string> sources;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(binary.parent_path(), ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = it->path().lexically_relative(binary.parent_path()).generic_string();
    const std::string ext = it->path().extension().string();
    if (ext == ".hpp" || ext == ".h" || ext == ".cpp" || ext == ".map") sources.push_back(rel);
  }
  std::sort(sources.begin(), sources.end());
  for (const std::string& rel : sources) files.emplace_back("sources/" + rel, readFile(binary.parent_path() / rel));
  // The headers of the model's external C++ functions, from their
  // IncludeDirectory: the one each Include names, and the files it
  // includes in quotes from the same folder, in turn.
  std::set<std::string> external;
  for (const sema::FlatFunction& f : loaded->flat->functions) {
    const fs::path header = externalHeader(f.include, f.includeDirectory);
    if (header.empty()) continue;
    std::vector<fs::path> pending = {header};
    while (!pending.empty()) {
      const fs::path file = pending.back();
      pending.pop_back();
      const fs::path rel = file.lexically_relative(f.includeDirectory);
      if (rel.empty() || *rel.begin() == ".." || !external.insert(rel.generic_string()).second) continue;
      const std::string text = readFile(file);
      files.emplace_back("sources/" + rel.generic_string(), text);
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);) {
        const std::size_t at = line.find("#include \"");
        const std::size_t end = at == std::string::npos ? at : line.find('"', at + 10);
        if (end == std::string::npos) continue;
        const fs::path next = file.parent_path() / line.substr(at + 10, end - at - 10);
        if (fs::is_regular_file(next, ec)) pending.push_back(next.lexically_normal());
      }
    }
  }
  if (version == 3) {
    // FMI 3.0's description of how to build the binary from the sources.
    std::ostringstream build3;
    build3 << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fmiBuildDescription fmiVersion=\"3.0\">\n"
           << "  <BuildConfiguration modelIdentifier=\"" << id << "\">\n"
           << "    <SourceFileSet language=\"C++20\">\n"
           << "      <SourceFile name=\"capstan_fmu.cpp\"/>\n      <SourceFile name=\"engine.cpp\"/>\n"
           << (layout.cables.empty() ? "" : "      <SourceFile name=\"cable_solver.cpp\"/>\n")
           << "      <PreprocessorDefinition name=\"CAPSTAN_MODEL_CLASS\" value=\"" << id << "\"/>\n"
           << "      <PreprocessorDefinition name=\"CAPSTAN_FMI_VERSION\" value=\"3\"/>\n"
           << "      <PreprocessorDefinition name=\"CAPSTAN_CABLE_COMPILED_APART\"/>\n"
           << "      <IncludeDirectory name=\".\"/>\n    </SourceFileSet>\n  </BuildConfiguration>\n</fmiBuildDescription>\n";
    files.emplace_back("sources/buildDescription.xml", build3.str());
  }
  std::ostringstream readme;
  readme << "The sources of the FMU of model " << id << ", written by capstan " << CAPSTAN_VERSION
         << ".\nTo build its binary for another platform (C++20, Eigen 3.4 on the include path):\n\n"
         << "  c++ -std=c++20 -O1 -fPIC -shared -DCAPSTAN_MODEL_CLASS=" << id
         << " -DCAPSTAN_FMI_VERSION=" << version << " -DCAPSTAN_CABLE_COMPILED_APART -I . capstan_fmu.cpp engine.cpp"
         << (layout.cables.empty() ? "" : " cable_solver.cpp") << " -o " << id << ".so\n\n"
         << "With GNU ld, add -Wl,--version-script=exports.map to export the FMI functions only (as the\n"
         << "FMU's own binary does), so that several FMUs load into one process side by side.\n";
  files.emplace_back("sources/README.txt", readme.str());
  writeOrFail(opts.output, zipArchive(files, {binaryName}));
  std::cerr << "wrote " << opts.output << " (FMI " << version << ".0: " << (asked.modelExchange ? "Model Exchange" : "")
            << (asked.modelExchange && asked.coSimulation ? ", " : "") << (asked.coSimulation ? "Co-Simulation" : "")
            << "; " << parameters.size() << " parameters, " << n << " states, " << outputs << " outputs)\n";
  return 0;
}

}  // namespace capstan::cli
