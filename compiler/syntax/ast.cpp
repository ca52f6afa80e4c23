#include "syntax/ast.hpp"

namespace capstan::syntax {

std::string Name::dotted() const {
  std::string out;
  if (global) out += '.';
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '.';
    out += parts[i].name;
  }
  return out;
}

const char* opSpelling(Op op) {
  switch (op) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::Pow: return "^";
    case Op::ElemAdd: return ".+";
    case Op::ElemSub: return ".-";
    case Op::ElemMul: return ".*";
    case Op::ElemDiv: return "./";
    case Op::ElemPow: return ".^";
    case Op::Eq: return "==";
    case Op::Ne: return "<>";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
    case Op::And: return "and";
    case Op::Or: return "or";
    case Op::Not: return "not";
    case Op::Neg: return "-";
    case Op::Plus: return "+";
  }
  return "?";
}

const char* classKindName(ClassKind k) {
  switch (k) {
    case ClassKind::Model: return "model";
    case ClassKind::Package: return "package";
    case ClassKind::Function: return "function";
    case ClassKind::Record: return "record";
    case ClassKind::Connector: return "connector";
    case ClassKind::Block: return "block";
    case ClassKind::Type: return "type";
    case ClassKind::Class: return "class";
  }
  return "class";
}

}  // namespace capstan::syntax
