#include "sluice/text/tokenizer.h"

#include "sluice/error.h"

#if SLUICE_WITH_SENTENCEPIECE
#include <sentencepiece_processor.h>

#include "unigram_encoder.h"

namespace sluice::text {

struct SentencePiece::Impl {
  sentencepiece::SentencePieceProcessor processor;
  std::unique_ptr<detail::UnigramEncoder> unigram;  // null: the library encodes every text
  std::string encoder;

  void library_encode(std::string_view text, std::vector<std::int32_t>* ids) const {
    ids->clear();
    std::vector<int> out;
    // Encode fails only on an unloaded model; open() guarantees a loaded one.
    (void)processor.Encode(absl::string_view(text.data(), text.size()), &out);
    ids->assign(out.begin(), out.end());
  }
};

namespace {

// Texts every model is encoded both ways on at load: whitespace runs at the
// ends and inside, tabs and newlines, full-width and compatibility forms the
// character maps rewrite, combining marks, scripts a small vocabulary lacks
// (unknown pieces, bytes), malformed UTF-8 and a literal U+FFFD, digits.
constexpr std::string_view kProbes[] = {
    "",
    " ",
    "Hello, world.",
    "   leading and trailing   ",
    "inner    runs\tof\t\twhite\nspace\r\n",
    "\xef\xbc\xa6\xef\xbd\x95\xef\xbd\x8c\xef\xbd\x8c\xe3\x80\x80width \xe2\x91\xa0\xe2\x91\xa1 \xef\xac\x81 \xc2\xbd \xe2\x84\xa2",
    "e\xcc\x81 n\xcc\x83 Gr\xc3\xbc\xc3\x9f" "e caf\xc3\xa9",
    "\xe6\x9d\xb1\xe4\xba\xac\xe3\x81\xae\xe5\xa4\x9c \xd0\x9c\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0 \xf0\x9f\x99\x82\xf0\x9f\x99\x82",
    "bad \xff\xfe bytes \xc3 cut \xe2\x82 and \xef\xbf\xbd",
    "0123456789 3.14159 1,000,000",
    "\x01\x02\x7f control \xc2\xa0nbsp\xe2\x80\x8bzero-width",
};

}  // namespace

SentencePiece::~SentencePiece() = default;

std::shared_ptr<const SentencePiece> SentencePiece::open(const std::string& model_path, bool library_only) {
  std::shared_ptr<SentencePiece> model(new SentencePiece());
  model->impl_ = std::make_unique<Impl>();
  model->path_ = model_path;
  Impl& impl = *model->impl_;
  const auto status = impl.processor.Load(model_path);
  if (!status.ok()) throw Error(model_path + ": cannot load the SentencePiece model: " + status.ToString());
  impl.encoder = "libsentencepiece";
  if (library_only) return model;
  std::string why;
  const auto proto = impl.processor.serialized_model_proto();
  impl.unigram = detail::UnigramEncoder::from_model(proto, &why);
  if (!impl.unigram) {
    impl.encoder += " (" + why + ")";
    return model;
  }
  std::vector<std::int32_t> ours, theirs;
  for (const std::string_view probe : kProbes) {
    impl.library_encode(probe, &theirs);
    if (!impl.unigram->encode(probe, &ours) || ours != theirs) {
      impl.unigram.reset();
      impl.encoder += " (Sluice's unigram encoder differs from this libsentencepiece on a probe text)";
      return model;
    }
  }
  impl.encoder = "sluice unigram";
  return model;
}

void SentencePiece::encode(std::string_view text, std::vector<std::int32_t>* ids) const {
  if (impl_->unigram && impl_->unigram->encode(text, ids)) return;
  impl_->library_encode(text, ids);
}

const std::string& SentencePiece::encoder() const { return impl_->encoder; }

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

std::shared_ptr<const SentencePiece> SentencePiece::open(const std::string& model_path, bool) {
  throw Error(model_path + ": this Sluice is built without SentencePiece (configured with "
              "-DSLUICE_SENTENCEPIECE=OFF; the default links Debian's libsentencepiece); tokenize into a token file first (docs/pretraining.md)");
}

void SentencePiece::encode(std::string_view, std::vector<std::int32_t>*) const {}
const std::string& SentencePiece::encoder() const { return path_; }
std::uint32_t SentencePiece::vocab_size() const { return 0; }
std::int32_t SentencePiece::eos_id() const { return -1; }
std::int32_t SentencePiece::bos_id() const { return -1; }
std::int32_t SentencePiece::pad_id() const { return -1; }
std::int32_t SentencePiece::unk_id() const { return -1; }

}  // namespace sluice::text

#endif
