#include "sluice/text/tokenizer.h"

#include "sluice/error.h"

#if SLUICE_WITH_SENTENCEPIECE
#include <sentencepiece_processor.h>

namespace sluice::text {

struct SentencePiece::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

SentencePiece::~SentencePiece() = default;

std::shared_ptr<const SentencePiece> SentencePiece::open(const std::string& model_path) {
  std::shared_ptr<SentencePiece> model(new SentencePiece());
  model->impl_ = std::make_unique<Impl>();
  model->path_ = model_path;
  const auto status = model->impl_->processor.Load(model_path);
  if (!status.ok()) throw Error(model_path + ": cannot load the SentencePiece model: " + status.ToString());
  return model;
}

void SentencePiece::encode(std::string_view text, std::vector<std::int32_t>* ids) const {
  ids->clear();
  std::vector<int> out;
  // Encode fails only on an unloaded model; open() guarantees a loaded one.
  (void)impl_->processor.Encode(absl::string_view(text.data(), text.size()), &out);
  ids->assign(out.begin(), out.end());
}

std::uint32_t SentencePiece::vocab_size() const { return static_cast<std::uint32_t>(impl_->processor.GetPieceSize()); }
std::int32_t SentencePiece::eos_id() const { return impl_->processor.eos_id(); }
std::int32_t SentencePiece::bos_id() const { return impl_->processor.bos_id(); }
std::int32_t SentencePiece::pad_id() const { return impl_->processor.pad_id(); }
std::int32_t SentencePiece::unk_id() const { return impl_->processor.unk_id(); }

}  // namespace sluice::text

#else  // built without SentencePiece (runtime/text/CMakeLists.txt says why)

namespace sluice::text {

struct SentencePiece::Impl {};

SentencePiece::~SentencePiece() = default;

std::shared_ptr<const SentencePiece> SentencePiece::open(const std::string& model_path) {
  throw Error(model_path + ": this Sluice is built without SentencePiece (configured with "
              "-DSLUICE_SENTENCEPIECE=OFF; the default links Debian's libsentencepiece); tokenize into a token file first (docs/pretraining.md)");
}

void SentencePiece::encode(std::string_view, std::vector<std::int32_t>*) const {}
std::uint32_t SentencePiece::vocab_size() const { return 0; }
std::int32_t SentencePiece::eos_id() const { return -1; }
std::int32_t SentencePiece::bos_id() const { return -1; }
std::int32_t SentencePiece::pad_id() const { return -1; }
std::int32_t SentencePiece::unk_id() const { return -1; }

}  // namespace sluice::text

#endif
