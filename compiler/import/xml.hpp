// The XML under both robot formats, read with tinyxml2 first (urdfdom and
// libsdformat read with it too, but give no line for most elements): a
// malformed file is located at tinyxml2's line, and each element's line is
// its Where.
#pragma once

#include <tinyxml2.h>

#include "import/robot.hpp"

namespace capstan::import {

// Parses the source's text into `doc`; reports ImportMalformedXml and
// returns false when it is not well-formed.
bool parseXml(tinyxml2::XMLDocument& doc, const SourceText& source, syntax::DiagnosticEngine& diags);

// The element's line and tag (an empty Where for none).
Where whereOf(const tinyxml2::XMLElement* el);

// The element's attribute, "" when missing.
std::string attribute(const tinyxml2::XMLElement* el, const char* name);

}  // namespace capstan::import
