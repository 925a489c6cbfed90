#include "control/config_diff.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "control/config_check.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace spinnic {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;
using google::protobuf::util::MessageDifferencer;

// Longest rendering of a whole message in a difference line; the path
// already says where it is.
constexpr size_t kMaxValueText = 120;

std::string ValueText(const Message& message, const FieldDescriptor* field,
                      int index) {
  std::string text;
  TextFormat::PrintFieldValueToString(message, field, index, &text);
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    // Short form, one line: {name: "x" vdev: "..."}.
    const Message& sub =
        index < 0 ? message.GetReflection()->GetMessage(message, field)
                  : message.GetReflection()->GetRepeatedMessage(message, field,
                                                                index);
    std::string inner = sub.ShortDebugString();
    text = absl::StrCat("{", inner, "}");
  }
  if (text.size() > kMaxValueText) {
    text.resize(kMaxValueText - 3);
    text += "...";
  }
  return text;
}

std::string ListText(const Message& message, const FieldDescriptor* field) {
  const int n = message.GetReflection()->FieldSize(message, field);
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) values.push_back(ValueText(message, field, i));
  return absl::StrCat("[", absl::StrJoin(values, ", "), "]");
}

bool ElementEquals(const Message& a, const Message& b,
                   const FieldDescriptor* field, int index) {
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    return MessageDifferencer::Equals(ra->GetRepeatedMessage(a, field, index),
                                      rb->GetRepeatedMessage(b, field, index));
  }
  return ValueText(a, field, index) == ValueText(b, field, index);
}

// Appends "<path>: <a> -> <b>" for every field that differs, depth first.
void Walk(const Message& a, const Message& b, const std::string& prefix,
          std::vector<std::string>* out) {
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  const google::protobuf::Descriptor* type = a.GetDescriptor();
  for (int f = 0; f < type->field_count(); ++f) {
    const FieldDescriptor* field = type->field(f);
    const std::string path = prefix.empty()
                                 ? field->name()
                                 : absl::StrCat(prefix, ".", field->name());
    if (field->is_repeated()) {
      const int na = ra->FieldSize(a, field);
      const int nb = rb->FieldSize(b, field);
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE ||
          field->is_map()) {
        bool same = na == nb;
        for (int i = 0; same && i < na; ++i) {
          same = ElementEquals(a, b, field, i);
        }
        if (!same) {
          out->push_back(absl::StrCat(path, ": ", ListText(a, field), " -> ",
                                      ListText(b, field)));
        }
        continue;
      }
      for (int i = 0; i < std::max(na, nb); ++i) {
        const std::string at = absl::StrCat(path, "[", i, "]");
        if (i >= na) {
          out->push_back(
              absl::StrCat(at, ": (none) -> ", ValueText(b, field, i)));
        } else if (i >= nb) {
          out->push_back(
              absl::StrCat(at, ": ", ValueText(a, field, i), " -> (none)"));
        } else {
          Walk(ra->GetRepeatedMessage(a, field, i),
               rb->GetRepeatedMessage(b, field, i), at, out);
        }
      }
      continue;
    }
    const bool has_a = !field->has_presence() || ra->HasField(a, field);
    const bool has_b = !field->has_presence() || rb->HasField(b, field);
    if (has_a != has_b) {
      out->push_back(
          absl::StrCat(path, ": ", has_a ? ValueText(a, field, -1) : "(unset)",
                       " -> ", has_b ? ValueText(b, field, -1) : "(unset)"));
      continue;
    }
    if (!has_a) continue;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Walk(ra->GetMessage(a, field), rb->GetMessage(b, field), path, out);
    } else if (ValueText(a, field, -1) != ValueText(b, field, -1)) {
      out->push_back(absl::StrCat(path, ": ", ValueText(a, field, -1), " -> ",
                                  ValueText(b, field, -1)));
    }
  }
}

// `config` without its live parts.
v1::Config RestartOnlyPart(const v1::Config& config) {
  v1::Config part = config;
  part.clear_handlers();
  if (part.has_diad()) part.mutable_diad()->clear_peers();
  return part;
}

// The names of the fields of `a` and `b` (same type) that differ.
std::vector<std::string> ChangedFields(const Message& a, const Message& b) {
  std::vector<std::string> fields;
  const google::protobuf::Descriptor* type = a.GetDescriptor();
  for (int f = 0; f < type->field_count(); ++f) {
    const FieldDescriptor* field = type->field(f);
    std::unique_ptr<Message> only_a(a.New());
    std::unique_ptr<Message> only_b(b.New());
    only_a->CopyFrom(a);
    only_b->CopyFrom(b);
    for (int g = 0; g < type->field_count(); ++g) {
      if (g == f) continue;
      only_a->GetReflection()->ClearField(only_a.get(), type->field(g));
      only_b->GetReflection()->ClearField(only_b.get(), type->field(g));
    }
    if (!MessageDifferencer::Equals(*only_a, *only_b)) {
      fields.push_back(field->name());
    }
  }
  return fields;
}

// A peer as the dataplane compares it: addresses as bytes (so "fd00::0b"
// and "fd00::b" are one node), names of MACs in any case.
struct PeerKey {
  std::array<uint8_t, 16> node{};
  std::array<uint8_t, 6> mac{};
  std::string node_text;  // when it does not parse
  std::string mac_text;
};

