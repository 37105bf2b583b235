#include "unigram_encoder.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstdio>
#include <cstring>
#include <span>

#include "proto_wire.h"
#include "sluice/error.h"

namespace sluice::text::detail {

namespace {

using io::detail::WireField;
using io::detail::WireReader;
using io::detail::WireType;

// sentencepiece_model.proto's field numbers and enum values.
constexpr std::uint32_t kPieces = 1, kTrainerSpec = 2, kNormalizerSpec = 3;
constexpr std::uint32_t kPiece = 1, kScore = 2, kType = 3;
constexpr std::uint32_t kModelType = 3, kWhitespaceAsSuffix = 24, kByteFallback = 35;
constexpr std::uint32_t kCharsmap = 2, kAddDummyPrefix = 3, kRemoveExtraWhitespaces = 4, kEscapeWhitespaces = 5;
constexpr std::uint64_t kUnigram = 1;
constexpr std::uint64_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;
constexpr float kUnkPenalty = 10.0;  // unigram_model.cc

constexpr std::string_view kSpaceSymbol = "\xe2\x96\x81";  // U+2581, the escaped whitespace

std::string_view as_view(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The length of the UTF-8 character `lead` starts (util.h OneCharLen).
inline std::size_t one_char_len(char lead) {
  return static_cast<std::size_t>("\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[(static_cast<unsigned char>(lead)) >> 4]);
}

inline bool trail(char c) { return static_cast<signed char>(c) < -0x40; }
inline bool valid_codepoint(std::uint32_t c) { return c < 0xD800 || (c >= 0xE000 && c <= 0x10FFFF); }

// util.cc DecodeUTF8 + IsValidDecodeUTF8: the length of the well-formed
// character at the front of `s`, or 0 where it is malformed (a literal
// U+FFFD counts as well-formed, as there).
std::size_t valid_char_len(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  const std::size_t n = s.size();
  const auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i])); };
  if (n >= 2 && (b0 & 0xE0) == 0xC0) {
    const std::uint32_t cp = ((b0 & 0x1F) << 6) | (b(1) & 0x3F);
    return trail(s[1]) && cp >= 0x80 && valid_codepoint(cp) ? 2 : 0;
  }
  if (n >= 3 && (b0 & 0xF0) == 0xE0) {
    const std::uint32_t cp = ((b0 & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    return trail(s[1]) && trail(s[2]) && cp >= 0x800 && valid_codepoint(cp) ? 3 : 0;
  }
  if (n >= 4 && (b0 & 0xF8) == 0xF0) {
    const std::uint32_t cp = ((b0 & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    return trail(s[1]) && trail(s[2]) && trail(s[3]) && cp >= 0x10000 && valid_codepoint(cp) ? 4 : 0;
  }
  return 0;
}

// darts-clone's unit, as the normalizer's double array stores it.
inline bool has_leaf(std::uint32_t u) { return ((u >> 8) & 1) == 1; }
inline std::uint32_t leaf_value(std::uint32_t u) { return u & ((1U << 31) - 1); }
inline std::uint32_t label(std::uint32_t u) { return u & ((1U << 31) | 0xFF); }
inline std::uint32_t offset(std::uint32_t u) { return (u >> 10) << ((u & (1U << 9)) >> 6); }

struct Scratch {
  std::string normalized;
  struct Best {
    std::int32_t id;
    float score;
    std::int32_t starts_at;
  };
  std::vector<Best> best;
  void release() {
    std::string().swap(normalized);
    std::vector<Best>().swap(best);
  }
};

// Scratch above this (normalized bytes; the path array is 12 bytes a byte)
// is given back after the text that needed it.
constexpr std::size_t kKeptScratch = std::size_t{16} << 20;

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace

std::unique_ptr<UnigramEncoder> UnigramEncoder::from_model(std::string_view model, std::string* why) {
  auto e = std::unique_ptr<UnigramEncoder>(new UnigramEncoder());
  // The library's trie holds NORMAL, USER_DEFINED and UNUSED pieces; an
  // UNUSED one is walked through but never ends a path (id -1 here).
  std::vector<std::pair<std::string, std::int32_t>> trie_pieces;
  std::uint64_t model_type = kUnigram;
  std::int32_t unk = -1;
  bool has_user_defined = false, has_nul = false, has_unknown_type = false;
  float min_score = FLT_MAX;
  std::vector<std::pair<std::string, std::int32_t>> byte_pieces;
  std::string charsmap;
  const auto bytes = std::as_bytes(std::span(model.data(), model.size()));
  WireReader top(bytes, "SentencePiece model");
  while (!top.done()) {
    const WireField f = top.next();
    if (f.type == WireType::len && f.number == kPieces) {
      WireReader p = top.nested(top.len("piece"));
      std::string piece;
      float score = 0;
      std::uint64_t type = kNormal;
      while (!p.done()) {
        const WireField g = p.next();
        if (g.type == WireType::len && g.number == kPiece) piece = std::string(as_view(p.len("piece text")));
        else if (g.type == WireType::fixed32 && g.number == kScore) {
          const std::uint32_t bits = p.fixed32("score");
          std::memcpy(&score, &bits, 4);
        } else if (g.type == WireType::varint && g.number == kType) type = p.varint("type");
        else p.skip(g);
      }
      const auto id = static_cast<std::int32_t>(e->scores_.size());
      e->scores_.push_back(score);
      if (piece.find('\0') != std::string::npos) has_nul = true;
      // A type the proto does not define is NORMAL to the library (proto2
      // keeps the default and the number as an unknown field): declined.
      if (type < kNormal || type > kByte) has_unknown_type = true;
      if (type == kNormal) min_score = std::min(min_score, score);
      if (type == kUserDefined) has_user_defined = true;
      if (type == kUnknown) unk = id;
      if (type == kByte) byte_pieces.emplace_back(piece, id);
      if (type == kNormal || type == kUserDefined || type == kUnused)
        trie_pieces.emplace_back(std::move(piece), type == kUnused ? -1 : id);
    } else if (f.type == WireType::len && f.number == kTrainerSpec) {
      WireReader t = top.nested(top.len("trainer_spec"));
      while (!t.done()) {
        const WireField g = t.next();
        if (g.type != WireType::varint) t.skip(g);
        else if (g.number == kModelType) model_type = t.varint("model_type");
        else if (g.number == kWhitespaceAsSuffix) e->whitespace_as_suffix_ = t.varint("treat_whitespace_as_suffix") != 0;
        else if (g.number == kByteFallback) e->byte_fallback_ = t.varint("byte_fallback") != 0;
        else t.skip(g);
      }
    } else if (f.type == WireType::len && f.number == kNormalizerSpec) {
      WireReader n = top.nested(top.len("normalizer_spec"));
      while (!n.done()) {
        const WireField g = n.next();
        if (g.type == WireType::len && g.number == kCharsmap) charsmap = std::string(as_view(n.len("charsmap")));
        else if (g.type != WireType::varint) n.skip(g);
        else if (g.number == kAddDummyPrefix) e->add_dummy_prefix_ = n.varint("add_dummy_prefix") != 0;
        else if (g.number == kRemoveExtraWhitespaces) e->remove_extra_whitespaces_ = n.varint("remove_extra_whitespaces") != 0;
        else if (g.number == kEscapeWhitespaces) e->escape_whitespaces_ = n.varint("escape_whitespaces") != 0;
        else n.skip(g);
      }
    } else {
      top.skip(f);
    }
  }
  const auto decline = [&](const char* reason) {
    *why = reason;
    return nullptr;
  };
  if (model_type != kUnigram) return decline("not a unigram model");
  if (has_user_defined) return decline("user-defined symbols");
  if (has_nul) return decline("a piece holds a NUL byte");
  if (has_unknown_type) return decline("a piece of a type the model format does not define");
  if (unk < 0 || trie_pieces.empty()) return decline("no <unk> or no pieces");
  e->unk_id_ = unk;
  e->unk_score_ = min_score - kUnkPenalty;
  if (e->byte_fallback_) {
    std::fill(std::begin(e->byte_ids_), std::end(e->byte_ids_), -1);
    for (const auto& [piece, id] : byte_pieces) {
      unsigned value = 0;
      int used = 0;
      if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%2X>%n", &value, &used) == 1 && used == 6 && value < 256)
        e->byte_ids_[value] = id;
    }
    if (std::find(std::begin(e->byte_ids_), std::end(e->byte_ids_), -1) != std::end(e->byte_ids_))
      return decline("byte fallback without its 256 byte pieces");
  }
  // <trie size (4 bytes)><darts-clone double array><NUL-terminated replacements> (normalizer.cc)
  if (!charsmap.empty()) {
    std::uint32_t trie_bytes = 0;
    if (charsmap.size() <= 4) return decline("a broken character map");
    std::memcpy(&trie_bytes, charsmap.data(), 4);
    if (trie_bytes > charsmap.size() - 4 || trie_bytes % 4 != 0) return decline("a broken character map");
    e->units_.resize(trie_bytes / 4);
    std::memcpy(e->units_.data(), charsmap.data() + 4, trie_bytes);
    e->replacements_ = charsmap.substr(4 + trie_bytes);
  }
  e->build_trie(trie_pieces);
  return e;
}

// A double array (base + label, check = parent) over the pieces: the same
// matches as the library's darts-clone trie for every text without NUL.
void UnigramEncoder::build_trie(const std::vector<std::pair<std::string, std::int32_t>>& pieces) {
  // A plain trie first: children by label.
  struct Node {
    std::vector<std::pair<std::uint8_t, std::uint32_t>> children;
    std::int32_t id = -1;
  };
  std::vector<Node> nodes(1);
  for (const auto& [piece, id] : pieces) {
    std::uint32_t at = 0;
    for (const char ch : piece) {
      const auto c = static_cast<std::uint8_t>(ch);
      auto& kids = nodes[at].children;
      auto it = std::find_if(kids.begin(), kids.end(), [&](const auto& k) { return k.first == c; });
      if (it == kids.end()) {
        nodes[at].children.emplace_back(c, static_cast<std::uint32_t>(nodes.size()));
        at = static_cast<std::uint32_t>(nodes.size());
        nodes.emplace_back();
      } else {
        at = it->second;
      }
    }
    nodes[at].id = id;
  }
  // Then slots: each node's children at base + label. Candidate bases come
  // from the free slots, in a doubly linked list (slot `head` is its
  // sentinel); after kTries misfits the children go past the end, so
  // building stays linear in the pieces.
  constexpr std::size_t kTries = 256;
  const std::size_t head = 0;  // the root's slot doubles as the list's sentinel
  std::vector<std::size_t> next{head}, prev{head};
  const auto grow = [&](std::size_t size) {
    for (std::size_t i = trie_.size(); i < size; ++i) {
      trie_.emplace_back();
      next.push_back(head);
      prev.push_back(prev[head]);
      next[prev[head]] = i;
      prev[head] = i;
    }
  };
  const auto take = [&](std::size_t i) {
    next[prev[i]] = next[i];
    prev[next[i]] = prev[i];
  };
  trie_.assign(1, Unit{});
  trie_[0].check = 0;  // the root, its own parent
  grow(256);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> queue{{0, 0}};  // (node, slot)
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const auto [node, slot] = queue[q];
    trie_[slot].id = nodes[node].id;
    const auto& kids = nodes[node].children;
    if (kids.empty()) continue;
    const std::uint8_t lowest = std::min_element(kids.begin(), kids.end())->first;
    const auto fits = [&](std::size_t base) {
      if (base + 256 > trie_.size()) grow(base + 256);
      return std::all_of(kids.begin(), kids.end(), [&](const auto& k) { return trie_[base + k.first].check == -1; });
    };
    std::size_t base = 0;
    std::size_t tries = 0;
    for (std::size_t f = next[head]; f != head && tries < kTries; f = next[f], ++tries)
      if (f > lowest && fits(f - lowest)) {
        base = f - lowest;
        break;
      }
    if (base == 0) {
      base = trie_.size();
      grow(base + 256);
    }
    trie_[slot].base = static_cast<std::int32_t>(base);
    for (const auto& [c, child] : kids) {
      trie_[base + c].check = static_cast<std::int32_t>(slot);
      take(base + c);
      queue.emplace_back(child, static_cast<std::uint32_t>(base + c));
    }
  }
}

// normalizer.cc NormalizePrefix: the replacement of the longest rule
// matching the front of `input` and the bytes it consumes; else the
// character itself, or U+FFFD for one malformed byte.
std::pair<std::string_view, std::size_t> UnigramEncoder::normalize_prefix(std::string_view input) const {
  std::size_t longest = 0;
  std::uint32_t value = 0;
  if (!units_.empty()) {  // darts-clone commonPrefixSearch, bounds checked
    const std::size_t unit_count = units_.size();
    std::size_t node = offset(units_[0]);
    for (std::size_t i = 0; i < input.size(); ++i) {
      const auto c = static_cast<unsigned char>(input[i]);
      node ^= c;
      if (node >= unit_count) break;
      const std::uint32_t unit = units_[node];
      if (label(unit) != c) break;
      node ^= offset(unit);
      if (has_leaf(unit)) {
        if (node >= unit_count) break;
        longest = i + 1;
        value = leaf_value(units_[node]);
      }
    }
  }
  if (longest > 0) {
    if (value >= replacements_.size()) return {{}, longest};
    const std::string_view rest = std::string_view(replacements_).substr(value);
    return {rest.substr(0, rest.find('\0')), longest};
  }
  const std::size_t n = valid_char_len(input);
  if (n == 0) return {"\xEF\xBF\xBD", 1};
  return {input.substr(0, n), n};
}

// normalizer.cc Normalize, without the offsets back into the input.
void UnigramEncoder::normalize(std::string_view input, std::string& out) const {
  out.clear();
  if (input.empty()) return;
  if (remove_extra_whitespaces_) {
    while (!input.empty()) {
      const auto [text, consumed] = normalize_prefix(input);
      if (text != " ") break;
      input.remove_prefix(consumed);
    }
  }
  if (input.empty()) return;
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : " ";
  if (!whitespace_as_suffix_ && add_dummy_prefix_) out += space;
  bool prev_space = remove_extra_whitespaces_;
  while (!input.empty()) {
    auto [text, consumed] = normalize_prefix(input);
    while (prev_space && !text.empty() && text.front() == ' ') text.remove_prefix(1);
    if (!text.empty()) {
      for (const char c : text) {
        if (escape_whitespaces_ && c == ' ') out += kSpaceSymbol;
        else out += c;
      }
      prev_space = text.back() == ' ';
    }
    input.remove_prefix(consumed);
    if (!remove_extra_whitespaces_) prev_space = false;
  }
  if (remove_extra_whitespaces_)
    while (out.ends_with(space)) out.resize(out.size() - space.size());
  if (whitespace_as_suffix_ && add_dummy_prefix_) out += space;
}

// unigram_model.cc EncodeOptimized and sentencepiece_processor.cc
// PopulateSentencePieceText's ids.
bool UnigramEncoder::encode(std::string_view text, std::vector<std::int32_t>* ids) const {
  ids->clear();
  // NUL: see the header. Positions are ints, as in the library: a text
  // whose normalized form could pass them goes to it.
  if (text.size() > (std::size_t{1} << 29) || text.find('\0') != std::string_view::npos) return false;
  Scratch& s = scratch();
  normalize(text, s.normalized);
  if (s.normalized.size() >= static_cast<std::size_t>(INT32_MAX)) {
    s.release();
    return false;
  }
  const std::string_view normalized = s.normalized;
  const auto size = static_cast<std::int32_t>(normalized.size());
  if (size == 0) return true;
  s.best.assign(normalized.size() + 1, {-1, 0.0f, -1});
  Scratch::Best* best = s.best.data();
  const Unit* trie = trie_.data();
  const auto slots = static_cast<std::int32_t>(trie_.size());
  for (std::int32_t starts_at = 0; starts_at < size;) {
    const float here = best[starts_at].score;
    bool has_single_node = false;
    const auto mblen = std::min(static_cast<std::int32_t>(one_char_len(normalized[starts_at])), size - starts_at);
    std::int32_t slot = 0;
    for (std::int32_t key_pos = starts_at; key_pos < size;) {
      const std::int32_t next = trie[slot].base + static_cast<unsigned char>(normalized[key_pos]);
      if (trie[slot].base == 0 || next >= slots || trie[next].check != slot) break;
      slot = next;
      ++key_pos;
      const std::int32_t id = trie[slot].id;
      if (id < 0) continue;
      // The library adds a float score to a float path as doubles (its
      // score is a double for user-defined pieces), compares in double and
      // keeps a float.
      Scratch::Best& target = best[key_pos];
      const double candidate = static_cast<double>(scores_[static_cast<std::size_t>(id)]) + here;
      if (target.starts_at == -1 || candidate > target.score) {
        target.score = static_cast<float>(candidate);
        target.starts_at = starts_at;
        target.id = id;
      }
      if (!has_single_node && key_pos - starts_at == mblen) has_single_node = true;
    }
    if (!has_single_node) {
      Scratch::Best& target = best[starts_at + mblen];
      const float candidate = unk_score_ + here;
      if (target.starts_at == -1 || candidate > target.score) {
        target.score = candidate;
        target.starts_at = starts_at;
        target.id = unk_id_;
      }
    }
    starts_at += mblen;
  }
  // Back from the end, then reversed; unknown pieces become their bytes'
  // pieces (byte fallback) or merge with an unknown neighbour.
  std::int32_t ends_at = size;
  while (ends_at > 0) {
    const Scratch::Best& node = best[ends_at];
    if (node.starts_at < 0) return false;  // unreachable for normalized UTF-8; the library decides
    if (node.id == unk_id_ && byte_fallback_) {
      for (std::int32_t i = ends_at - 1; i >= node.starts_at; --i)
        ids->push_back(byte_ids_[static_cast<unsigned char>(normalized[static_cast<std::size_t>(i)])]);
    } else if (node.id != unk_id_ || ids->empty() || ids->back() != unk_id_) {
      ids->push_back(node.id);
    }
    ends_at = node.starts_at;
  }
  std::reverse(ids->begin(), ids->end());
  if (s.normalized.capacity() > kKeptScratch) s.release();  // a huge text's buffers are not kept
  return true;
}

}  // namespace sluice::text::detail
