#include "contact_sheet.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "field_values.h"
#include "sluice/ops/encode.h"
#include "sluice/ops/image.h"

namespace sluice::cli {
namespace {

constexpr int kGap = 2;                 // pixels between tiles
constexpr std::uint8_t kBackground = 40;  // dark gray around the tiles

bool channel_count(std::int64_t c) { return c == 1 || c == 3; }

}  // namespace

std::optional<ImageLayout> image_layout(const FieldView& field) {
  if (field.shape.size() != 4) return std::nullopt;  // [batch, a, b, c]
  const std::int64_t a = field.shape[1], b = field.shape[2], c = field.shape[3];
  constexpr std::int64_t kMaxSide = 1 << 14;
  auto fits = [&](std::int64_t h, std::int64_t w) { return h > 0 && w > 0 && h <= kMaxSide && w <= kMaxSide; };
  if (channel_count(c) && fits(a, b)) return ImageLayout{static_cast<int>(a), static_cast<int>(b), static_cast<int>(c), false};
  if (channel_count(a) && fits(b, c)) return ImageLayout{static_cast<int>(b), static_cast<int>(c), static_cast<int>(a), true};
  return std::nullopt;
}

void ContactSheet::add(const FieldView& field) {
  const std::size_t pixels = static_cast<std::size_t>(layout_.height) * static_cast<std::size_t>(layout_.width);
  const std::size_t per_sample = pixels * static_cast<std::size_t>(layout_.channels);
  const std::size_t samples = field.shape.empty() ? 0 : static_cast<std::size_t>(field.shape[0]);
  for (std::size_t s = 0; s < samples && tiles_.size() < kMaxTiles; ++s) {
    std::vector<float>& tile = tiles_.emplace_back(per_sample);
    const std::size_t base = s * per_sample;
    for (std::size_t p = 0; p < pixels; ++p) {
      for (int c = 0; c < layout_.channels; ++c) {
        const std::size_t from = layout_.chw ? static_cast<std::size_t>(c) * pixels + p
                                             : p * static_cast<std::size_t>(layout_.channels) + static_cast<std::size_t>(c);
        tile[p * static_cast<std::size_t>(layout_.channels) + static_cast<std::size_t>(c)] =
            static_cast<float>(element(field, base + from));
      }
    }
  }
}

std::string ContactSheet::write(const std::string& path) const {
  const int n = static_cast<int>(tiles_.size());
  const int columns = std::max(1, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n)))));
  const int rows = std::max(1, (n + columns - 1) / columns);
  const int width = columns * layout_.width + (columns + 1) * kGap;
  const int height = rows * layout_.height + (rows + 1) * kGap;
  const int channels = layout_.channels;

  // uint8 as it is; anything else from the sheet's [min, max] to [0, 255].
  float low = 0, high = 255;
  const bool scaled = dtype_ != DType::u8;
  if (scaled) {
    low = high = tiles_.empty() || tiles_[0].empty() ? 0.0f : tiles_[0][0];
    for (const auto& tile : tiles_) {
      for (float v : tile) {
        if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v);
      }
    }
  }
  const float scale = high > low ? 255.0f / (high - low) : 0.0f;

  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) *
                                       static_cast<std::size_t>(channels),
                                   kBackground);
  for (int t = 0; t < n; ++t) {
    const int x0 = kGap + (t % columns) * (layout_.width + kGap);
    const int y0 = kGap + (t / columns) * (layout_.height + kGap);
    const std::vector<float>& tile = tiles_[static_cast<std::size_t>(t)];
    for (int y = 0; y < layout_.height; ++y) {
      for (int x = 0; x < layout_.width; ++x) {
        for (int c = 0; c < channels; ++c) {
          const float v = tile[(static_cast<std::size_t>(y) * static_cast<std::size_t>(layout_.width) +
                                static_cast<std::size_t>(x)) * static_cast<std::size_t>(channels) +
                               static_cast<std::size_t>(c)];
          const float shown = scaled ? (v - low) * scale : v;
          const float clamped = std::isfinite(shown) ? std::clamp(shown, 0.0f, 255.0f) : 0.0f;
          pixels[(static_cast<std::size_t>(y0 + y) * static_cast<std::size_t>(width) +
                  static_cast<std::size_t>(x0 + x)) * static_cast<std::size_t>(channels) +
                 static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(std::lround(clamped));
        }
      }
    }
  }
  ops::write_png(path, ops::packed_image(pixels.data(), height, width, channels));

  char text[200];
  std::snprintf(text, sizeof text, "%d columns x %d rows of %d x %d tiles (%d samples), %s", columns, rows, layout_.width,
                layout_.height, n, layout_.chw ? "CHW" : "HWC");
  std::string described = text;
  if (scaled) {
    std::snprintf(text, sizeof text, ", %s scaled from [%.4g, %.4g] to [0, 255]",
                  std::string(dtype_name(dtype_)).c_str(), static_cast<double>(low), static_cast<double>(high));
    described += text;
  }
  return described;
}

}  // namespace sluice::cli
