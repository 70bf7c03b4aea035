#include "amp/op_policy.h"

#include <cstddef>
#include <stdexcept>

namespace gw::amp {
namespace {

constexpr OpList kLists[] = {OpList::kAllow, OpList::kDeny, OpList::kInfer};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string trimmed(const std::string& s) {
  std::size_t begin = 0, end = s.size();
  while (begin < end && is_blank(s[begin])) ++begin;
  while (end > begin && is_blank(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

const char* to_string(Precision p) {
  switch (p) {
    case Precision::kFloat32:
      return "fp32";
    case Precision::kFloat16:
      return "fp16";
  }
  return "?";
}

const char* to_string(OpList l) {
  switch (l) {
    case OpList::kAllow:
      return "allow";
    case OpList::kDeny:
      return "deny";
    case OpList::kInfer:
      return "infer";
  }
  return "?";
}

std::vector<std::string> parse_op_list(const std::string& text, const std::string& source) {
  std::vector<std::string> items;
  if (trimmed(text).empty()) return items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    std::string item = trimmed(text.substr(begin, end - begin));
    if (item.empty()) {
      throw std::invalid_argument(source + ": item " + std::to_string(items.size() + 1) + " of '" +
                                  text + "' is empty; expected op names separated by commas");
    }
    items.push_back(std::move(item));
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

OpPolicy OpPolicy::defaults() {
  return OpPolicy({{"linear", OpList::kAllow},
                   {"conv2d", OpList::kAllow},
                   {"relu", OpList::kInfer},
                   {"max_pool2d", OpList::kInfer},
                   {"flatten", OpList::kInfer},
                   {"softmax_cross_entropy", OpList::kDeny}});
}

OpPolicy::OpPolicy(std::vector<std::pair<std::string, OpList>> ops) {
  if (ops.empty()) {
    throw std::invalid_argument("OpPolicy: the op list is empty; give at least one op");
  }
  for (auto& [name, list] : ops) {
    if (name.empty()) {
      throw std::invalid_argument("OpPolicy: op " + std::to_string(names_.size() + 1) +
                                  " has an empty name");
    }
    if (name.find_first_of(", \t") != std::string::npos) {
      throw std::invalid_argument("OpPolicy: op name '" + name +
                                  "' contains a comma, space or tab; names are single words");
    }
    if (find(name) != names_.size()) {
      throw std::invalid_argument("OpPolicy: op '" + name + "' is given twice");
    }
    names_.push_back(std::move(name));
    lists_.push_back(list);
  }
}

std::size_t OpPolicy::find(const std::string& op) const {
  std::size_t i = 0;
  while (i < names_.size() && names_[i] != op) ++i;
  return i;
}

std::string OpPolicy::known_ops() const { return joined(names_); }

void OpPolicy::apply_overrides(const std::string& allow_text, const std::string& deny_text,
                               const std::string& allow_source, const std::string& deny_source) {
  // Everything is checked before anything changes.
  const std::vector<std::string> allow = parse_op_list(allow_text, allow_source);
  const std::vector<std::string> deny = parse_op_list(deny_text, deny_source);
  for (const auto* named : {&allow, &deny}) {
    const std::string& source = named == &allow ? allow_source : deny_source;
    for (const std::string& op : *named) {
      if (find(op) == names_.size()) {
        throw std::invalid_argument(source + ": unknown op '" + op +
                                    "'; known ops: " + known_ops());
      }
    }
  }
  for (const std::string& op : allow) {
    for (const std::string& other : deny) {
      if (op == other) {
        throw std::invalid_argument("op '" + op + "' is named in both " + allow_source + " and " +
                                    deny_source + "; an op can be in one list only");
      }
    }
  }
  for (const std::string& op : allow) lists_[find(op)] = OpList::kAllow;
  for (const std::string& op : deny) lists_[find(op)] = OpList::kDeny;
}

OpList OpPolicy::list_of(const std::string& op) const {
  const std::size_t i = find(op);
  if (i == names_.size()) {
    throw std::invalid_argument("OpPolicy: unknown op '" + op + "'; known ops: " + known_ops());
  }
  return lists_[i];
}

Precision OpPolicy::decide(const std::string& op, bool any_input_fp32) const {
  switch (list_of(op)) {
    case OpList::kAllow:
      return Precision::kFloat16;
    case OpList::kDeny:
      return Precision::kFloat32;
    case OpList::kInfer:
      break;
  }
  return any_input_fp32 ? Precision::kFloat32 : Precision::kFloat16;
}

std::vector<std::string> OpPolicy::ops_in(OpList list) const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (lists_[i] == list) out.push_back(names_[i]);
  }
  return out;
}

std::string OpPolicy::describe() const {
  std::string out;
  for (OpList l : kLists) {
    const std::vector<std::string> in = ops_in(l);
    out += (out.empty() ? "" : "; ") + std::string(to_string(l)) + ": " +
           (in.empty() ? std::string("-") : joined(in));
  }
  return out;
}

}  // namespace gw::amp
