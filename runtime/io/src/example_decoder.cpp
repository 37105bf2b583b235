#include "example_decoder.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "proto_wire.h"
#include "sluice/error.h"

namespace sluice::io::detail {
namespace {

// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing
// past U+10FFFF): what protobuf requires of a proto3 string.
bool valid_utf8(std::span<const std::byte> s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<std::uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    std::uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) len = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) len = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) len = 4, cp = c & 0x07, min = 0x10000;
    else return false;
    if (s.size() - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<std::uint8_t>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

std::string_view view_of(std::span<const std::byte> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

// Sorts `entries` by name and keeps the last entry of each name (a map's
// last-wins rule: stable sort keeps the wire order among equal names).
template <typename Entry>
void keep_last_per_name(std::vector<Entry>& entries) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.name < b.name; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i + 1 < entries.size() && entries[i + 1].name == entries[i].name) continue;
    entries[out++] = entries[i];
  }
  entries.resize(out);
}

template <typename Entry>
const Entry* find_name(const std::vector<Entry>& entries, std::string_view name) {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const Entry& e, std::string_view n) { return e.name < n; });
  return it != entries.end() && it->name == name ? &*it : nullptr;
}

// Calls on_field(reader, field) for each field numbered 1 to `last` of the
// message `r` reads, in wire order, and skips the others (unknown fields).
template <typename OnField>
void each_field(WireReader r, std::uint32_t last, OnField&& on_field) {
  while (!r.done()) {
    const WireField f = r.next();
    if (f.number <= last) on_field(r, f);
    else r.skip(f);
  }
}

void expect(const WireReader& r, const WireField& f, std::string_view part, WireType type) {
  if (f.type != type) r.wrong_type(f, part, type);
}

}  // namespace

// One decode: the message's structure, one function per message type, each
// appending its values to the decoder's arrays.
class ExampleDecoder::Walk {
 public:
  explicit Walk(ExampleDecoder& d) : d_(d) {}

  void features(WireReader r, std::vector<DecodedEntry>& out) {
    each_field(r, 1, [&](WireReader& r, const WireField& f) {
      expect(r, f, "Features.feature", WireType::len);
      DecodedEntry e;
      e.name = map_entry(r.nested(r.len("a Features map entry")), "a Feature",
                         [&](WireReader value) { feature(value, e.feature); });  // a second value merges
      out.push_back(e);
    });
  }

  void feature_lists(WireReader r) {
    each_field(r, 1, [&](WireReader& r, const WireField& f) {
      expect(r, f, "FeatureLists.feature_list", WireType::len);
      DecodedList list;
      list.first = d_.steps_.size();
      list.name = map_entry(r.nested(r.len("a FeatureLists map entry")), "a FeatureList",
                            [&](WireReader value) { steps(value); });  // a second value appends
      list.count = d_.steps_.size() - list.first;
      d_.lists_.push_back(list);
    });
  }

 private:
  // A map entry: returns its key (field 1, "" when absent, the last when
  // repeated) and hands each value (field 2) to on_value.
  template <typename OnValue>
  std::string_view map_entry(WireReader r, std::string_view value_part, OnValue&& on_value) {
    std::string_view name;
    each_field(r, 2, [&](WireReader& entry, const WireField& f) {
      expect(entry, f, f.number == 1 ? "a map key" : value_part, WireType::len);
      if (f.number == 2) {
        on_value(entry.nested(entry.len(value_part)));
        return;
      }
      const std::size_t at = entry.offset();
      const auto key = entry.len("a map key");
      if (!valid_utf8(key)) entry.fail("a map key is not UTF-8 (a proto3 string)", at);
      name = view_of(key);
    });
    return name;
  }

  void steps(WireReader r) {
    each_field(r, 1, [&](WireReader& r, const WireField& f) {
      expect(r, f, "FeatureList.feature", WireType::len);
      DecodedFeature step;
      feature(r.nested(r.len("a FeatureList's Feature")), step);
      d_.steps_.push_back(step);
    });
  }

