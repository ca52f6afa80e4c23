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

namespace {

// The index's answer if it is current and agrees with the list, else a scan.
template <class T>
int findByPath(const std::vector<T>& list, const std::unordered_map<std::string, int>& index, bool current,
               const std::string& path) {
  if (current) {
    auto it = index.find(path);
    if (it == index.end()) return -1;
    const auto i = static_cast<std::size_t>(it->second);
    if (i < list.size() && list[i].path == path) return it->second;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i].path == path) return static_cast<int>(i);
  }
  return -1;
}

template <class T>
void indexByPath(const std::vector<T>& list, std::unordered_map<std::string, int>& index) {
  index.clear();
  index.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) index.emplace(list[i].path, static_cast<int>(i));
}

}  // namespace

void FlatModel::buildIndex() {
  indexByPath(variables, variableIndex_);
  indexByPath(components, componentIndex_);
  indexedVariables_ = variables.size();
  indexedComponents_ = components.size();
  indexed_ = true;
}

int FlatModel::findVariable(const std::string& path) const {
  return findByPath(variables, variableIndex_, indexed_ && indexedVariables_ == variables.size(), path);
}

int FlatModel::findComponent(const std::string& path) const {
  return findByPath(components, componentIndex_, indexed_ && indexedComponents_ == components.size(), path);
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
