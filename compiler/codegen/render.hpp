// Rendering the IR with the Jinja2 templates (compiler/templates/), by a
// Python that can import jinja2 (found at configure time, overridable with
// CAPSTAN_PYTHON), and running helper processes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace capstan::codegen {

// The Python interpreter used for Jinja2: $CAPSTAN_PYTHON, else the one
// found when capstan was configured.
std::string pythonInterpreter();

// The template folder: $CAPSTAN_TEMPLATES, else beside the program
// (../share/capstan/templates), else the source tree's compiler/templates.
std::filesystem::path defaultTemplateDir();

// Renders `model.hpp.j2` from `templateDir` with `ir`. Returns false and sets
// `error` (the renderer's message) on failure.
bool renderModel(const nlohmann::json& ir, const std::filesystem::path& templateDir, std::string& out,
                 std::string& error);

// Runs argv[0] with arguments, waits, and returns its exit status (-1 if it
// could not be started, 128+N if killed by signal N). With `captured`, its
// stdout and stderr go there; otherwise they are inherited.
int runProcess(const std::vector<std::string>& argv, std::string* captured = nullptr);

}  // namespace capstan::codegen
