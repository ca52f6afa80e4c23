#include "sema/flat.hpp"

#include <stdexcept>

namespace capstan::sema {

const char* valueTypeName(ValueType t) {
  switch (t) {
    case ValueType::Real: return "Real";
    case ValueType::Integer: return "Integer";
    case ValueType::Boolean: return "Boolean";
    case ValueType::String: return "String";
    case ValueType::Reference: return "Reference";
  }
  return "Real";
}

std::size_t Value::size() const {
  std::size_t n = 1;
  for (int d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

int FlatModel::findVariable(const std::string& path) const {
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (variables[i].path == path) return static_cast<int>(i);
  }
  return -1;
}

int FlatModel::findComponent(const std::string& path) const {
  for (std::size_t i = 0; i < components.size(); ++i) {
    if (components[i].path == path) return static_cast<int>(i);
  }
  return -1;
}

const Value& FlatModel::parameter(const FlatComponent& c, const std::string& name) const {
  auto it = c.parameters.find(name);
  if (it == c.parameters.end()) {
    throw std::out_of_range("component `" + c.path + "` has no parameter `" + name + "`");
  }
  const FlatVariable& v = variables.at(static_cast<std::size_t>(it->second));
  if (!v.value) throw std::out_of_range("parameter `" + v.path + "` has no value");
  return *v.value;
}

}  // namespace capstan::sema
