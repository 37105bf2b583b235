// Internal: the little XML that S3 answers with (ListObjectsV2 results and
// error documents), read by tag name. Not a general XML parser: elements are
// found by name, in order, and their text has the five predefined entities
// and numeric character references decoded.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sluice::remote::detail {

// The decoded text of the first <tag>...</tag> in `xml`, or "" when absent.
std::string xml_text(std::string_view xml, std::string_view tag);

// The raw inner XML of every <tag>...</tag> in `xml`, in order.
std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag);

// `&amp;` and friends decoded.
std::string xml_decode(std::string_view text);

}  // namespace sluice::remote::detail
