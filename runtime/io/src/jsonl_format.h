// Internal: one JSON line parsed into a Sample's fields (see sluice/io/jsonl.h
// for what the fields are).
//
// The parser validates the whole line (RFC 8259 grammar, strings without raw
// control characters, \u escapes with paired surrogates, nesting up to 256)
// without building a tree: it records the top-level members' key and value
// spans, and unescapes a string only when it holds a backslash, into
// Sample::storage (reserved to the line's size first, so spans into it stay
// valid: an unescaped string is never longer than its escaped form).
//
// Thread safety: reentrant.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/io/sample.h"

namespace sluice::io::detail {

// Parses `line` (one JSON object) and appends to out.fields: the value at
// `path` (keys, outermost first; `name` is the field's name), then every
// top-level member. Throws sluice::Error with the reason and the column
// ("column 17: expected ':'"), without the file and line, which the caller adds.
// `text`: the value at `path` must be a string.
void parse_jsonl_line(std::span<const std::byte> line, std::string_view name,
                      const std::vector<std::string>& path, Sample& out, bool text = false);

}  // namespace sluice::io::detail
