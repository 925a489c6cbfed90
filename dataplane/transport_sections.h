// Each transport's part of DataplaneConfig, held by its type, so that the
// dataplane core names no transport's config: a module reads its own
// (`config.transports.get<diad::DiadConfig>()`), the control plane's
// ConfigSection fills it. Copying copies every section (value semantics).
// Control path only: a lookup hashes a type.
#ifndef SPINNIC_DATAPLANE_TRANSPORT_SECTIONS_H_
#define SPINNIC_DATAPLANE_TRANSPORT_SECTIONS_H_

#include <any>
#include <typeindex>
#include <typeinfo>

#include "absl/container/flat_hash_map.h"

namespace spinnic {

class TransportSections {
 public:
  // The section of type T; a default one is made on first use.
  template <typename T>
  T& get() {
    std::any& section = sections_[std::type_index(typeid(T))];
    if (!section.has_value()) section.emplace<T>();
    return *std::any_cast<T>(&section);
  }

  // The section of type T, or a default one when it was never set.
  template <typename T>
  const T& get() const {
    auto it = sections_.find(std::type_index(typeid(T)));
    if (it == sections_.end()) {
      static const T kDefault{};
      return kDefault;
    }
    return *std::any_cast<T>(&it->second);
  }

 private:
  absl::flat_hash_map<std::type_index, std::any> sections_;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_TRANSPORT_SECTIONS_H_
