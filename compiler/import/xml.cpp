// The XML under both robot formats (xml.hpp).
#include "import/xml.hpp"

namespace capstan::import {

namespace {

// tinyxml2's error in words: what it found, then its detail (the text
// after "Line number=N: " in its ErrorStr, such as `XMLElement name=joint`).
std::string xmlError(const tinyxml2::XMLDocument& doc) {
  using tinyxml2::XMLError;
  std::string what;
  switch (doc.ErrorID()) {
    case XMLError::XML_ERROR_MISMATCHED_ELEMENT: what = "an end tag is missing or does not match its element"; break;
    case XMLError::XML_ERROR_PARSING_ELEMENT: what = "an element cannot be read"; break;
    case XMLError::XML_ERROR_PARSING_ATTRIBUTE: what = "an attribute cannot be read"; break;
    case XMLError::XML_ERROR_PARSING_TEXT: what = "text cannot be read"; break;
    case XMLError::XML_ERROR_PARSING_COMMENT: what = "a comment is not closed"; break;
    case XMLError::XML_ERROR_EMPTY_DOCUMENT: what = "the file holds no element"; break;
    default: what = doc.ErrorName(); break;
  }
  const std::string full = doc.ErrorStr() ? doc.ErrorStr() : "";
  const std::size_t colon = full.find(": ", full.find("Line number="));
  if (full.find("Line number=") != std::string::npos && colon != std::string::npos && colon + 2 < full.size())
    what += " (" + full.substr(colon + 2) + ")";
  return what;
}

}  // namespace

bool parseXml(tinyxml2::XMLDocument& doc, const SourceText& source, syntax::DiagnosticEngine& diags) {
  doc.Parse(source.text().c_str(), source.text().size());
  if (!doc.Error()) return true;
  diags.report(syntax::DiagKind::ImportMalformedXml, source.at(doc.ErrorLineNum()), xmlError(doc));
  return false;
}

Where whereOf(const tinyxml2::XMLElement* el) {
  if (!el) return {};
  return {el->GetLineNum(), el->Name()};
}

std::string attribute(const tinyxml2::XMLElement* el, const char* name) {
  return el && el->Attribute(name) ? el->Attribute(name) : "";
}

}  // namespace capstan::import