PeerKey KeyOf(const v1::DiadPeer& peer) {
  PeerKey key;
  if (!config_internal::ParseNode(peer.node(), &key.node)) {
    key.node_text = peer.node();
  }
  if (!config_internal::ParseMac(peer.mac(), &key.mac)) {
    key.mac_text = peer.mac();
  }
  return key;
}

std::vector<std::string> ChangedPeerFields(const v1::DiadPeer& a,
                                           const v1::DiadPeer& b) {
  const PeerKey ka = KeyOf(a);
  const PeerKey kb = KeyOf(b);
  std::vector<std::string> fields;
  if (ka.node != kb.node || ka.node_text != kb.node_text) {
    fields.push_back("node");
  }
  if (ka.mac != kb.mac || ka.mac_text != kb.mac_text) fields.push_back("mac");
  if (a.recovery() != b.recovery()) fields.push_back("recovery");
  return fields;
}

v1::ConfigChange Change(v1::ConfigChange::Action action,
                        absl::string_view object, absl::string_view name,
                        std::vector<std::string> fields,
                        absl::string_view detail) {
  v1::ConfigChange change;
  change.set_action(action);
  change.set_object(std::string(object));
  change.set_name(std::string(name));
  for (std::string& field : fields) change.add_fields(std::move(field));
  switch (action) {
    case v1::ConfigChange::CONFIG_CHANGE_ADD:
      change.set_line(absl::StrCat("+ ", object, " ", name, " (", detail, ")"));
      break;
    case v1::ConfigChange::CONFIG_CHANGE_MODIFY:
      change.set_line(absl::StrCat("~ ", object, " ", name, ": ",
                                   absl::StrJoin(change.fields(), ", "),
                                   " changed"));
      break;
    default:
      change.set_line(absl::StrCat("- ", object, " ", name));
      break;
  }
  return change;
}

template <typename T>
std::map<std::string, const T*> ByName(
    const google::protobuf::RepeatedPtrField<T>& list) {
  std::map<std::string, const T*> by_name;
  for (const T& item : list) by_name.emplace(item.name(), &item);
  return by_name;
}

}  // namespace

std::vector<std::string> RestartOnlyDifferences(const v1::Config& running,
                                                const v1::Config& wanted) {
  v1::Config a = RestartOnlyPart(running);
  v1::Config b = RestartOnlyPart(wanted);
  // DiAD is on by addresses.diad_node, not by its section: a section that
  // held only peers is as good as none, and one side's fields compare with
  // the other's defaults.
  if (a.has_diad() || b.has_diad()) {
    a.mutable_diad();
    b.mutable_diad();
  }
  std::vector<std::string> lines;
  Walk(a, b, "", &lines);
  return lines;
}

std::vector<v1::ConfigChange> LiveChanges(const v1::Config& running,
                                          const v1::Config& wanted) {
  using Action = v1::ConfigChange;
  const auto running_handlers = ByName(running.handlers());
  const auto wanted_handlers = ByName(wanted.handlers());
  const auto running_peers = ByName(running.diad().peers());
  const auto wanted_peers = ByName(wanted.diad().peers());
  std::vector<v1::ConfigChange> changes;

  for (const v1::HandlerInstall& handler : running.handlers()) {
    if (!wanted_handlers.contains(handler.name())) {
      changes.push_back(Change(Action::CONFIG_CHANGE_REMOVE, "handler",
                               handler.name(), {}, ""));
    }
  }
  for (const v1::DiadPeer& peer : wanted.diad().peers()) {
    auto it = running_peers.find(peer.name());
    if (it == running_peers.end()) {
      changes.push_back(
          Change(Action::CONFIG_CHANGE_ADD, "peer", peer.name(), {},
                 absl::StrCat("node ", peer.node(), ", mac ", peer.mac())));
    } else if (std::vector<std::string> fields =
                   ChangedPeerFields(*it->second, peer);
               !fields.empty()) {
      changes.push_back(Change(Action::CONFIG_CHANGE_MODIFY, "peer",
                               peer.name(), std::move(fields), ""));
    }
  }
  for (const v1::HandlerInstall& handler : wanted.handlers()) {
    auto it = running_handlers.find(handler.name());
    if (it == running_handlers.end()) {
      changes.push_back(Change(Action::CONFIG_CHANGE_ADD, "handler",
                               handler.name(), {},
                               absl::StrCat("kind ", handler.kind())));
    } else if (std::vector<std::string> fields =
                   ChangedFields(*it->second, handler);
               !fields.empty()) {
      changes.push_back(Change(Action::CONFIG_CHANGE_MODIFY, "handler",
                               handler.name(), std::move(fields), ""));
    }
  }
  for (const v1::DiadPeer& peer : running.diad().peers()) {
    if (!wanted_peers.contains(peer.name())) {
      changes.push_back(
          Change(Action::CONFIG_CHANGE_REMOVE, "peer", peer.name(), {}, ""));
    }
  }
  return changes;
}

absl::StatusOr<std::vector<v1::ConfigChange>> PlanConfigChanges(
    const v1::Config& running, const v1::Config& wanted) {
  std::vector<std::string> restart = RestartOnlyDifferences(running, wanted);
  if (!restart.empty()) {
    for (std::string& line : restart) {
      absl::StrAppend(&line, " needs a restart of spinnicd");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "nothing applied: ", absl::StrJoin(restart, "; "),
        "; keep the running values in the file, or restart spinnicd with it "
        "(spinctl config show prints them)"));
  }
  return LiveChanges(running, wanted);
}

}  // namespace spinnic