  // Feature's oneof: a list of the kind already there appends (protobuf
  // merges it), a list of another kind starts over.
  void feature(WireReader r, DecodedFeature& out) {
    each_field(r, 3, [&](WireReader& r, const WireField& f) {
      static constexpr FeatureKind kinds[] = {FeatureKind::bytes_list, FeatureKind::float_list,
                                              FeatureKind::int64_list};
      const FeatureKind kind = kinds[f.number - 1];
      expect(r, f, feature_kind_name(kind), WireType::len);
      WireReader list = r.nested(r.len(feature_kind_name(kind)));
      if (out.kind != kind) out = {kind, size_of(kind), 0};
      if (kind == FeatureKind::bytes_list) bytes_list(list);
      else if (kind == FeatureKind::float_list) float_list(list);
      else int64_list(list);
      out.count = size_of(kind) - out.first;
    });
  }

  std::size_t size_of(FeatureKind kind) const {
    return kind == FeatureKind::bytes_list   ? d_.bytes_.size()
           : kind == FeatureKind::float_list ? d_.floats_.size()
                                             : d_.int64s_.size();
  }

  void bytes_list(WireReader r) {
    each_field(r, 1, [&](WireReader& r, const WireField& f) {
      expect(r, f, "BytesList.value", WireType::len);
      d_.bytes_.push_back(view_of(r.len("a bytes_list value")));
    });
  }

  void float_list(WireReader r) {
    each_field(r, 1, [&](WireReader& r, const WireField& f) {
      if (f.type == WireType::fixed32) {  // unpacked
        const std::uint32_t bits = r.fixed32("a float_list value");
        float v;
        std::memcpy(&v, &bits, 4);
        d_.floats_.push_back(v);
        return;
      }
      expect(r, f, "FloatList.value", WireType::len);
      const std::size_t at = r.offset();
      const auto packed = r.len("a packed float_list");
      if (packed.size() % 4 != 0)
        r.fail("a packed float_list of " + std::to_string(packed.size()) + " bytes, not a multiple of 4", at);
      if (packed.empty()) return;  // memcpy takes no null pointer, even for 0 bytes
      const std::size_t old = d_.floats_.size();
      d_.floats_.resize(old + packed.size() / 4);
      std::memcpy(d_.floats_.data() + old, packed.data(), packed.size());  // little-endian hosts only
    });
  }

  void int64_list(WireReader r) {
    each_field(r, 1, [&](WireReader& r, const WireField& f) {
      if (f.type == WireType::varint) {  // unpacked
        d_.int64s_.push_back(static_cast<std::int64_t>(r.varint("an int64_list value")));
        return;
      }
      expect(r, f, "Int64List.value", WireType::len);
      WireReader packed = r.nested(r.len("a packed int64_list"));
      while (!packed.done()) d_.int64s_.push_back(static_cast<std::int64_t>(packed.varint("a packed int64_list")));
    });
  }

  ExampleDecoder& d_;
};

void ExampleDecoder::decode(std::span<const std::byte> bytes, bool sequence) {
  const char* type = sequence ? "tf.train.SequenceExample" : "tf.train.Example";
  what_ = "malformed " + std::string(type) + " (" + std::to_string(bytes.size()) + " bytes)";
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error(what_ + ": over 2 GiB, more than protobuf reads");
  record_.assign(bytes.begin(), bytes.end());
  floats_.clear();
  int64s_.clear();
  bytes_.clear();
  steps_.clear();
  features_.clear();
  lists_.clear();
  saw_field_2_ = false;
  Walk walk(*this);
  WireReader r(record_, what_);
  while (!r.done()) {
    const WireField f = r.next();
    if (f.number == 1) {  // Example.features, SequenceExample.context
      if (f.type != WireType::len) r.wrong_type(f, sequence ? "context" : "features", WireType::len);
      walk.features(r.nested(r.len("Features")), features_);
    } else if (f.number == 2 && sequence) {
      if (f.type != WireType::len) r.wrong_type(f, "feature_lists", WireType::len);
      walk.feature_lists(r.nested(r.len("FeatureLists")));
    } else {
      saw_field_2_ = saw_field_2_ || (f.number == 2 && f.type == WireType::len);
      r.skip(f);
    }
  }
  keep_last_per_name(features_);
  keep_last_per_name(lists_);
}

const DecodedFeature* ExampleDecoder::find(std::string_view name) const {
  const DecodedEntry* e = find_name(features_, name);
  return e ? &e->feature : nullptr;
}

const DecodedList* ExampleDecoder::find_list(std::string_view name) const { return find_name(lists_, name); }

}  // namespace sluice::io::detail
